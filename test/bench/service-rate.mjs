// `node test/bench/service-rate.mjs [--profile] [--rounds N]`: section 6 of `npm run bench`
// (scale.mjs's `service`: quotes/s, then settled paid executions/s from SETTLED_CLIENTS
// clients) alone, against a fresh reference service in its own process, N rounds. With
// --profile, one more window of settled executions runs under V8's sampling profiler in the
// service's process (as cpu-profile.mjs does), with the process's CPU time from /proc, and the
// top frames are printed (--save FILE keeps the raw .cpuprofile). Run `npm run build` first: it measures dist/.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { log, SERVICE_WINDOW_MS, startSandbox } from "./common.mjs";
import { connectInspector, cpuMs, INSPECT_FLAG, startCpuProfile } from "./inspector.mjs";
import { attribute } from "./profile-attribution.mjs";
import { serviceCalls, SETTLED_CLIENTS, throughput } from "./scale.mjs";

const args = parseArgs({
  options: { profile: { type: "boolean" }, rounds: { type: "string" }, save: { type: "string" } },
}).values;
const rounds = Number(args.rounds ?? 1);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

const svc = await startSandbox("sandbox-rate", 0, args.profile ? [INSPECT_FLAG] : []);
const { quote, settled } = await serviceCalls(svc);
/** One phase of section 6, as service() runs it, with the CPU time both processes spent in it. */
async function phase(clients, windowMs, once) {
  const cpu0 = cpuMs(svc.child.pid);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  const rate = await throughput(clients, windowMs, once);
  const wall = performance.now() - t0;
  const own = process.cpuUsage(own0);
  const n = (rate * windowMs) / 1000;
  const per = (ms) => (ms / n).toFixed(2);
  return `${rate.toFixed(0)}/s (CPU per call: service ${per(cpuMs(svc.child.pid) - cpu0)} ms, client ${per((own.user + own.system) / 1000)} ms; ${(wall / 1000).toFixed(1)} s)`;
}
for (let r = 0; r < rounds; r++) {
  const loadBefore = load();
  const quotes = await phase(16, SERVICE_WINDOW_MS, quote);
  const settledLine = await phase(SETTLED_CLIENTS, SERVICE_WINDOW_MS * 2, settled);
  process.stdout.write(
    `round ${r + 1}: quotes ${quotes}; settled executions ${settledLine}; load before ${loadBefore}\n`,
  );
}

if (args.profile) {
  log("profiling the service under settled executions…");
  const session = await connectInspector(svc.inspector);
  const cpu0 = cpuMs(svc.child.pid);
  const t0 = performance.now();
  const stop = await startCpuProfile(session);
  const rate = await throughput(SETTLED_CLIENTS, SERVICE_WINDOW_MS, settled);
  const profile = await stop();
  if (args.save) writeFileSync(args.save, JSON.stringify(profile));
  const p = attribute(profile);
  const wall = performance.now() - t0;
  const count = Math.round((rate * SERVICE_WINDOW_MS) / 1000);
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
}
svc.child.kill("SIGTERM");
process.exit(0);
