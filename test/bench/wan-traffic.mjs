// What the WAN section makes of the requests its proxy recorded (wan-proxy.mjs): each request
// named by its kind ("POST /v1/quotes", "getLatestBlockhash", "eth_call"), counted per paid
// call on the service and on the RPC, and the background a client leaves after its calls
// (everything its lane carried, less its hot path). Pure: wan.mjs gives it the records.

/** A path segment that names one record ("exe_ApTcAIhoNoauYRqq", "q_01HX…"), not a route. */
const ID_SEGMENT = /\/(?:[a-z]+_[A-Za-z0-9_-]{8,}|(?=[^/]*[0-9])[^/]{8,})(?=\/|$)/g;

/** A request's kind: its JSON-RPC method(s), or its method and route with record ids as `:id`. */
export function kindOf(request) {
  return request.rpc ?? `${request.method} ${request.path.replace(ID_SEGMENT, "/:id")}`;
}

/** Where a lane stands now: how many requests and connections (in all, and per upstream port) it has carried. */
export const mark = (lane) => ({
  requests: lane.requests.length,
  connections: lane.connections,
  connectionsTo: { ...lane.connectionsTo },
});

/** Requests per call on the service and on the RPC, each by kind. */
export function tally(requests, calls) {
  const out = { service: 0, rpc: 0, kinds: {} };
  for (const r of requests) {
    const kind = kindOf(r);
    out[r.rpc === undefined ? "service" : "rpc"] += 1 / calls;
    out.kinds[kind] = (out.kinds[kind] ?? 0) + 1 / calls;
  }
  return out;
}

/**
 * Everything a lane carried since `since` (a mark), per call: requests by kind, new
 * connections in all and to each upstream, named by `upstreams` (port → name).
 */
export function perCall(lane, since, calls, upstreams = {}) {
  const connectionsTo = {};
  for (const [port, n] of Object.entries(lane.connectionsTo ?? {})) {
    const name = upstreams[port] ?? `port ${port}`;
    connectionsTo[name] = (connectionsTo[name] ?? 0) + (n - (since.connectionsTo?.[port] ?? 0)) / calls;
  }
  return {
    ...tally(lane.requests.slice(since.requests), calls),
    connections: (lane.connections - since.connections) / calls,
    connectionsTo,
  };
}

/** What a lane carried per call beyond the hot path: the background work a call leaves behind. */
export function minus(all, hot) {
  const out = { service: all.service - hot.service, rpc: all.rpc - hot.rpc, kinds: {} };
  for (const [kind, n] of Object.entries(all.kinds)) {
    const rest = n - (hot.kinds[kind] ?? 0);
    if (Math.abs(rest) >= 0.005) out.kinds[kind] = rest;
  }
  return out;
}
