// `npm run bench -- --only profile` (or `--only cpu-profile`, its first name): where the CPU of
// a paid call goes, in the MCP server and in the reference service. V8's sampling profiler
// runs in the profiled process through the inspector (inspector.mjs), started and stopped
// around the measured work only, and each profile is written to .bench/profile/:
//   the MCP server over stdio: `calls` paid calls after a warm-up, and the quiet after them in
//     which its reconciler verifies each settlement (so its work is in the profile) — the
//     `servers_provision` action on Solana (mcp.cpuprofile), then, when the sandbox runs its
//     EVM ledger, `paid_fetch` of its paid resource on EVM (mcp-evm.cpuprofile);
//   the reference service (its own process, started with the inspector): SETTLED_EXECUTIONS
//     executions quoted and signed before the profile starts, settled in it from SETTLED_CLIENTS
//     clients, as section 6 of the bench does.
// Each sample is charged to the innermost JavaScript frame that has a source file (so the time
// a native call takes — a SQLite commit waiting for the disk, ed25519 in WebCrypto — counts for
// the code that called it), grouped by package, by Node's internal module, or by our dist/
// folder; the MCP server's samples also by phase of the call (profile-phases.mjs). Beside the
// profile, the process's CPU time over the same window from /proc: the profile counts a
// thread blocked in a synchronous call as busy, /proc does not.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { INPUT, log, mcpClient, QUICK, ROOT, serviceEnv, sleep, startSandbox, work } from "./common.mjs";
import { connectInspector, cpuMs, INSPECT_FLAG, startCpuProfile } from "./inspector.mjs";
import { attribute } from "./profile-attribution.mjs";
import { attributePhases } from "./profile-phases.mjs";
import { prepareExecutions, serviceCalls, SETTLED_CLIENTS, SETTLED_EXECUTIONS, settleAll } from "./scale.mjs";
import { evmPaidFetch, evmServiceEnv } from "./wan-sides.mjs";

const WARM_UP = 10;

/** The Solana rail's paid call: the catalog's `servers_provision` action. */
async function solanaCall(client) {
  const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
  if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
}
const QUIET_MS = 2500;

/** Where the profiles are written, as Chrome DevTools and `node --cpu-prof` write them. */
export const PROFILE_DIR = join(ROOT, ".bench", "profile");

/**
 * Profiles `work()` in the process behind `session`, with its /proc CPU over the same window;
 * the profile is written to PROFILE_DIR/`name`.cpuprofile (DevTools → Performance → Load).
 */
async function profiled(session, pid, name, work, { phases = false } = {}) {
  const cpu0 = cpuMs(pid);
  const t0 = performance.now();
  const stop = await startCpuProfile(session);
  const count = await work();
  const profile = await stop();
  const wallMs = performance.now() - t0;
  mkdirSync(PROFILE_DIR, { recursive: true });
  const file = join(PROFILE_DIR, `${name}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  const byPhase = phases ? attributePhases(profile) : undefined;
  return { count, wallMs, cpuMs: cpuMs(pid) - cpu0, file, ...attribute(profile), byPhase };
}

/** The MCP server over stdio with `env`, inspected: `calls` paid calls of `call(client)` profiled, by phase too. */
async function profileMcp(name, env, call, calls) {
  const { client, pid, inspector } = await mcpClient(env, { inspect: true });
  for (let i = 0; i < WARM_UP; i++) await call(client);
  await sleep(QUIET_MS);
  const load = async () => {
    for (let i = 0; i < calls; i++) await call(client);
    await sleep(QUIET_MS);
    return calls;
  };
  const p = await profiled(inspector, pid, name, load, { phases: true });
  inspector.close();
  await client.close();
  return { ...p, quietMs: QUIET_MS };
}

export async function cpuProfiles(svc, calls = QUICK ? 60 : 300) {
  log(
    `profile: the MCP server over ${calls} paid calls (servers_provision on Solana${svc.info.evm ? ", then paid_fetch on EVM" : ""}), then the reference service under settled executions…`,
  );
  const mcp = await profileMcp("mcp", serviceEnv(svc.info, join(work, "prof-mcp")), solanaCall, calls);
  // The EVM rail's paid call, on loopback as the Solana one: paid_fetch of the sandbox's resource.
  const origin = new URL(svc.info.baseUrl).origin;
  const mcpEvm = svc.info.evm
    ? await profileMcp(
        "mcp-evm",
        evmServiceEnv(svc.info, join(work, "prof-mcp-evm"), { origin, rpcUrl: svc.info.evm.rpcUrl }),
        (client) => evmPaidFetch(client, origin),
        calls,
      )
    : undefined;

  const prof = await startSandbox("sandbox-prof", 0, [INSPECT_FLAG]);
  const session = await connectInspector(prof.inspector);
  // As section 6: executions quoted and signed before the profile, only their settlement in it.
  const svcCalls = await serviceCalls(prof);
  await settleAll(svcCalls, await prepareExecutions(svcCalls, 500));
  const prepared = await prepareExecutions(svcCalls, SETTLED_EXECUTIONS);
  const service = await profiled(session, prof.child.pid, "service", async () => {
    await settleAll(svcCalls, prepared);
    return prepared.length;
  });
  session.close();
  prof.child.kill("SIGTERM");
  return { mcp, mcpEvm, service: { ...service, clients: SETTLED_CLIENTS } };
}

function formatOne(title, p, unit) {
  const per = (ms) => (ms / p.count).toFixed(2);
  const lines = [
    "",
    title,
    `  profile written to ${relative(ROOT, p.file)} (Chrome DevTools: Performance, Load profile)`,
    `  per ${unit}: ${per(p.busyMs)} ms of profile samples (busy, a blocking call included); ${per(p.cpuMs)} ms of CPU from /proc (all threads)`,
  ];
  if (p.byPhase) lines.push(...formatPhases(p.byPhase, per, unit));
  lines.push(`  by package, Node module and folder of the innermost frame with a source file (ms per ${unit}):`);
  for (const [group, ms] of p.groups) if (ms / p.count >= 0.05) lines.push(`    ${per(ms).padStart(6)}  ${group}`);
  lines.push(`  top frames by self time (ms per ${unit}; a native frame, "run" for SQLite, without a file):`);
  for (const [fn, ms] of p.functions.slice(0, 10)) lines.push(`    ${per(ms).padStart(6)}  ${fn}`);
  lines.push(`  our functions with the most samples, what they called included (ms per ${unit}):`);
  for (const [fn, ms] of p.oursInclusive.slice(0, 12)) lines.push(`    ${per(ms).padStart(6)}  ${fn}`);
  return lines;
}

/** The phases of a paid call (profile-phases.mjs), each with its share of the samples, then what no phase names. */
function formatPhases(b, per, unit) {
  const share = (ms) => `${((ms / b.busyMs) * 100).toFixed(0).padStart(3)} %`;
  const lines = [`  by phase of the call (the innermost frame on the stack that names one; ms per ${unit}, share):`];
  for (const [label, ms] of b.phases) lines.push(`    ${per(ms).padStart(6)} ${share(ms)}  ${label}`);
  const rest = b.unattributed.reduce((sum, [, ms]) => sum + ms, 0);
  const top = b.unattributed
    .slice(0, 6)
    .map(([group, ms]) => `${group} ${per(ms)}`)
    .join(", ");
  lines.push(
    `    ${per(rest).padStart(6)} ${share(rest)}  no phase on the stack (an async continuation, a socket's data, GC): ${top}`,
  );
  return lines;
}

export function formatCpuProfiles(r) {
  const mcpTitle = (m, what) =>
    `CPU profile of the MCP server, ${what}: ${m.count} paid calls and ${m.quietMs / 1000} s of quiet after them (the reconciler's verification), ${(m.wallMs / 1000).toFixed(1)} s`;
  const s = r.service;
  return [
    ...formatOne(mcpTitle(r.mcp, "servers_provision on Solana"), r.mcp, "paid call"),
    ...(r.mcpEvm
      ? formatOne(mcpTitle(r.mcpEvm, "paid_fetch on EVM (eip155:84532)"), r.mcpEvm, "paid call")
      : ["", "CPU profile of the MCP server on EVM: not taken (the sandbox runs without its EVM ledger)"]),
    ...formatOne(
      `CPU profile of the reference service: ${s.count} settled executions in ${(s.wallMs / 1000).toFixed(1)} s from ${s.clients} clients (${((s.count * 1000) / s.wallMs).toFixed(0)}/s)`,
      s,
      "settled execution",
    ),
  ];
}
