// `npm run bench`, section 3: what the server costs to keep running — its resident memory
// idle, after many paid calls, and its trend over the second half of them. The long run
// (`node test/bench/bench.mjs --only memory-long`, BENCH_MEMORY_CALLS paid calls, 10,000 by
// default, RSS every 1,000) asks whether that trend levels off; it writes .bench/memory-long.json.
// With `--heap-every N` it also reads the JS heap in use after three full GCs every N calls,
// and with `--snapshots 500,2500,…` it writes a heap snapshot at those calls into .bench/heap/
// (both through the inspector, inspector.mjs), for heap-diff.mjs to say which owner grows.
import { join } from "node:path";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { INPUT, log, mcpClient, N_MEMORY, ROOT, rssMb, serviceEnv, sleep, work } from "./common.mjs";
import { anonymousByKind, cpuMs, heapAfterGc, heapSpaces, writeHeapSnapshot } from "./inspector.mjs";
import { engineSide } from "./alternation.mjs";

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

/** Where the long run writes its heap snapshots, emptied of earlier ones at its start. */
export const HEAP_DIR = join(ROOT, ".bench", "heap");

const MB = 2 ** 20;

/**
 * Where the resident memory is, read before any GC is forced (as the process runs): V8's heap
 * resident by space, the malloc heaps (smaps), in MB.
 */
async function residentReading(inspector, pid) {
  const spaces = Object.fromEntries((await heapSpaces(inspector)).map((s) => [s.name, s.resident / MB]));
  return {
    v8: {
      newMb: (spaces.new_space ?? 0) + (spaces.new_large_object_space ?? 0),
      oldMb: spaces.old_space ?? 0,
      codeMb: (spaces.code_space ?? 0) + (spaces.code_large_object_space ?? 0),
      largeMb: spaces.large_object_space ?? 0,
    },
    ...anonymousByKind(pid),
  };
}

/** The resident memory as it is (residentReading), then after three full GCs: the heap in use and reserved, `external` and array buffers, in MB. */
async function heapReading(inspector, calls, pid) {
  const resident = pid === undefined ? undefined : await residentReading(inspector, pid);
  const m = await heapAfterGc(inspector);
  return {
    resident,
    calls,
    heapUsedMb: m.heapUsed / MB,
    heapTotalMb: m.heapTotal / MB,
    externalMb: m.external / MB,
    arrayBuffersMb: m.arrayBuffers / MB,
  };
}

/**
 * `calls` paid calls through the MCP server over stdio, RSS and CPU sampled every `every`
 * calls; with `heapEvery` or `snapshots` (call counts), the heap read or snapshotted too.
 */
async function paidCallsRss(svc, calls, every, home, { heapEvery = 0, snapshots = [], nodeArgs = [] } = {}) {
  const env = serviceEnv(svc.info, join(work, home));
  const inspect = heapEvery > 0 || snapshots.length > 0;
  const { client, pid, inspector } = await mcpClient(env, { inspect, nodeArgs });
  if (snapshots.length > 0) {
    mkdirSync(HEAP_DIR, { recursive: true });
    for (const f of readdirSync(HEAP_DIR)) if (f.endsWith(".heapsnapshot")) rmSync(join(HEAP_DIR, f));
  }
  await client.listTools();
  await sleep(1500);
  const idle = rssMb(pid);
  const heap = heapEvery > 0 ? [await heapReading(inspector, 0, pid)] : [];
  const written = [];
  const samples = [];
  const unsettled = [];
  const started = performance.now();
  let cpu0 = cpuMs(pid);
  let cpuCalls = 0;
  for (let i = 1; i <= calls; i++) {
    cpuCalls++;
    const t0 = performance.now();
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    const code = r.structuredContent?.error?.code;
    if (r.isError && !UNSETTLED.has(code)) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
    if (r.isError) {
      unsettled.push({ call: i, code, ms: performance.now() - t0, atSeconds: (t0 - started) / 1000 });
      log(`   call ${i}: ${code} after ${(performance.now() - t0).toFixed(0)} ms`);
    }
    if (i % every === 0) {
      const cpu = cpuMs(pid);
      const seconds = (performance.now() - started) / 1000;
      samples.push({ calls: i, rssMb: rssMb(pid), ...rssKinds(pid), seconds, cpuMsPerCall: (cpu - cpu0) / cpuCalls });
      cpu0 = cpu;
      cpuCalls = 0;
      if (calls > N_MEMORY) log(`   ${i} calls: RSS ${samples[samples.length - 1].rssMb.toFixed(1)} MB`);
    }
    if (heapEvery > 0 && i % heapEvery === 0) heap.push(await heapReading(inspector, i, pid));
    if (snapshots.includes(i)) {
      const path = join(HEAP_DIR, `${String(i).padStart(6, "0")}.heapsnapshot`);
      const bytes = await writeHeapSnapshot(inspector, path);
      written.push({ calls: i, path, mb: bytes / MB });
      log(`   ${i} calls: heap snapshot ${path} (${(bytes / MB).toFixed(0)} MB)`);
    }
    // The GCs and snapshots take time the CPU reading should not charge to calls.
    if ((heapEvery > 0 && i % heapEvery === 0) || snapshots.includes(i)) {
      cpu0 = cpuMs(pid);
      cpuCalls = 0;
    }
  }
  await sleep(1000);
  const after = rssMb(pid);
  inspector?.close();
  await client.close();
  return { idleMb: idle, afterMb: after, calls, samples, unsettled, heap, snapshots: written, nodeArgs };
}

// ---- 3. Memory -------------------------------------------------------------------------

/** Section 3; `options.nodeArgs`: Node flags for the server (`--only memory --server-args "…"`). */
export async function memory(svc, options = {}) {
  log(`3. memory: idle, then ${N_MEMORY} paid calls…`);
  const run = await paidCallsRss(svc, N_MEMORY, 100, "mem-home", options);
  // Trend: the slope over the second half of the run.
  const half = run.samples.slice(Math.floor(run.samples.length / 2));
  return { ...run, slopeMbPer100Calls: slopePer100(half) };
}

/**
 * `--only memory`: section 3 alone — idle, after, the ratio and the trend against issue 34's
 * targets, and RSS every 100 calls split into anonymous memory (the V8 heap, the allocator's,
 * SQLite's page cache) and file-backed (the node binary and libraries, mapped).
 */
export function formatMemory(m) {
  const ratio = m.afterMb / m.idleMb;
  const met = ratio <= 1.5 && m.slopeMbPer100Calls < 1;
  const lines = [
    "",
    `Memory (RSS) over ${m.calls} paid calls (MCP server over stdio, SQLite journal${m.nodeArgs.length ? `, node ${m.nodeArgs.join(" ")}` : ""}):`,
    `  idle ${m.idleMb.toFixed(1)} MB; after ${m.afterMb.toFixed(1)} MB (${ratio.toFixed(2)}x idle); trend over the second half ${m.slopeMbPer100Calls.toFixed(2)} MB per 100 calls — targets <= 1.5x idle and < 1 MB per 100: ${met ? "met" : "missed"}`,
  ];
  for (const p of m.samples)
    lines.push(
      `  ${String(p.calls).padStart(6)} calls: RSS ${p.rssMb.toFixed(1)} MB (anonymous ${p.anonMb.toFixed(1)}, file ${p.fileMb.toFixed(1)}), server CPU ${p.cpuMsPerCall.toFixed(1)} ms per call`,
    );
  lines.push(`  calls that ended unsettled (outcome_unknown or busy): ${m.unsettled.length}`);
  return lines;
}

/** The long run: RSS every 1,000 calls and the slope over each half and over the last 5,000. */
export async function memoryLong(svc, calls, heapOptions = {}) {
  log(`3b. memory, long: ${calls} paid calls, RSS every 1,000…`);
  const run = await paidCallsRss(svc, calls, 1000, "mem-long-home", heapOptions);
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
    `Memory over ${m.calls} paid calls (MCP server over stdio, SQLite journal${m.nodeArgs?.length ? `, node ${m.nodeArgs.join(" ")}` : ""}): idle ${m.idleMb.toFixed(1)} MB`,
  ];
  for (const p of m.samples)
    lines.push(
      `  ${String(p.calls).padStart(6)} calls: RSS ${p.rssMb.toFixed(1)} MB (anonymous ${p.anonMb.toFixed(1)}, file ${p.fileMb.toFixed(1)}), ${p.seconds.toFixed(0)} s, server CPU ${p.cpuMsPerCall.toFixed(1)} ms per call`,
    );
  lines.push(
    `  slope, MB per 100 calls: first half ${m.slopeFirstHalf.toFixed(3)}, second half ${m.slopeSecondHalf.toFixed(3)}, last 5,000 ${m.slopeLast5000.toFixed(3)}; after the run ${m.afterMb.toFixed(1)} MB`,
  );
  lines.push(...formatHeap(m));
  lines.push(
    `  calls that ended unsettled (outcome_unknown or busy): ${m.unsettled.length}${m.unsettled.length ? ` (${m.unsettled.map((u) => `#${u.call} ${u.code} at ${u.atSeconds.toFixed(0)} s, ${(u.ms / 1000).toFixed(1)} s`).join("; ")})` : ""}`,
  );
  return lines;
}

/** The heap readings (with --heap-every) and the snapshots written (with --snapshots). */
function formatHeap(m) {
  const lines = [];
  if (m.heap?.length) {
    lines.push("  JS heap after three full GCs (MB: in use / reserved / external / array buffers):");
    for (const h of m.heap)
      lines.push(
        `    ${String(h.calls).padStart(6)} calls: ${h.heapUsedMb.toFixed(2)} / ${h.heapTotalMb.toFixed(1)} / ${h.externalMb.toFixed(2)} / ${h.arrayBuffersMb.toFixed(2)}`,
      );
    lines.push(
      "  resident before those GCs (MB): V8's heap by space (new / old / code / large objects); malloc, main thread's heap / other threads' arenas; other anonymous:",
    );
    for (const { calls, resident: r } of m.heap)
      if (r)
        lines.push(
          `    ${String(calls).padStart(6)} calls: ${r.v8.newMb.toFixed(1)} / ${r.v8.oldMb.toFixed(1)} / ${r.v8.codeMb.toFixed(1)} / ${r.v8.largeMb.toFixed(1)}; ${r.mallocMainMb.toFixed(1)} / ${r.mallocArenasMb.toFixed(1)}; ${r.otherAnonMb.toFixed(1)}`,
        );
    for (const [a, b] of [
      [1000, 3000],
      [3000, 10000],
      [5000, 10000],
    ]) {
      const [ha, hb] = [a, b].map((c) => m.heap.find((h) => h.calls === c));
      if (ha && hb)
        lines.push(
          `    heap in use per call from ${a} to ${b} calls: ${(((hb.heapUsedMb - ha.heapUsedMb) * 1024) / (b - a)).toFixed(3)} KB`,
        );
    }
  }
  if (m.snapshots?.length)
    lines.push(
      `  heap snapshots: ${m.snapshots.map((s) => `${s.calls} calls`).join(", ")}; what grew: node test/bench/heap-diff.mjs .bench/heap/*.heapsnapshot`,
    );
  return lines;
}

/**
 * `--only memory-engine`: whether the engine itself holds on to anything, without the MCP
 * layer — the engine in a process of its own (engine-process.mjs, opened as section 1c opens
 * it, the reconciler off), `calls` paid calls, and after three full GCs every 1,000 calls the
 * heap in use and reserved, `external`, array buffers and RSS.
 */
export async function memoryEngine(svc, calls) {
  log(`memory-engine: the engine in its own process, ${calls} paid calls, the heap every 1,000…`);
  const engine = await engineSide(svc, false, { inspect: true, home: "mem-engine" });
  const reading = async (done) => ({ ...(await heapReading(engine.inspector, done)), rssMb: rssMb(engine.pid) });
  try {
    await sleep(1500);
    const heap = [await reading(0)];
    for (let done = 0; done < calls;) {
      const n = Math.min(1000, calls - done);
      await engine.run(n);
      done += n;
      heap.push(await reading(done));
      log(`   ${done} calls: heap in use ${heap[heap.length - 1].heapUsedMb.toFixed(2)} MB`);
    }
    return { calls, heap };
  } finally {
    engine.inspector.close();
    await engine.close();
  }
}

export function formatMemoryEngine(m) {
  const lines = [
    "",
    `The engine in its own process over ${m.calls} paid calls, after three full GCs (MB: heap in use / reserved / external / array buffers; RSS):`,
  ];
  for (const h of m.heap)
    lines.push(
      `  ${String(h.calls).padStart(6)} calls: ${h.heapUsedMb.toFixed(2)} / ${h.heapTotalMb.toFixed(1)} / ${h.externalMb.toFixed(2)} / ${h.arrayBuffersMb.toFixed(2)}; RSS ${h.rssMb.toFixed(1)}`,
    );
  const [a, b] = [m.heap.find((h) => h.calls === 1000), m.heap[m.heap.length - 1]];
  if (a && b.calls > a.calls)
    lines.push(
      `  heap in use per call from 1,000 to ${b.calls} calls: ${(((b.heapUsedMb - a.heapUsedMb) * 1024) / (b.calls - a.calls)).toFixed(3)} KB`,
    );
  return lines;
}
