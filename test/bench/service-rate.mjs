// `node test/bench/service-rate.mjs [--rounds N] [--dists A,B] [--profile [--save FILE]]`:
// section 6 of `npm run bench` (scale.mjs's `service`: quotes/s, then settled paid executions/s:
// SETTLED_EXECUTIONS quoted and signed before the window, settled in it from SETTLED_CLIENTS
// clients) alone, against a fresh reference service in its own process, N rounds, with the CPU
// time per call of the service and of this client (/proc, process.cpuUsage).
// --dists runs the service from each of these builds in turn, alternating every round (a copy of
// dist/ beside a node_modules link), to compare two builds in the same conditions. With
// --profile, one more window of settled executions runs under V8's sampling profiler in the
// service's process (as cpu-profile.mjs does), and its top frames are printed (--save FILE
// keeps the raw .cpuprofile). Run `npm run build` first: by default it measures dist/.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { children, CLI, log, SERVICE_WINDOW_MS, sleep, work } from "./common.mjs";
import { connectInspector, cpuMs, INSPECT_FLAG, mainThreadCpuMs, startCpuProfile } from "./inspector.mjs";
import { attribute } from "./profile-attribution.mjs";
import {
  prepareExecutions,
  serviceCalls,
  SETTLED_CLIENTS,
  SETTLED_EXECUTIONS,
  settleAll,
  throughput,
} from "./scale.mjs";

const args = parseArgs({
  options: {
    profile: { type: "boolean" },
    rounds: { type: "string" },
    save: { type: "string" },
    dists: { type: "string" },
  },
}).values;
const rounds = Number(args.rounds ?? 1);
const clis = args.dists ? args.dists.split(",").map((d) => join(d, "cli.js")) : [CLI];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

let started = 0;
/** The reference service from `cli`, as common.mjs's startSandbox starts it. */
async function startService(cli, nodeArgs = []) {
  const home = join(work, `sandbox-rate-${started++}`);
  const argv = [...nodeArgs, cli, "sandbox", "--port", "0", "--home", home, "--provider-delay-ms", "0"];
  const child = spawn(process.execPath, [...argv, "--rate-limit", "100000"], { stdio: ["ignore", "ignore", "pipe"] });
  children.add(child);
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  for (let i = 0; i < 300; i++) {
    if (existsSync(join(home, "sandbox.json")) && err.includes("is running")) break;
    if (child.exitCode !== null) throw new Error(`sandbox exited: ${err}`);
    await sleep(50);
  }
  const info = JSON.parse(readFileSync(join(home, "sandbox.json"), "utf8"));
  return { info, child, home, inspector: /Debugger listening on (ws:\/\/\S+)/.exec(err)?.[1] };
}

/** CPU time both processes spend in `run` (which resolves with how many calls it made), per call. */
async function cpuPerCall(svc, run) {
  const cpu0 = cpuMs(svc.child.pid);
  const main0 = mainThreadCpuMs(svc.child.pid);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  const n = await run();
  const wall = performance.now() - t0;
  const own = process.cpuUsage(own0);
  const main = mainThreadCpuMs(svc.child.pid) - main0;
  const per = (ms) => (ms / n).toFixed(2);
  return (
    `CPU per call: service ${per(cpuMs(svc.child.pid) - cpu0)} ms (its main thread ${per(main)} ms, busy ${((main / wall) * 100).toFixed(0)} % of the time), ` +
    `client ${per((own.user + own.system) / 1000)} ms; ${(wall / 1000).toFixed(1)} s`
  );
}

for (let r = 0; r < rounds; r++) {
  for (const cli of clis) {
    const svc = await startService(cli);
    const calls = await serviceCalls(svc);
    const loadBefore = load();
    let quoteRate = 0;
    const quotes = await cpuPerCall(svc, async () => {
      quoteRate = await throughput(16, SERVICE_WINDOW_MS, calls.quote);
      return (quoteRate * SERVICE_WINDOW_MS) / 1000;
    });
    await settleAll(calls, await prepareExecutions(calls, 200));
    const prepared = await prepareExecutions(calls, SETTLED_EXECUTIONS);
    let settledRate = 0;
    const settled = await cpuPerCall(svc, async () => {
      settledRate = await settleAll(calls, prepared);
      return prepared.length;
    });
    const from = clis.length > 1 ? ` [${cli}]` : "";
    process.stdout.write(
      `round ${r + 1}${from}: quotes ${quoteRate.toFixed(0)}/s (${quotes}); settled executions ${settledRate.toFixed(0)}/s ` +
        `(${prepared.length} quoted and signed before the window, POSTed by ${SETTLED_CLIENTS} clients; ${settled}); load before ${loadBefore}\n`,
    );
    svc.child.kill("SIGTERM");
  }
}

if (args.profile) {
  const svc = await startService(clis[0], [INSPECT_FLAG]);
  log("profiling the service under settled executions…");
  const session = await connectInspector(svc.inspector);
  const calls = await serviceCalls(svc);
  await settleAll(calls, await prepareExecutions(calls, 500));
  const prepared = await prepareExecutions(calls, SETTLED_EXECUTIONS);
  const cpu0 = cpuMs(svc.child.pid);
  const t0 = performance.now();
  const stop = await startCpuProfile(session);
  const rate = await settleAll(calls, prepared);
  const profile = await stop();
  if (args.save) writeFileSync(args.save, JSON.stringify(profile));
  const p = attribute(profile);
  const wall = performance.now() - t0;
  const count = prepared.length;
  const per = (ms) => (ms / count).toFixed(3).padStart(7);
  const lines = [
    `profiled: ${rate.toFixed(0)}/s; per settled execution ${per(p.busyMs)} ms busy (profile), ${per(cpuMs(svc.child.pid) - cpu0)} ms CPU (/proc, all threads) over ${(wall / 1000).toFixed(1)} s`,
    "groups:",
    ...p.groups.map(([g, ms]) => `  ${per(ms)}  ${g}`),
    "self time:",
    ...p.functions.map(([f, ms]) => `  ${per(ms)}  ${f}`),
    "ours, inclusive:",
    ...p.oursInclusive.map(([f, ms]) => `  ${per(ms)}  ${f}`),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  session.close();
  svc.child.kill("SIGTERM");
}
process.exit(0);
