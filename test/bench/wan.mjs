// `npm run bench`, the WAN section, on each rail the product pays on: a paid call through the
// MCP server over stdio against the stock x402 client of that rail, both paying the reference
// service through a proxy that adds 20 ms each way (wan-proxy.mjs) in front of its HTTP port
// and of the rail's RPC — a service one region away. On Solana: the `servers_provision` action
// against `@x402/fetch` + `@x402/svm` paying POST /executions; on EVM (eip155:84532): a
// `paid_fetch` of the sandbox's paid resource against `@x402/fetch` + `@x402/evm` paying the
// same URL (wan-sides.mjs says how each side is set up). The MCP server runs as a real service
// configuration (its URLs through the proxy, not sandbox mode). The two are alternated in
// rounds so a drift in the machine's load hits both alike. Counts the HTTP requests each sends
// per paid call, by kind, on the service and on the RPC: on the hot path (inside the call)
// and in the background (the MCP server's reconciler, after the call; wan-traffic.mjs).
import { log, N_WAN, sleep, stats, WAN_ONE_WAY_MS, WAN_ROUNDS } from "./common.mjs";
import { EVM_RAIL, SOLANA_RAIL } from "./wan-sides.mjs";
import { startWanProxy } from "./wan-proxy.mjs";
import { mark, minus, perCall, tally } from "./wan-traffic.mjs";

/** Long enough for the reconciler's work after a call (it verifies about 1 s later). */
const SETTLE_MS = 3000;
/** Isolated MCP calls, each alone on the wire, for its hot-path requests. */
const PROBE_CALLS = 3;
const WARM_UP = 5;

/** The WAN section on Solana (section 1b). */
export const wanCalls = (svc) => wanRail(svc, SOLANA_RAIL, "1b");
/** The WAN section on EVM (section 1b'); absent when the sandbox runs without its EVM ledger. */
export const wanEvmCalls = (svc) => wanRail(svc, EVM_RAIL, "1b'");

/** One rail's WAN figures: both sides' latency in alternated rounds, and their requests per call. */
async function wanRail(svc, rail, section) {
  log(
    `${section}. WAN on ${rail.name}: MCP vs stock x402 client through a ${2 * WAN_ONE_WAY_MS} ms round trip, ${N_WAN} paid calls each in ${WAN_ROUNDS} rounds…`,
  );
  // Upstream port → its name in the report ("service", "EVM RPC").
  const upstreams = Object.fromEntries(rail.upstreams(svc.info).map((u) => [new URL(u.url).port, u.name]));
  const upstreamPorts = Object.keys(upstreams).map(Number);
  const proxy = await startWanProxy({ upstreamPorts, oneWayMs: WAN_ONE_WAY_MS, lanes: ["mcp", "peer"] });
  try {
    const mcp = await rail.mcpSide(svc, proxy);
    const peer = await rail.peerSide(svc, proxy);
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
      mcp: perCall(proxy.lanes.mcp, marks.mcp, samples.mcp.length, upstreams),
      peer: perCall(proxy.lanes.peer, marks.peer, samples.peer.length, upstreams),
    };
    const mcpHot = await probe(mcp, proxy.lanes.mcp);
    await mcp.close();
    return {
      rail: rail.name,
      network: rail.network(svc.info),
      labels: rail.labels,
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
