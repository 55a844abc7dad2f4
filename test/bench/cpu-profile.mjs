// `npm run bench -- --only cpu-profile`: where the CPU of a paid call goes, in the MCP server
// and in the reference service. V8's sampling profiler runs in the profiled process through
// the inspector (inspector.mjs), started and stopped around the measured work only:
//   the MCP server over stdio: `calls` paid calls after a warm-up, and the quiet after them in
//     which its reconciler verifies each settlement (so its work is in the profile);
//   the reference service (its own process, started with the inspector): SETTLED_CLIENTS
//     clients paying settled executions for SERVICE_WINDOW_MS, as section 6 of the bench does.
// Each sample is charged to the innermost JavaScript frame that has a source file (so the time
// a native call takes — a SQLite commit waiting for the disk, ed25519 in WebCrypto — counts for
// the code that called it), grouped by package, by Node's internal module, or by our dist/
// folder. Beside the profile, the process's CPU time over the same window from /proc: the
// profile counts a thread blocked in a synchronous call as busy, /proc does not.
import { join } from "node:path";
import { INPUT, log, mcpClient, QUICK, serviceEnv, sleep, startSandbox, work } from "./common.mjs";
import { connectInspector, cpuMs, INSPECT_FLAG, startCpuProfile } from "./inspector.mjs";
import { serviceCalls, SETTLED_CLIENTS, throughput } from "./scale.mjs";

const WARM_UP = 10;
const QUIET_MS = 2500;
const SERVICE_WINDOW_MS = QUICK ? 4000 : 10_000;

/** The group a source file's code counts in. */
function groupOfUrl(url) {
  const path = url.replace(/^file:\/\//, "");
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `package ${pkg[1]}`;
  if (path.endsWith("/dist/vendor/litesvm.js")) return "LiteSVM (dist/vendor/litesvm.js, its native ledger under it)";
  if (path.includes("/dist/vendor/")) return "dist/vendor (Solana kit, x402 SVM: codecs, base58, addresses, signing)";
  const ours = /\/dist\/(.+)\/[^/]+\.js$/.exec(path) ?? /\/dist\/([^/]+)\.js$/.exec(path);
  if (ours) return `ours: dist/${ours[1]}`;
  if (path.startsWith("node:internal/deps/undici")) return "node: undici (fetch)";
  if (path.startsWith("node:internal/crypto") || path.startsWith("node:crypto")) return "node: crypto (WebCrypto)";
  if (path.startsWith("node:internal/streams") || path.startsWith("node:stream")) return "node: streams";
  if (path.startsWith("node:")) return `node: ${path.replace(/^node:(internal\/)?/, "")}`;
  // The one WebAssembly module a paid call runs: undici's HTTP parser (llhttp).
  if (path.startsWith("wasm://")) return "wasm (undici's llhttp)";
  return path;
}

/** Time per group and per function in a CPU profile (ms), idle left out. */
export function attribute(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const groupCache = new Map();
  const groupOf = (id) => {
    if (groupCache.has(id)) return groupCache.get(id);
    const own = byId.get(id).callFrame;
    let group;
    if (own.functionName === "(garbage collector)") group = "garbage collection";
    else if (own.functionName === "(program)") group = "(program: V8 and native work outside any JS frame)";
    else if (own.functionName === "(idle)") group = "(idle)";
    else {
      let n = byId.get(id);
      while (n && !n.callFrame.url) n = byId.get(parent.get(n.id));
      group = n ? groupOfUrl(n.callFrame.url) : "(native code without a JS caller)";
    }
    groupCache.set(id, group);
    return group;
  };
  const groups = new Map();
  const functions = new Map();
  const ours = oursInclusive(byId, parent);
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const id = profile.samples[i];
    const group = groupOf(id);
    if (group === "(idle)") continue;
    busy += ms;
    groups.set(group, (groups.get(group) ?? 0) + ms);
    const f = byId.get(id).callFrame;
    const fn = `${f.functionName || "(anonymous)"} ${f.url ? `${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}` : ""}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
    ours.add(id, ms);
  }
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy,
    groups: sorted(groups),
    functions: sorted(functions).slice(0, 15),
    oursInclusive: sorted(ours.totals).slice(0, 15),
  };
}

/**
 * Our own functions (dist/, not dist/vendor/) by inclusive time: a sample counts once for
 * every one of them on its stack, with what they called (`updatePayment` with its SQLite).
 */
function oursInclusive(byId, parent) {
  const totals = new Map();
  const stackCache = new Map();
  const namesOn = (id) => {
    if (stackCache.has(id)) return stackCache.get(id);
    const names = new Set();
    for (let n = byId.get(id); n; n = byId.get(parent.get(n.id))) {
      const f = n.callFrame;
      if (/\/dist\//.test(f.url) && !f.url.includes("/dist/vendor/"))
        names.add(`${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/dist\//, "")}:${f.lineNumber + 1}`);
    }
    stackCache.set(id, names);
    return names;
  };
  return {
    totals,
    add: (id, ms) => {
      for (const name of namesOn(id)) totals.set(name, (totals.get(name) ?? 0) + ms);
    },
  };
}

/** Profiles `work()` in the process behind `session`, with its /proc CPU over the same window. */
async function profiled(session, pid, work) {
  const cpu0 = cpuMs(pid);
  const t0 = performance.now();
  const stop = await startCpuProfile(session);
  const count = await work();
  const profile = await stop();
  return { count, wallMs: performance.now() - t0, cpuMs: cpuMs(pid) - cpu0, ...attribute(profile) };
}

export async function cpuProfiles(svc, calls = QUICK ? 60 : 300) {
  log(`cpu-profile: the MCP server over ${calls} paid calls, then the reference service under settled executions…`);
  const { client, pid, inspector } = await mcpClient(serviceEnv(svc.info, join(work, "prof-mcp")), { inspect: true });
  const call = async () => {
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
  };
  for (let i = 0; i < WARM_UP; i++) await call();
  await sleep(QUIET_MS);
  const mcp = await profiled(inspector, pid, async () => {
    for (let i = 0; i < calls; i++) await call();
    await sleep(QUIET_MS);
    return calls;
  });
  inspector.close();
  await client.close();

  const prof = await startSandbox("sandbox-prof", 0, [INSPECT_FLAG]);
  const session = await connectInspector(prof.inspector);
  const { settled } = await serviceCalls(prof);
  await throughput(SETTLED_CLIENTS, 2000, settled);
  const service = await profiled(session, prof.child.pid, async () =>
    Math.round(((await throughput(SETTLED_CLIENTS, SERVICE_WINDOW_MS, settled)) * SERVICE_WINDOW_MS) / 1000),
  );
  session.close();
  prof.child.kill("SIGTERM");
  return { mcp: { ...mcp, quietMs: QUIET_MS }, service: { ...service, clients: SETTLED_CLIENTS } };
}

function formatOne(title, p, unit) {
  const per = (ms) => (ms / p.count).toFixed(2);
  const lines = [
    "",
    title,
    `  per ${unit}: ${per(p.busyMs)} ms of profile samples (busy, a blocking call included); ${per(p.cpuMs)} ms of CPU from /proc (all threads)`,
  ];
  for (const [group, ms] of p.groups) if (ms / p.count >= 0.05) lines.push(`    ${per(ms).padStart(6)}  ${group}`);
  lines.push(`  functions with the most samples of their own (ms per ${unit}):`);
  for (const [fn, ms] of p.functions.slice(0, 10)) lines.push(`    ${per(ms).padStart(6)}  ${fn}`);
  lines.push(`  our functions with the most samples, what they called included (ms per ${unit}):`);
  for (const [fn, ms] of p.oursInclusive.slice(0, 12)) lines.push(`    ${per(ms).padStart(6)}  ${fn}`);
  return lines;
}

export function formatCpuProfiles(r) {
  const m = r.mcp;
  const s = r.service;
  return [
    ...formatOne(
      `CPU profile of the MCP server: ${m.count} paid calls and ${m.quietMs / 1000} s of quiet after them (the reconciler's verification), ${(m.wallMs / 1000).toFixed(1)} s`,
      m,
      "paid call",
    ),
    ...formatOne(
      `CPU profile of the reference service: ${s.count} settled executions in ${(s.wallMs / 1000).toFixed(1)} s from ${s.clients} clients (${((s.count * 1000) / s.wallMs).toFixed(0)}/s)`,
      s,
      "settled execution",
    ),
  ];
}
