// `npm run bench -- --only alternation`: the loopback paid call against its floor, measured in
// alternation so that a drift in the machine's load hits every side alike, and the CPU each
// side costs per call. Four sides take turns, in rounds of ROUND_CALLS calls (each side alone on
// the machine in its round, then QUIET_MS of quiet so the work a call leaves behind — the
// reconciler's verification about a second later — falls in the same round):
//   floor     the fast path's work in a tight loop, in this process (floor.mjs);
//   engine    the engine in a process of its own (engine-process.mjs), reconciler off, then on;
//   MCP       the MCP server over stdio (`node dist/cli.js serve`), whose reconciler always runs.
// For each side: p50 / p95, its own process's CPU per call (/proc, or process.cpuUsage for the
// floor), and the reference service's CPU per call behind it. The reconciler's share of a call's
// CPU is what turning it on adds to the engine's process: engine (on) − engine (off).
import { fork } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  children,
  INPUT,
  loadWallet,
  log,
  mcpClient,
  QUICK,
  serviceEnv,
  sleep,
  stats,
  timed,
  work,
} from "./common.mjs";
import { floorCall } from "./floor.mjs";
import { connectInspector, cpuMs, INSPECT_FLAG, inspectorUrl } from "./inspector.mjs";

export const ROUND_CALLS = 40;
const QUIET_MS = 2500;
const WARM_UP = 10;
const ENGINE = fileURLToPath(new URL("./engine-process.mjs", import.meta.url));

/**
 * The engine in a child process: `run(n)` resolves with n latencies; `pid`; `close()`. With
 * `inspect`, the child runs with the inspector open and `inspector` is a CDP session to it.
 */
export async function engineSide(
  svc,
  reconcile,
  { inspect = false, home = `alt-engine-${reconcile ? "on" : "off"}` } = {},
) {
  const env = {
    ...serviceEnv(svc.info, join(work, home)),
    BENCH_RECONCILE: reconcile ? "1" : "0",
    BENCH_INPUT: JSON.stringify(INPUT),
  };
  const child = fork(ENGINE, [], {
    env,
    execArgv: inspect ? [INSPECT_FLAG] : [],
    stdio: ["ignore", "ignore", inspect ? "pipe" : "inherit", "ipc"],
  });
  children.add(child);
  const url = inspect ? inspectorUrl(child.stderr) : undefined;
  // One answer awaited at a time: each message settles it; an early exit fails it.
  let waiting;
  const next = () => new Promise((resolve, reject) => (waiting = { resolve, reject }));
  child.on("message", (m) => (m.error ? waiting?.reject(new Error(`engine: ${m.error}`)) : waiting?.resolve(m)));
  child.on("exit", (code) => waiting?.reject(new Error(`engine process exited (${code})`)));
  await next();
  return {
    pid: child.pid,
    inspector: url && (await connectInspector(await url)),
    run: async (calls) => {
      const answer = next();
      child.send({ calls });
      return (await answer).samples;
    },
    close: async () => {
      waiting = undefined;
      const exited = new Promise((r) => child.once("exit", r));
      child.send({ close: true });
      await exited;
      children.delete(child);
    },
  };
}

/** The MCP server over stdio, its reconciler running as it always does. */
async function mcpSide(svc) {
  const { client, pid } = await mcpClient(serviceEnv(svc.info, join(work, "alt-mcp")));
  await client.listTools();
  return {
    pid,
    run: async (calls) => {
      const samples = [];
      for (let i = 0; i < calls; i++) {
        const t0 = performance.now();
        const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
        if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
        samples.push(performance.now() - t0);
      }
      return samples;
    },
    close: () => client.close(),
  };
}

/** The floor in this process; its CPU is this process's own (nothing else runs in its rounds). */
async function floorSide(svc) {
  const floor = await floorCall(svc, await loadWallet(svc.info.walletPath));
  return {
    cpu: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
    run: async (calls) => {
      const samples = [];
      for (let i = 0; i < calls; i++) await timed(floor.once, samples);
      return samples;
    },
    close: async () => floor.close(),
  };
}

/** Runs the sides in `rounds` rounds, the order rotated each round; figures per side. */
export async function alternation(svc, rounds = QUICK ? 3 : 10) {
  log(`alternation: floor, engine (reconciler off / on), MCP server; ${rounds} rounds of ${ROUND_CALLS} calls each…`);
  const sides = [
    { key: "floor", label: "floor (this process)", ...(await floorSide(svc)) },
    { key: "engineOff", label: "engine, reconciler off", ...(await engineSide(svc, false)) },
    { key: "engineOn", label: "engine, reconciler on", ...(await engineSide(svc, true)) },
    { key: "mcp", label: "MCP server over stdio", ...(await mcpSide(svc)) },
  ];
  for (const side of sides) {
    side.cpu ??= () => cpuMs(side.pid);
    Object.assign(side, { samples: [], cpuMs: 0, serviceCpuMs: 0 });
    await side.run(WARM_UP);
  }
  await sleep(QUIET_MS);
  const roundsDone = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const order = sides.map((_, i) => sides[(i + r) % sides.length]);
      for (const side of order) {
        const cpu0 = side.cpu();
        const svc0 = cpuMs(svc.child.pid);
        side.samples.push(...(await side.run(ROUND_CALLS)));
        await sleep(QUIET_MS);
        side.cpuMs += side.cpu() - cpu0;
        side.serviceCpuMs += cpuMs(svc.child.pid) - svc0;
      }
      roundsDone.push(order.map((s) => s.key));
      log(`   round ${r + 1}/${rounds} (${roundsDone[r].join(", ")})`);
    }
  } finally {
    for (const side of sides) await side.close();
  }
  const out = { rounds, roundCalls: ROUND_CALLS, quietMs: QUIET_MS, order: roundsDone, sides: {} };
  for (const side of sides) {
    const calls = side.samples.length;
    out.sides[side.key] = {
      label: side.label,
      ...stats(side.samples),
      cpuMsPerCall: side.cpuMs / calls,
      serviceCpuMsPerCall: side.serviceCpuMs / calls,
    };
  }
  return out;
}

/** The section's lines: latency and CPU per side, the ratios, the reconciler's CPU per call. */
export function formatAlternation(a) {
  const s = a.sides;
  const f = (v) => v.toFixed(1);
  const lines = [
    "",
    `Paid call on loopback, alternated: ${a.rounds} rounds of ${a.roundCalls} calls per side, each side alone, ${a.quietMs / 1000} s quiet after each round`,
    `  ${"side".padEnd(26)}${"p50 ms".padEnd(9)}${"p95 ms".padEnd(9)}${"CPU ms/call".padEnd(13)}service CPU ms/call`,
  ];
  for (const side of Object.values(s))
    lines.push(
      `  ${side.label.padEnd(26)}${f(side.median).padEnd(9)}${f(side.p95).padEnd(9)}${f(side.cpuMsPerCall).padEnd(13)}${f(side.serviceCpuMsPerCall)}`,
    );
  const ratio = (x) => (x.median / s.floor.median).toFixed(2);
  lines.push(
    `  ratio to the floor, p50: MCP ${ratio(s.mcp)} (target <= 1.25: ${s.mcp.median / s.floor.median <= 1.25 ? "met" : "MISSED"}); engine, reconciler off ${ratio(s.engineOff)}; on ${ratio(s.engineOn)}`,
  );
  lines.push(
    `  the reconciler's work after a call (engine on − off): ${f(s.engineOn.cpuMsPerCall - s.engineOff.cpuMsPerCall)} ms of CPU per call in the engine's process, ${f(s.engineOn.serviceCpuMsPerCall - s.engineOff.serviceCpuMsPerCall)} ms in the service's`,
  );
  lines.push(
    `  CPU per paid call, client side + service: MCP ${f(s.mcp.cpuMsPerCall + s.mcp.serviceCpuMsPerCall)} ms, floor ${f(s.floor.cpuMsPerCall + s.floor.serviceCpuMsPerCall)} ms (in ${f(s.mcp.median)} and ${f(s.floor.median)} ms of wall time at p50)`,
  );
  return lines;
}
