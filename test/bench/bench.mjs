// `npm run bench`: how fast a paid call is against its floor and a peer, how fast the server
// starts, what it costs to keep running, and how the reconciler and the journal scale.
// Everything runs against the reference service on 127.0.0.1, in one run, so ratios are fair.
// Prints a table, ending with a summary of the run's headline figures (summary.mjs), and
// writes .bench/results.json. BENCH_QUICK=1 runs a smaller version.
// `--only NAME` runs one section and writes .bench/NAME.json:
//   startup        the start-up section (startup.mjs);
//   wan            the WAN section on each rail (wan.mjs: Solana, and EVM when the sandbox runs
//                  its EVM ledger) with the commit count (commits.mjs);
//   alternation    floor, engine and MCP server in alternated rounds, CPU per call (alternation.mjs;
//                  --rounds N);
//   profile        where the CPU of a paid call goes, MCP server (by phase of the call) and
//                  service, the profiles written to .bench/profile/ (cpu-profile.mjs; --calls N);
//   cpu-profile    the same section under its first name;
//   memory         section 3 alone: RSS idle and after 1,000 paid calls, the second half's
//                  trend, RSS every 100 calls (memory.mjs; --server-args "FLAGS": Node flags
//                  for the MCP server, to compare a V8 setting);
//   memory-long    the long memory run (memory.mjs; --calls N or BENCH_MEMORY_CALLS, 10,000 by
//                  default; --heap-every N, --snapshots a,b,… for heap-diff.mjs; --server-args);
//   memory-engine  the engine's heap in a process of its own (memory.mjs; --calls N, 3,000);
//   launch         the launch through npm (launch.mjs: npx, a global install; it installs the
//                  package with npm);
//   reconciler     the reconciler's cost with 10 / 100 / 1,000 unfinished executions (scale.mjs,
//                  section 4): requests/s, share of a core, CPU per poll (--profile: the window
//                  at 1,000 under V8's sampling profiler, .bench/profile/reconciler.cpuprofile,
//                  its top frames printed).
// Only startup, wan, memory and reconciler are part of a full run too.
// Each section is its own module: paid-call.mjs (1, its floor in floor.mjs), wan.mjs (1b, its
// sides in wan-sides.mjs), commits.mjs (1c), cold-start.mjs (2), startup.mjs, memory.mjs (3),
// scale.mjs (4-6); report.mjs prints the table. This file runs them in order.
import { cpus, totalmem, release } from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { alternation, formatAlternation } from "./alternation.mjs";
import { log, QUICK, ROOT, startSandbox, work } from "./common.mjs";
import { cpuProfiles, formatCpuProfiles } from "./cpu-profile.mjs";
import { coldStarts, stubCatalog } from "./cold-start.mjs";
import { commitsPerCall } from "./commits.mjs";
import { formatMemory, formatMemoryEngine, formatMemoryLong, memory, memoryEngine, memoryLong } from "./memory.mjs";
import { paidCalls } from "./paid-call.mjs";
import { formatReconciler, formatReport, formatWan } from "./report.mjs";
import { launchFigures, formatLaunch } from "./launch.mjs";
import { journal, reconciler, service } from "./scale.mjs";
import { startupFigures, formatStartup } from "./startup.mjs";
import { wanCalls, wanEvmCalls } from "./wan.mjs";

const args = parseArgs({
  options: {
    only: { type: "string" },
    rounds: { type: "string" },
    calls: { type: "string" },
    "heap-every": { type: "string" },
    snapshots: { type: "string" },
    "server-args": { type: "string" },
    profile: { type: "boolean" },
  },
}).values;
const ONLY = args.only;
const SECTIONS = [
  "startup",
  "wan",
  "memory",
  "memory-long",
  "memory-engine",
  "launch",
  "alternation",
  "profile",
  "cpu-profile",
  "reconciler",
];
if (ONLY !== undefined && !SECTIONS.includes(ONLY))
  throw new Error(`--only takes one section name: ${SECTIONS.join(", ")} (not ${ONLY})`);

// ---- Run ---------------------------------------------------------------------------------------

const started = performance.now();
const machine = {
  cpu: cpus()[0]?.model ?? "?",
  cores: cpus().length,
  memoryGb: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  os: `${process.platform} ${release()}`,
};
log(
  `paid-actions-mcp bench${QUICK ? " (quick)" : ""}${ONLY ? ` --only ${ONLY}` : ""} on ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}`,
);
const results = { machine, date: new Date().toISOString(), quick: QUICK };

/** One section alone: its lines, then its own results file (a full run's results.json is kept). */
function writeOnly(lines, file) {
  results.durationSeconds = (performance.now() - started) / 1000;
  const total = `Total ${results.durationSeconds.toFixed(0)} s on ${machine.cpu} (${machine.cores} cores), Node ${machine.node}.`;
  process.stdout.write(`${[...lines, "", total].join("\n")}\n`);
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  writeFileSync(join(ROOT, ".bench", file), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`Results written to .bench/${file}\n`);
  process.exit(0);
}
if (ONLY === "startup") {
  results.startup = await startupFigures({ root: ROOT, work, log });
  writeOnly(formatStartup(results.startup), "startup.json");
}
if (ONLY === "launch") {
  results.launch = await launchFigures({ root: ROOT, work, log, runs: Number(process.env.BENCH_LAUNCH_RUNS ?? 5) });
  writeOnly(formatLaunch(results.launch), "launch.json");
}
// The reconciler's section starts its own slow service: it needs none of the others.
if (ONLY === "reconciler") {
  results.reconciler = await reconciler({ profile: args.profile === true });
  writeOnly(formatReconciler(results.reconciler), "reconciler.json");
}
const svc = await startSandbox("sandbox", 0);
/** The WAN section on each rail the sandbox runs: EVM only with its EVM ledger (an anvil binary). */
async function wanRails() {
  results.wan = await wanCalls(svc);
  if (svc.info.evm) results.wanEvm = await wanEvmCalls(svc);
  else log("1b'. WAN on base-sepolia: skipped, the sandbox runs without its EVM ledger");
}
if (ONLY === "wan") {
  await wanRails();
  results.commits = await commitsPerCall(svc);
  svc.child.kill("SIGTERM");
  const evm = results.wanEvm
    ? formatWan(results.wanEvm, null, null)
    : ["", "base-sepolia: not measured (no EVM ledger)"];
  writeOnly([...formatWan(results.wan, undefined, results.commits), ...evm], "wan.json");
}
if (ONLY === "alternation") {
  results.alternation = await alternation(svc, args.rounds === undefined ? undefined : Number(args.rounds));
  svc.child.kill("SIGTERM");
  writeOnly(formatAlternation(results.alternation), "alternation.json");
}
// `profile` is the section's name since issue 34; `cpu-profile`, its first name, runs it too.
if (ONLY === "profile" || ONLY === "cpu-profile") {
  results.cpuProfile = await cpuProfiles(svc, args.calls === undefined ? undefined : Number(args.calls));
  svc.child.kill("SIGTERM");
  writeOnly(formatCpuProfiles(results.cpuProfile), `${ONLY}.json`);
}
if (ONLY === "memory-engine") {
  results.memoryEngine = await memoryEngine(svc, Number(args.calls ?? 3000));
  svc.child.kill("SIGTERM");
  writeOnly(formatMemoryEngine(results.memoryEngine), "memory-engine.json");
}
/** `--server-args "--flag=v …"`: Node flags for the MCP server in the memory sections. */
const nodeArgs = (args["server-args"] ?? "").split(/\s+/).filter(Boolean);
if (ONLY === "memory") {
  results.memory = await memory(svc, { nodeArgs });
  svc.child.kill("SIGTERM");
  writeOnly(formatMemory(results.memory), "memory.json");
}
if (ONLY === "memory-long") {
  results.memoryLong = await memoryLong(svc, Number(args.calls ?? process.env.BENCH_MEMORY_CALLS ?? 10_000), {
    heapEvery: Number(args["heap-every"] ?? 0),
    snapshots: (args.snapshots ?? "").split(",").filter(Boolean).map(Number),
    nodeArgs,
  });
  svc.child.kill("SIGTERM");
  writeOnly(formatMemoryLong(results.memoryLong), "memory-long.json");
}
const stub = await stubCatalog(500);
results.paidCall = await paidCalls(svc);
await wanRails();
results.commits = await commitsPerCall(svc);
results.coldStart = await coldStarts(svc, stub);
results.startup = await startupFigures({ root: ROOT, work, log });
results.memory = await memory(svc);
results.reconciler = await reconciler();
results.journal = await journal();
results.service = await service(svc);
await stub.close();
svc.child.kill("SIGTERM");
results.durationSeconds = (performance.now() - started) / 1000;

process.stdout.write(`${formatReport(results).join("\n")}\n`);
mkdirSync(join(ROOT, ".bench"), { recursive: true });
writeFileSync(join(ROOT, ".bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`Results written to .bench/results.json\n`);
process.exit(0);
