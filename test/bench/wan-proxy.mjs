// The WAN section's network: a TCP proxy on 127.0.0.1 that holds every chunk a fixed time in
// each direction (20 ms each way: a 40 ms round trip, a service one region away), in front of
// the reference service's HTTP port — its API, its paid resources and its Solana RPC
// (/solana) — and of any other upstream it is given (the EVM ledger's RPC). Each direction is
// one queue in arrival order with one timer, so chunks are never reordered (a setTimeout per
// chunk could fire out of order). It reads the HTTP/1.1 requests on the client→server stream
// as they pass and records each one (when its head arrived, method, path, and the JSON-RPC
// method of an RPC request, told by its body), so a bench can count what crosses per call. It
// listens on one port per "lane" (one per client under test) and upstream, counted per lane,
// so one client's background traffic is never charged to the other. A new connection costs
// no round trip here (no handshake is simulated): the lanes count connections instead.
import { createServer, connect } from "node:net";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

/**
 * Starts the proxy on a thread of its own, so the clients' work in the bench's process (the
 * stock client signs on the main thread) never holds a chunk back. `upstreamPorts` are the
 * loopback ports it fronts (`upstreamPort`: one); `lanes` names the clients, each of which
 * gets its own port per upstream. Returns `{ lanes: {name: {ports, requests, connections,
 * connectionsTo}},
 * url(name, upstreamUrl), appliedDelays(), close() }`; `ports` maps an upstream port to the
 * lane's, `connectionsTo` an upstream port to the connections made to it; `requests` is `[{at, method, path, rpc?}]` in arrival order, the lane's upstreams
 * together; `appliedDelays()` resolves to the one-way delay each chunk actually got (ms),
 * for the report.
 */
export async function startWanProxy({ upstreamPort, upstreamPorts = [upstreamPort], oneWayMs, lanes: names }) {
  const options = { upstreamPorts, oneWayMs, lanes: names };
  const worker = new Worker(new URL(import.meta.url), { workerData: { wanProxy: options } });
  const lanes = {};
  const replies = [];
  await new Promise((resolve, reject) => {
    worker.on("error", (e) => {
      process.stderr.write(`WAN proxy failed: ${e.stack ?? e}\n`);
      reject(e);
    });
    worker.on("message", (m) => {
      if (m.type === "ready") {
        for (const [name, ports] of Object.entries(m.ports))
          lanes[name] = { ports, requests: [], connections: 0, connectionsTo: {} };
        resolve();
      } else if (m.type === "request") lanes[m.lane].requests.push(m.request);
      else if (m.type === "connection") {
        const lane = lanes[m.lane];
        lane.connections++;
        lane.connectionsTo[m.upstreamPort] = (lane.connectionsTo[m.upstreamPort] ?? 0) + 1;
      } else if (m.type === "delays") replies.shift()(m.delays);
    });
  });
  return {
    lanes,
    /** The upstream URL as the lane's client must see it: same path, the lane's port for that upstream. */
    url: (name, upstreamUrl) => {
      const u = new URL(upstreamUrl);
      const port = lanes[name].ports[u.port];
      if (port === undefined) throw new Error(`the WAN proxy does not front ${u.origin}`);
      u.port = String(port);
      return u.toString().replace(/\/$/, "");
    },
    appliedDelays: () =>
      new Promise((resolve) => {
        replies.push(resolve);
        worker.postMessage("delays");
      }),
    close: () => worker.terminate(),
  };
}

if (!isMainThread && workerData?.wanProxy) {
  const delays = [];
  const ports = await listen(workerData.wanProxy, delays, (m) => parentPort.postMessage(m));
  parentPort.on("message", (m) => {
    if (m === "delays") parentPort.postMessage({ type: "delays", delays });
  });
  parentPort.postMessage({ type: "ready", ports });
}

/** The proxy itself, in the worker: one listening port per lane and upstream, each event posted. */
async function listen({ upstreamPorts, oneWayMs, lanes }, delays, post) {
  const ports = {};
  for (const lane of lanes) {
    ports[lane] = {};
    for (const upstreamPort of upstreamPorts)
      ports[lane][upstreamPort] = await listenOne(lane, upstreamPort, oneWayMs, delays, post);
  }
  return ports;
}

/** One lane's port in front of one upstream. */
async function listenOne(lane, upstreamPort, oneWayMs, delays, post) {
  const server = createServer({ noDelay: true }, (client) => {
    post({ type: "connection", lane, upstreamPort });
    const upstream = connect({ port: upstreamPort, host: "127.0.0.1", noDelay: true });
    for (const s of [client, upstream])
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    const reader = requestReader((request) => post({ type: "request", lane, request }));
    delayedPipe(client, upstream, oneWayMs, delays, reader);
    delayedPipe(upstream, client, oneWayMs, delays);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server.address().port;
}

/**
 * Copies `src` to `dst`, each chunk (and the end of the stream) `oneWayMs` after it arrived,
 * in arrival order: one FIFO queue and at most one timer, armed for the head of the queue.
 */
function delayedPipe(src, dst, oneWayMs, delays, onChunk) {
  const queue = [];
  let timer;
  const arm = () => {
    if (timer !== undefined || queue.length === 0) return;
    timer = setTimeout(flush, Math.max(0, queue[0].due - performance.now()));
  };
  const flush = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0].due <= now) {
      const item = queue.shift();
      if (item.chunk === undefined) dst.end();
      else if (!dst.destroyed) {
        delays.push(now - item.arrived);
        dst.write(item.chunk);
      }
    }
    arm();
  };
  const push = (chunk) => {
    const arrived = performance.now();
    queue.push({ arrived, due: arrived + oneWayMs, chunk });
    arm();
  };
  src.on("data", (chunk) => {
    onChunk?.(chunk);
    push(chunk);
  });
  src.on("end", () => push(undefined));
  src.on("close", () => {
    // A stream torn down (not ended) takes its queue with it, as a reset connection would.
    if (!src.readableEnded) {
      clearTimeout(timer);
      dst.destroy();
    }
  });
}

/**
 * An HTTP/1.1 request reader over one connection's client→server bytes: the request line and
 * headers, then the body by Content-Length or chunked encoding, request after request on a
 * kept-alive connection. Calls `record({at, method, path, rpc?})` once per request, when it has
 * passed whole; `at` (ms since the epoch, comparable across threads) is when its head had
 * arrived; `rpc` is the JSON-RPC method(s) of a request whose body is JSON-RPC (a POST to
 * /solana, or to an EVM node's /).
 */
function requestReader(record) {
  let buf = Buffer.alloc(0);
  let state = "head";
  let current;
  let remaining = 0;
  let body = [];
  const finish = () => {
    const rpc = rpcMethods(Buffer.concat(body));
    if (rpc !== undefined) current.rpc = rpc;
    record(current);
    current = undefined;
    body = [];
    state = "head";
  };
  const step = () => {
    if (state === "head") {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return false;
      const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
      buf = buf.subarray(end + 4);
      const [method, target] = lines[0].split(" ");
      current = { at: performance.timeOrigin + performance.now(), method, path: target.split("?")[0] };
      const header = (name) =>
        lines
          .find((l) => l.toLowerCase().startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      if (/chunked/i.test(header("transfer-encoding") ?? "")) state = "chunk-size";
      else {
        remaining = Number(header("content-length") ?? 0);
        state = "body";
        if (remaining === 0) finish();
      }
      return true;
    }
    if (state === "body") {
      const take = Math.min(remaining, buf.length);
      body.push(buf.subarray(0, take));
      buf = buf.subarray(take);
      remaining -= take;
      if (remaining > 0) return false;
      finish();
      return true;
    }
    if (state === "chunk-size" || state === "chunk-end" || state === "trailer") {
      const eol = buf.indexOf("\r\n");
      if (eol < 0) return false;
      const line = buf.subarray(0, eol).toString("latin1");
      buf = buf.subarray(eol + 2);
      if (state === "chunk-end") state = "chunk-size";
      else if (state === "trailer") {
        if (line === "") finish();
      } else {
        remaining = parseInt(line, 16);
        state = remaining === 0 ? "trailer" : "chunk";
      }
      return true;
    }
    // state === "chunk"
    const take = Math.min(remaining, buf.length);
    body.push(buf.subarray(0, take));
    buf = buf.subarray(take);
    remaining -= take;
    if (remaining > 0) return false;
    state = "chunk-end";
    return true;
  };
  return (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length > 0 && step());
  };
}

/** The JSON-RPC method(s) a request body calls ("getLatestBlockhash", "eth_call+eth_blockNumber"); undefined for any other body. */
function rpcMethods(bytes) {
  if (bytes.length === 0) return undefined;
  let msg;
  try {
    msg = JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  const calls = Array.isArray(msg) ? msg : [msg];
  if (calls.length === 0 || !calls.every((m) => m !== null && typeof m === "object" && m.jsonrpc === "2.0"))
    return undefined;
  return calls.map((m) => m.method ?? "?").join("+");
}
