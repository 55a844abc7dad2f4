// Launch through npm (`node test/bench/bench.mjs --only launch`; not part of a full run: it
// installs the package with npm three times, each building the native SQLite module, and
// npm fetches from the npm registry whatever dependency its cache lacks). The package as
// `npm pack` makes it, served as if published by a registry on 127.0.0.1
// (local-registry.mjs), launched the ways a host can launch it, warm: after a first launch
// that installed it (reported apart). npm's package cache is the user's own (the packages are
// the same); its npx cache is a fresh one under the work dir.
//   npx (registry)        `npx -y paid-actions-mcp`, as the README's host configs say, with
//                         npm's default `omit-lockfile-registry-resolved=false`
//   npx, omit-resolved    the same with `omit-lockfile-registry-resolved=true`: npx cannot
//                         tell its install is current and installs again at each launch
//   npx --prefer-offline  `npx -y --prefer-offline paid-actions-mcp`
//   npx file:             `npx -y file:/…/paid-actions-mcp-<version>.tgz` (before publishing)
//   global bin            `npm install -g` of the tarball into a prefix, then its bin
//   node dist/cli.js      `node` on the installed package's dist/cli.js: the server alone
// Each launch speaks raw JSON-RPC lines (2025 era): timed from just before spawn to the
// `initialize` answer and to the `tools/list` answer; each form on its own home (its catalog
// snapshot written by the first launch). Rounds alternate the forms.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { startLocalRegistry } from "./local-registry.mjs";

const FIRST_TIMEOUT_MS = 400_000;
const WARM_TIMEOUT_MS = 30_000;
const CLIENT = { name: "bench", version: "1.0.0" };

/** This process's environment as a user's shell has it: no npm_* variables naming the checkout. */
function userEnv(extra) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|NODE_OPTIONS$)/i.test(k)));
  return { ...env, ...extra };
}

/** One launch: spawn → initialize answer → tools/list answer; then stdin closed, exit awaited. */
async function launch(form, timeoutMs) {
  const t0 = process.hrtime.bigint();
  const child = spawn(form.command, form.args, { cwd: form.cwd, env: form.env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.on("error", () => undefined);
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  const exited = new Promise((r) => child.once("close", r));
  const out = await new Promise((resolve) => {
    const at = {};
    const timer = setTimeout(() => resolve({ ...at, problem: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
    exited.then(() => resolve({ ...at, problem: "exited before answering" }));
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (msg.id === 1) {
          at.initMs = ms;
          send({ jsonrpc: "2.0", method: "notifications/initialized" });
          send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
        } else if (msg.id === 2) {
          clearTimeout(timer);
          resolve({ ...at, toolsMs: ms, tools: msg.result?.tools?.length });
        }
      }
    });
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: CLIENT },
    });
  });
  child.stdin.end();
  const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(kill);
  const npmWarn = stderr.split("\n").filter((l) => /^npm warn/i.test(l)).length;
  if (out.problem) out.problem += ` [stderr: ${stderr.trim().split("\n").slice(-2).join(" | ").slice(0, 300)}]`;
  return { ...out, npmWarn };
}

/** Waits (up to 10 min) until the 1-minute load average is below 1.5: a shared machine's other work is not ours to time. */
async function quiet(log) {
  for (let waited = 0; loadavg()[0] >= 1.5 && waited < 600; waited += 5) {
    if (waited % 60 === 0) log(`launch: load average ${loadavg()[0].toFixed(2)}; waiting for it to fall below 1.5`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? { median: s[Math.floor((s.length - 1) / 2)], min: s[0], max: s[s.length - 1], n: s.length } : {};
};

export async function launchFigures({ root, work, log, runs }) {
  const dir = join(work, "launch");
  mkdirSync(dir, { recursive: true });
  const packed = JSON.parse(
    execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
      cwd: root,
      env: userEnv(),
      encoding: "utf8",
    }),
  );
  const tarball = join(dir, packed[0].filename);
  const registry = await startLocalRegistry(tarball);
  // npm's package cache is the user's (warm); npx's own caches are new: one for the forms
  // that keep npm's default lock files, one for omit-resolved (which rewrites the lock file).
  const userCache = execFileSync("npm", ["config", "get", "cache"], { env: userEnv(), encoding: "utf8" }).trim();
  const cacheDir = (name) => {
    const cache = join(dir, `npm-cache-${name}`);
    mkdirSync(cache, { recursive: true });
    symlinkSync(join(userCache, "_cacache"), join(cache, "_cacache"));
    return cache;
  };
  const caches = { main: cacheDir("main"), omit: cacheDir("omit") };
  const env = (name, extra = {}, cache = caches.main) =>
    userEnv({
      npm_config_cache: cache,
      npm_config_registry: registry.url,
      npm_config_update_notifier: "false",
      npm_config_omit_lockfile_registry_resolved: "false",
      PAID_ACTIONS_HOME: join(dir, `home-${name}`),
      ...extra,
    });
  const global = join(dir, "global");
  const forms = [
    { key: "npx", label: "npx -y paid-actions-mcp", command: "npx", args: ["-y", registry.name], env: env("npx") },
    {
      key: "npxOmitResolved",
      label: "the same, omit-lockfile-registry-resolved=true",
      command: "npx",
      args: ["-y", registry.name],
      env: env("omit", { npm_config_omit_lockfile_registry_resolved: "true" }, caches.omit),
    },
    {
      key: "npxPreferOffline",
      label: "npx -y --prefer-offline paid-actions-mcp",
      command: "npx",
      args: ["-y", "--prefer-offline", registry.name],
      env: env("offline"),
    },
    {
      key: "npxFile",
      label: "npx -y file:…/paid-actions-mcp-<version>.tgz",
      command: "npx",
      args: ["-y", `file:${tarball}`],
      env: env("file"),
    },
    {
      key: "globalBin",
      label: "global install's bin (npm install -g)",
      command: join(global, "bin", registry.name),
      args: [],
      env: env("global"),
    },
    {
      key: "node",
      label: "node …/dist/cli.js (the server alone)",
      command: process.execPath,
      args: [join(global, "lib", "node_modules", registry.name, "dist", "cli.js")],
      env: env("node"),
    },
  ];
  // npx looks for the package in its working directory's project first: not the checkout's.
  const cwd = join(dir, "cwd");
  mkdirSync(cwd);
  for (const form of forms) form.cwd = cwd;
  const results = { tarball: packed[0].filename, runs, first: {}, warm: {}, load: [] };
  log(`launch: installing globally into ${global}`);
  const t = performance.now();
  // Not spawnSync: the registry answers npm from this process's event loop.
  const installed = await new Promise((resolve, reject) => {
    const child = spawn("npm", ["install", "-g", "--prefix", global, tarball, "--no-audit", "--no-fund"], {
      env: env("global"),
    });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
  if (installed.status !== 0) throw new Error(`npm install -g: ${installed.stderr}`);
  results.globalInstallSeconds = (performance.now() - t) / 1000;
  results.globalInstallNpmWarn = `${installed.stdout}${installed.stderr}`
    .split("\n")
    .filter((l) => /^npm warn/i.test(l));
  for (const form of forms) {
    log(`launch: first launch, ${form.label}`);
    results.first[form.key] = await launch(form, FIRST_TIMEOUT_MS);
    // omit-resolved starts from the install the first form made (no second native build).
    if (form.key === "npx") cpSync(join(caches.main, "_npx"), join(caches.omit, "_npx"), { recursive: true });
  }
  const samples = Object.fromEntries(forms.map((f) => [f.key, []]));
  for (let round = 0; round < runs; round++) {
    await quiet(log);
    results.load.push(loadavg()[0]);
    for (const form of forms) samples[form.key].push(await launch(form, WARM_TIMEOUT_MS));
  }
  results.load.push(loadavg()[0]);
  for (const form of forms) {
    const ok = samples[form.key].filter((s) => !s.problem);
    results.warm[form.key] = {
      label: form.label,
      init: stats(ok.map((s) => s.initMs)),
      tools: stats(ok.map((s) => s.toolsMs)),
      npmWarnPerLaunch: Math.max(0, ...samples[form.key].map((s) => s.npmWarn)),
      problems: samples[form.key].flatMap((s) => s.problem ?? []),
    };
  }
  results.registryRequests = registry.counts;
  await registry.close();
  return results;
}

const ms = (s) =>
  s?.median === undefined ? "—" : `${s.median.toFixed(0)} ms (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;

/** The section's lines for the report. */
export function formatLaunch(r) {
  const lines = [
    `Launch through npm, warm (${r.runs} launches each, rounds alternating the forms; median (min–max)):`,
    "",
    "| Form | spawn → initialize answer | spawn → tools/list answer | npm warn lines a launch |",
    "|---|---|---|---|",
  ];
  for (const w of Object.values(r.warm)) {
    lines.push(`| ${w.label} | ${ms(w.init)} | ${ms(w.tools)} | ${w.npmWarnPerLaunch} |`);
    for (const p of w.problems) lines.push(`|   problem: ${p} | | | |`);
  }
  const first = Object.entries(r.first)
    .map(([k, f]) => `${k} ${f.initMs === undefined ? f.problem : `${(f.initMs / 1000).toFixed(1)} s`}`)
    .join("; ");
  lines.push(
    "",
    `First launches (installing): ${first}. Global install: ${r.globalInstallSeconds.toFixed(1)} s, ` +
      `its npm warn lines: ${r.globalInstallNpmWarn.length ? r.globalInstallNpmWarn.join(" / ") : "none"}.`,
    `1-minute load average across the rounds: ${r.load.map((l) => l.toFixed(2)).join(", ")}.`,
    `Local registry requests: ${JSON.stringify(r.registryRequests)}.`,
  );
  return lines;
}
