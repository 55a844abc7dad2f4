// `npm run bench`, section 3: what the server costs to keep running — its resident memory
// idle, after many paid calls, and its trend over the second half of them. The long run
// (`node test/bench/bench.mjs --only memory-long`, BENCH_MEMORY_CALLS paid calls, 10,000 by
// default, RSS every 1,000) asks whether that trend levels off; it writes .bench/memory-long.json.
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { INPUT, log, mcpClient, N_MEMORY, rssMb, serviceEnv, sleep, work } from "./common.mjs";

/** Least-squares slope of RSS over calls, in MB per 100 calls. */
export function slopePer100(points) {
  const mx = points.reduce((s, p) => s + p.calls, 0) / points.length;
  const my = points.reduce((s, p) => s + p.rssMb, 0) / points.length;
  const sxy = points.reduce((s, p) => s + (p.calls - mx) * (p.rssMb - my), 0);
  const sxx = points.reduce((s, p) => s + (p.calls - mx) ** 2, 0);
  return (sxy / Math.max(1, sxx)) * 100;
}

/** Resident memory by kind (/proc/<pid>/status, kB → MB): anonymous (heaps, native allocations) and file-backed. */
function rssKinds(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
  return { anonMb: kb("RssAnon"), fileMb: kb("RssFile") };
}

/**
 * A call may end unsettled (the call answered, the purchase still open, its budget reserved):
 * counted, not fatal; any other refusal is. Seen with the build that reused a blockhash for
 * up to 10 s: the sandbox's ledger honours one blockhash at a time (a new one every 60 s), a
 * proof signed with the old one was refused, and past 2,000 transactions in the wallet's
 * look-back window the engine could not tell that proof's fate.
 */
const UNSETTLED = new Set(["outcome_unknown", "busy"]);

/** `calls` paid calls through the MCP server over stdio, RSS sampled every `every` calls. */
async function paidCallsRss(svc, calls, every, home) {
  const env = serviceEnv(svc.info, join(work, home));
  const { client, pid } = await mcpClient(env);
  await client.listTools();
  await sleep(1500);
  const idle = rssMb(pid);
  const samples = [];
  const unsettled = [];
  const started = performance.now();
  for (let i = 1; i <= calls; i++) {
    const t0 = performance.now();
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    const code = r.structuredContent?.error?.code;
    if (r.isError && !UNSETTLED.has(code)) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
    if (r.isError) {
      unsettled.push({ call: i, code, ms: performance.now() - t0, atSeconds: (t0 - started) / 1000 });
      log(`   call ${i}: ${code} after ${(performance.now() - t0).toFixed(0)} ms`);
    }
    if (i % every === 0) {
      samples.push({ calls: i, rssMb: rssMb(pid), ...rssKinds(pid), seconds: (performance.now() - started) / 1000 });
      if (calls > N_MEMORY) log(`   ${i} calls: RSS ${samples[samples.length - 1].rssMb.toFixed(1)} MB`);
    }
  }
  await sleep(1000);
  const after = rssMb(pid);
  await client.close();
  return { idleMb: idle, afterMb: after, calls, samples, unsettled };
}

// ---- 3. Memory -------------------------------------------------------------------------

export async function memory(svc) {
  log(`3. memory: idle, then ${N_MEMORY} paid calls…`);
  const run = await paidCallsRss(svc, N_MEMORY, 100, "mem-home");
  // Trend: the slope over the second half of the run.
  const half = run.samples.slice(Math.floor(run.samples.length / 2));
  return { ...run, slopeMbPer100Calls: slopePer100(half) };
}

/** The long run: RSS every 1,000 calls and the slope over each half and over the last 5,000. */
export async function memoryLong(svc, calls) {
  log(`3b. memory, long: ${calls} paid calls, RSS every 1,000…`);
  const run = await paidCallsRss(svc, calls, 1000, "mem-long-home");
  const s = run.samples;
  const mid = Math.floor(s.length / 2);
  return {
    ...run,
    // Each half from its own first sample: the first half starts at 1,000 calls (the idle RSS is not a point).
    slopeFirstHalf: slopePer100(s.slice(0, mid)),
    slopeSecondHalf: slopePer100(s.slice(mid - 1)),
    slopeLast5000: slopePer100(s.filter((p) => p.calls >= calls - 5000)),
  };
}

/** The long run's lines: RSS every 1,000 calls, then the slopes. */
export function formatMemoryLong(m) {
  const lines = [
    "",
    `Memory over ${m.calls} paid calls (MCP server over stdio, SQLite journal): idle ${m.idleMb.toFixed(1)} MB`,
  ];
  for (const p of m.samples)
    lines.push(
      `  ${String(p.calls).padStart(6)} calls: RSS ${p.rssMb.toFixed(1)} MB (anonymous ${p.anonMb.toFixed(1)}, file ${p.fileMb.toFixed(1)}), ${p.seconds.toFixed(0)} s`,
    );
  lines.push(
    `  slope, MB per 100 calls: first half ${m.slopeFirstHalf.toFixed(3)}, second half ${m.slopeSecondHalf.toFixed(3)}, last 5,000 ${m.slopeLast5000.toFixed(3)}; after the run ${m.afterMb.toFixed(1)} MB`,
  );
  lines.push(
    `  calls that ended unsettled (outcome_unknown or busy): ${m.unsettled.length}${m.unsettled.length ? ` (${m.unsettled.map((u) => `#${u.call} ${u.code} at ${u.atSeconds.toFixed(0)} s, ${(u.ms / 1000).toFixed(1)} s`).join("; ")})` : ""}`,
  );
  return lines;
}
