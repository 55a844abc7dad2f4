// What the WAN section (`npm run bench -- --only wan`) makes of its proxy's records, on
// hand-made requests: each request's kind, requests per call on the service and on the RPC,
// new connections per upstream since a mark, and the background left after the hot path.
import { describe, expect, it } from "vitest";
import { kindOf, mark, minus, perCall, tally, type Lane, type ProxyRequest } from "./wan-traffic.mjs";

const req = (method: string, path: string, rpc?: string): ProxyRequest => ({
  at: 0,
  method,
  path,
  ...(rpc === undefined ? {} : { rpc }),
});

describe("the WAN section's request counts", () => {
  it.each([
    [req("POST", "/v1/quotes"), "POST /v1/quotes"],
    [req("GET", "/v1/executions/exe_ApTcAIhoNoauYRqq"), "GET /v1/executions/:id"],
    [req("GET", "/v1/quotes/q_01HXABCDEFGH/status"), "GET /v1/quotes/:id/status"],
    [req("GET", "/x402/weather"), "GET /x402/weather"],
    [req("POST", "/solana", "getLatestBlockhash"), "getLatestBlockhash"],
    [req("POST", "/", "eth_call+eth_blockNumber"), "eth_call+eth_blockNumber"],
  ])("names %j %s", (r, kind) => {
    expect(kindOf(r)).toBe(kind);
  });

  it("counts requests per call, on the service and on the RPC, by kind", () => {
    const t = tally(
      [
        req("POST", "/v1/quotes"),
        req("POST", "/solana", "getLatestBlockhash"),
        req("POST", "/v1/executions"),
        req("POST", "/v1/quotes"),
        req("POST", "/v1/executions"),
      ],
      2,
    );
    expect(t).toEqual({
      service: 2,
      rpc: 0.5,
      kinds: { "POST /v1/quotes": 1, "POST /v1/executions": 1, getLatestBlockhash: 0.5 },
    });
  });

  it("counts what a lane carried since a mark, its connections per upstream named", () => {
    const lane: Lane = { requests: [req("GET", "/x402/weather")], connections: 1, connectionsTo: { "4000": 1 } };
    const since = mark(lane);
    lane.requests.push(req("GET", "/x402/weather"), req("GET", "/x402/weather"), req("POST", "/", "eth_call"));
    lane.connections += 3;
    lane.connectionsTo = { "4000": 3, "5000": 1 };
    expect(perCall(lane, since, 2, { "4000": "service", "5000": "EVM RPC" })).toEqual({
      service: 1,
      rpc: 0.5,
      kinds: { "GET /x402/weather": 1, eth_call: 0.5 },
      connections: 1.5,
      connectionsTo: { service: 1, "EVM RPC": 0.5 },
    });
    // The mark is a copy: what the lane carries later does not move it.
    expect(since).toEqual({ requests: 1, connections: 1, connectionsTo: { "4000": 1 } });
  });

  it("leaves the hot path out of what a lane carried: the background, small remainders dropped", () => {
    const all = {
      service: 3,
      rpc: 1.5,
      kinds: { "POST /v1/quotes": 1, "GET /v1/executions/:id": 1, getTransaction: 1.002 },
    };
    const hot = { service: 2, rpc: 0.5, kinds: { "POST /v1/quotes": 1, getTransaction: 0.5 } };
    expect(minus(all, hot)).toEqual({
      service: 1,
      rpc: 1,
      kinds: { "GET /v1/executions/:id": 1, getTransaction: 0.502 },
    });
  });
});
