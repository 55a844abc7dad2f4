// `npm run bench`, the WAN section: a paid call through the MCP server over stdio against the
// stock x402 client (`@x402/fetch` + `@x402/svm`), both paying the reference service through
// a proxy that adds 20 ms each way (wan-proxy.mjs) in front of its API and its Solana RPC —
// a service one region away. The MCP server runs as a real service configuration
// (PAID_ACTIONS_BASE_URL / SOLANA_RPC_URL through the proxy, not sandbox mode). The two are
// alternated in rounds so a drift in the machine's load hits both alike. Counts the HTTP
// requests each sends per paid call, by kind, on the service and on the RPC: on the hot path
// (inside the call) and in the background (the MCP server's reconciler, after the call).
import { join } from "node:path";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import {
  INPUT,
  log,
  loadWallet,
  mcpClient,
  N_WAN,
  serviceEnv,
  sleep,
  stats,
  timed,
  WAN_ONE_WAY_MS,
  WAN_ROUNDS,
  work,
} from "./common.mjs";
import { startWanProxy } from "./wan-proxy.mjs";

/** Long enough for the reconciler's work after a call (it verifies about 1 s later). */
const SETTLE_MS = 3000;
/** Isolated MCP calls, each alone on the wire, for its hot-path requests. */
const PROBE_CALLS = 3;
const WARM_UP = 5;

export async function wanCalls(svc) {
  log(
    `1b. WAN: MCP vs stock x402 client through a ${2 * WAN_ONE_WAY_MS} ms round trip, ${N_WAN} paid calls each in ${WAN_ROUNDS} rounds…`,
  );
  const upstreamPort = Number(new URL(svc.info.baseUrl).port);
  const proxy = await startWanProxy({ upstreamPort, oneWayMs: WAN_ONE_WAY_MS, lanes: ["mcp", "peer"] });
  try {
    const mcp = await mcpSide(svc, proxy);
    const peer = await peerSide(svc, proxy);
    for (let i = 0; i < WARM_UP; i++) await mcp.once();
    for (let i = 0; i < WARM_UP; i++) await peer.once();
    await sleep(SETTLE_MS);
    const marks = { mcp: mark(proxy.lanes.mcp), peer: mark(proxy.lanes.peer) };
    const samples = { mcp: [], peer: [] };
    const perRound = Math.ceil(N_WAN / WAN_ROUNDS);
    for (let r = 0; r < WAN_ROUNDS; r++) {
      // Who goes first alternates too: neither always follows the other's background work.
      const order = r % 2 === 0 ? ["mcp", "peer"] : ["peer", "mcp"];
      for (const side of order) {
        const run = side === "mcp" ? mcp : peer;
        for (let i = 0; i < perRound; i++) await run.sample(samples[side]);
      }
    }
    await sleep(SETTLE_MS);
    const traffic = {
      mcp: perCall(proxy.lanes.mcp, marks.mcp, samples.mcp.length),
      peer: perCall(proxy.lanes.peer, marks.peer, samples.peer.length),
    };
    const mcpHot = await probe(mcp, proxy.lanes.mcp);
    await mcp.close();
    return {
      oneWayMs: WAN_ONE_WAY_MS,
      appliedOneWayMs: stats(await proxy.appliedDelays()),
      rounds: WAN_ROUNDS,
      mcp: {
        ...stats(samples.mcp),
        hotPath: mcpHot,
        background: minus(traffic.mcp, mcpHot),
        all: traffic.mcp,
      },
      // Nothing else speaks on the peer's lane, and it has no background work: all it sends
      // is its hot path.
      peer: {
        ...stats(samples.peer),
        hotPath: traffic.peer,
        background: minus(traffic.peer, traffic.peer),
        all: traffic.peer,
      },
    };
  } finally {
    await proxy.close();
  }
}

/** The MCP server over stdio, configured for a real service: the proxy's mcp lane. */
async function mcpSide(svc, proxy) {
  const info = {
    ...svc.info,
    baseUrl: proxy.url("mcp", svc.info.baseUrl),
    rpcUrl: proxy.url("mcp", svc.info.rpcUrl),
  };
  const { client } = await mcpClient(serviceEnv(info, join(work, "wan-home")));
  await client.listTools();
  const once = async () => {
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
  };
  return {
    once,
    // No retry here: the engine re-signs a proof whose blockhash expired by itself, in the call.
    sample: async (samples) => {
      const t0 = performance.now();
      await once();
      samples.push(performance.now() - t0);
    },
    close: () => client.close(),
  };
}

/** The stock x402 client paying POST /executions (402, pay, retry) on the proxy's peer lane. */
async function peerSide(svc, proxy) {
  const wallet = await loadWallet(svc.info.walletPath);
  const peerClient = new x402Client();
  peerClient.register("solana:*", new ExactSvmScheme(wallet, { rpcUrl: proxy.url("peer", svc.info.rpcUrl) }));
  const paidFetch = wrapFetchWithPayment(fetch, peerClient);
  const url = `${proxy.url("peer", svc.info.baseUrl)}/executions`;
  const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
  let k = 0;
  const once = async () => {
    const res = await paidFetch(url, {
      method: "POST",
      headers: { ...headers, "idempotency-key": `wan-peer-${process.pid}-${k++}` },
      body: JSON.stringify({ action: "servers.provision", input: INPUT }),
    });
    if (res.status !== 201) throw new Error(`peer ${res.status}: ${await res.text()}`);
    await res.text();
  };
  // A proof signed just before the ledger's blockhash moved on is refused: signed again, as
  // paid-call.mjs does, timing only the attempt that paid (see timed() in common.mjs).
  return { once: () => timed(once), sample: (samples) => timed(once, samples) };
}

/**
 * The hot path of an MCP paid call: PROBE_CALLS calls, each after a quiet wait and followed
 * by one, counting only the requests that arrive while the call is in flight.
 */
async function probe(mcp, lane) {
  const inCall = [];
  for (let i = 0; i < PROBE_CALLS; i++) {
    await sleep(SETTLE_MS);
    const from = lane.requests.length;
    await mcp.once();
    inCall.push(...lane.requests.slice(from));
  }
  await sleep(SETTLE_MS);
  return tally(inCall, PROBE_CALLS);
}

/** A path segment that names one record ("exe_ApTcAIhoNoauYRqq", "q_01HX…"), not a route. */
const ID_SEGMENT = /\/(?:[a-z]+_[A-Za-z0-9_-]{8,}|(?=[^/]*[0-9])[^/]{8,})(?=\/|$)/g;

const mark = (lane) => ({ requests: lane.requests.length, connections: lane.connections });

/** Everything a lane carried since `since`, per call: requests by kind, new connections. */
function perCall(lane, since, calls) {
  return {
    ...tally(lane.requests.slice(since.requests), calls),
    connections: (lane.connections - since.connections) / calls,
  };
}

/** Requests per call on the service and on the RPC, each by kind ("POST /v1/quotes", "getLatestBlockhash"). */
function tally(requests, calls) {
  const out = { service: 0, rpc: 0, kinds: {} };
  for (const r of requests) {
    const kind = r.rpc ?? `${r.method} ${r.path.replace(ID_SEGMENT, "/:id")}`;
    out[r.rpc === undefined ? "service" : "rpc"] += 1 / calls;
    out.kinds[kind] = (out.kinds[kind] ?? 0) + 1 / calls;
  }
  return out;
}

/** What a lane carried per call beyond the hot path: the background work a call leaves behind. */
function minus(all, hot) {
  const out = { service: all.service - hot.service, rpc: all.rpc - hot.rpc, kinds: {} };
  for (const [kind, n] of Object.entries(all.kinds)) {
    const rest = n - (hot.kinds[kind] ?? 0);
    if (Math.abs(rest) >= 0.005) out.kinds[kind] = rest;
  }
  return out;
}
