// Start-up figures for `npm run bench`: our server (`node dist/cli.js`, sandbox mode, cached
// catalog, and a fresh home per spawn) against a minimal one-tool v2 SDK stdio server
// (minimal-server.mjs), in both protocol eras, speaking raw JSON-RPC lines on the child's stdio (no client library, whose overhead is
// not the server's). Each run is one spawn, timed with process.hrtime.bigint from just before
// spawn until the awaited response line is read on stdout.
//   2025 era: first answer = the `initialize` response; tools/list = initialize, then
//             notifications/initialized, then tools/list, until the tools/list response.
//   2026 era: first answer = the `server/discover` response; tools/list = tools/list sent at
//             once with the per-request _meta envelope (as the v2 client does on its session
//             process after its probe), until its response.
//   fresh home: the same tools/list cells, our server spawned each time on a new, empty
//             PAID_ACTIONS_HOME (no catalog cached, no sandbox yet; removed after the run); the
//             minimal server, which has no home, runs its tools/list cells again beside it.
// A cell whose first run gets no valid answer (an error, a 2025-shaped result to a 2026-era
// request, silence for 10 s, an early exit) is reported "not served" and not run again.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";

export const STARTUP_TARGETS = { first: 1.15, tools: 1.3 };
const MEASURE_TIMEOUT_MS = 10_000;
const EXIT_GRACE_MS = 5_000;
const MODERN = "2026-07-28";
const LEGACY = "2025-11-25";
const CLIENT = { name: "bench", version: "1.0.0" };
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": CLIENT,
};

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: CLIENT },
};
const problemOfTools = (r) =>
  Array.isArray(r?.tools) && r.tools.length > 0 ? undefined : "tools/list result without tools";
const problemOfModern = (r) =>
  r?.resultType === "complete"
    ? undefined
    : r?.resultType === undefined
      ? "answered in the 2025 shape (no resultType, which 2026-07-28 requires)"
      : `resultType ${JSON.stringify(r.resultType)}`;

/** What each cell sends, which response id it waits for, and what makes that response valid. */
const CELLS = [
  {
    key: "legacyFirst",
    era: "2025",
    measure: "first",
    label: "2025 era: spawn → initialize answer",
    open: [initialize],
    awaitId: 1,
    problem: (r) => (typeof r?.protocolVersion === "string" ? undefined : "initialize result without protocolVersion"),
  },
  {
    key: "legacyTools",
    era: "2025",
    measure: "tools",
    label: "2025 era: spawn → tools/list answer",
    open: [initialize],
    awaitId: 2,
    next: {
      1: [
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/list" },
      ],
    },
    problem: problemOfTools,
  },
  {
    key: "modernFirst",
    era: "2026",
    measure: "first",
    label: "2026 era: spawn → server/discover answer",
    open: [{ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: ENVELOPE } }],
    awaitId: 1,
    problem: (r) =>
      problemOfModern(r) ??
      (r.supportedVersions?.includes(MODERN)
        ? undefined
        : `supportedVersions ${JSON.stringify(r.supportedVersions)} lacks ${MODERN}`),
  },
  {
    key: "modernTools",
    era: "2026",
    measure: "tools",
    label: "2026 era: spawn → tools/list answer",
    open: [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: ENVELOPE } }],
    awaitId: 1,
    problem: (r) => problemOfModern(r) ?? problemOfTools(r),
  },
];
// The tools/list cells again, on a fresh home per spawn (ours; the minimal server has none).
for (const key of ["legacyTools", "modernTools"]) {
  const c = CELLS.find((x) => x.key === key);
  CELLS.push({ ...c, key: `${key}Fresh`, label: c.label, fresh: true });
}

const live = new Set();
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/**
 * One spawn: writes the cell's opening lines, answers intermediate responses with the cell's
 * next lines, and stops the clock at the awaited response. Then closes stdin and waits for the
 * child to exit, killing it with SIGKILL after 5 s.
 */
async function once(server, cell) {
  // A fresh home for our server: made before the clock starts, removed after the child exits.
  const home = cell.fresh && server.freshHomes ? mkdtempSync(join(server.freshHomes, "h-")) : undefined;
  const env = home ? { ...server.env, PAID_ACTIONS_HOME: home } : server.env;
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, server.args, {
    cwd: server.cwd,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  let stderr = "";
  child.stderr.on("data", (d) => {
    if (stderr.length < 20_000) stderr += d;
  });
  child.stdin.on("error", () => undefined); // EPIPE when a child exits first: reported below
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  const ended = (event) =>
    new Promise((r) => {
      child.once(event, (code, signal) => r({ code, signal }));
      child.once("error", (e) => r({ error: e })); // not spawned: no exit or close event follows
    });
  const exited = ended("exit");
  const closed = ended("close"); // after the exit and the last stdout bytes
  const outcome = await new Promise((resolve) => {
    let finished = false;
    const done = (o) => {
      finished = true;
      clearTimeout(timer);
      resolve(o);
    };
    const timer = setTimeout(
      () => done({ problem: `no answer within ${MEASURE_TIMEOUT_MS / 1000} s`, tellStderr: true }),
      MEASURE_TIMEOUT_MS,
    );
    closed.then(({ code, signal, error }) =>
      done({
        problem: error ? `spawn failed: ${error.message}` : `exited (${signal ?? `code ${code}`}) before answering`,
        tellStderr: true,
      }),
    );
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while (!finished && (nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const at = process.hrtime.bigint();
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          return done({ problem: `non-JSON line on stdout: ${line.slice(0, 80)}` });
        }
        if (msg.id === undefined || msg.method !== undefined) continue; // notifications, requests to the client
        if (msg.error) return done({ problem: `error ${msg.error.code} ${msg.error.message}` });
        if (msg.id === cell.awaitId) {
          const problem = cell.problem(msg.result);
          // Whether the embedded sandbox had written its sandbox.json by then (a fresh home only).
          const sandboxUp = home ? existsSync(join(home, "sandbox", "sandbox.json")) : false;
          return done(
            problem ? { problem } : { ms: Number(at - t0) / 1e6, tools: msg.result.tools?.length, sandboxUp },
          );
        }
        const problem = msg.id === 1 && cell.open[0].method === "initialize" ? CELLS[0].problem(msg.result) : undefined;
        if (problem) return done({ problem });
        for (const m of cell.next?.[msg.id] ?? []) send(m);
      }
    });
    for (const m of cell.open) send(m);
  });
  child.stdin.end();
  let killed = false;
  const grace = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, EXIT_GRACE_MS);
  await exited;
  clearTimeout(grace);
  live.delete(child);
  if (home) rmSync(home, { recursive: true, force: true });
  const { tellStderr, ...result } = outcome;
  if (tellStderr && stderr.trim())
    result.problem += ` [stderr: ${stderr.trim().split("\n").slice(-1)[0].slice(0, 160)}]`;
  return { ...result, killed, catalogFetched: /tool\(s\) from the service/.test(stderr) };
}

function quantiles(samples) {
  if (samples.length === 0) return undefined;
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))];
  return { n: s.length, median: q(0.5), p90: q(0.9), min: s[0], max: s[s.length - 1] };
}

/** Runs the whole start-up section; returns plain data (written to the results JSON). */
export async function startupFigures({
  root,
  work,
  log = () => undefined,
  runs = Number(process.env.BENCH_STARTUP_RUNS) || 15,
}) {
  const started = process.hrtime.bigint();
  const home = join(work, "startup-home");
  const freshHomes = join(work, "startup-fresh");
  mkdirSync(home, { recursive: true });
  mkdirSync(freshHomes, { recursive: true });
  const servers = {
    ours: {
      args: [join(root, "dist", "cli.js")],
      cwd: root,
      env: { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home },
      freshHomes,
    },
    minimal: {
      args: [join(root, "test", "bench", "minimal-server.mjs")],
      cwd: root,
      env: { PATH: process.env.PATH ?? "" },
    },
  };
  log(`start-up: our server vs a minimal v2 SDK server, both eras, ${runs} runs each…`);
  // Our server once on the bench home, so that every measured run answers from the cached catalog;
  // the minimal server once too, so that both start with their files in the page cache.
  const warm = {};
  for (const name of ["ours", "minimal"]) {
    const w = await once(servers[name], CELLS[1]);
    warm[name] =
      (w.problem ? `warm-up failed: ${w.problem}` : `ok, ${w.tools} tool(s)`) +
      (w.killed ? " (killed with SIGKILL 5 s after stdin closed)" : "");
    if (w.problem) log(`  ${name}: ${warm[name]}`);
  }
  const cells = {};
  for (const name of Object.keys(servers))
    for (const c of CELLS)
      cells[`${name}.${c.key}`] = { samples: [], failures: [], killed: 0, catalogFetched: 0, sandboxUp: 0 };
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? ["ours", "minimal"] : ["minimal", "ours"];
    for (const c of CELLS) {
      for (const name of order) {
        const cell = cells[`${name}.${c.key}`];
        if (cell.notServed) continue;
        const r = await once(servers[name], c);
        if (r.killed) cell.killed++;
        if (r.catalogFetched && name === "ours") cell.catalogFetched++;
        if (r.sandboxUp) cell.sandboxUp++;
        if (r.problem === undefined) {
          cell.samples.push(r.ms);
          cell.tools = r.tools;
        } else if (cell.samples.length === 0 && cell.failures.length === 0) cell.notServed = r.problem;
        else cell.failures.push(r.problem);
      }
    }
  }
  const out = { runs, targets: STARTUP_TARGETS, warmUp: warm, cells: {}, ratios: {} };
  for (const [key, cell] of Object.entries(cells)) {
    out.cells[key] = {
      ...quantiles(cell.samples),
      notServed: cell.notServed,
      failures: cell.failures,
      killedAfter5s: cell.killed,
      catalogFetched: cell.catalogFetched,
      sandboxUpAtAnswer: cell.sandboxUp,
      tools: cell.tools,
    };
  }
  for (const c of CELLS) {
    const a = out.cells[`ours.${c.key}`];
    const b = out.cells[`minimal.${c.key}`];
    const target = STARTUP_TARGETS[c.measure];
    const ratio = a.median !== undefined && b.median !== undefined ? a.median / b.median : undefined;
    out.ratios[c.key] = { ratio, target, met: ratio === undefined ? undefined : ratio <= target };
  }
  out.durationSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  return out;
}

/** The section of the printed table. */
export function formatStartup(r) {
  const f = (v) => (v === undefined ? "-" : v < 10 ? v.toFixed(2) : v.toFixed(1));
  const lines = [];
  const row = (...cells) =>
    lines.push(cells.map((c, i) => String(c).padEnd([56, 11, 9, 11, 9, 8, 0][i] ?? 0)).join(""));
  lines.push("");
  lines.push(
    `Start-up, spawn → answer (ms; ${r.runs} runs per cell, servers alternated; ours = node dist/cli.js, sandbox mode, cached catalog`,
  );
  lines.push(
    `  or a new empty home per spawn (fresh home); minimal = test/bench/minimal-server.mjs, v2 SDK serveStdio, 1 tool)`,
  );
  row("", "ours", "", "minimal", "", "ratio", "");
  row("", "median", "p90", "median", "p90", "p50", "target");
  const notes = [];
  for (const c of CELLS) {
    const a = r.cells[`ours.${c.key}`];
    const b = r.cells[`minimal.${c.key}`];
    const q = r.ratios[c.key];
    const label = `  ${c.label}${c.fresh ? " (fresh home)" : c.measure === "tools" ? " (cached catalog)" : ""}`;
    const verdict = q.ratio === undefined ? "not assessed" : q.met ? "met" : "MISSED";
    row(
      label,
      a.notServed ? "not served" : f(a.median),
      a.notServed ? "" : f(a.p90),
      b.notServed ? "not served" : f(b.median),
      b.notServed ? "" : f(b.p90),
      q.ratio === undefined ? "-" : q.ratio.toFixed(2),
      `<= ${q.target}: ${verdict}`,
    );
    for (const [name, cell] of [
      ["ours", a],
      ["minimal", b],
    ]) {
      if (cell.notServed) notes.push(`  ${name}, ${c.label}: not served — ${cell.notServed}`);
      if (cell.failures.length)
        notes.push(
          `  ${name}, ${c.label}: ${cell.failures.length} run(s) failed after a served one, e.g. ${cell.failures[0]}`,
        );
      if (cell.killedAfter5s)
        notes.push(
          `  ${name}, ${c.label}: ${cell.killedAfter5s} child(ren) still running 5 s after stdin closed, killed with SIGKILL`,
        );
      if (cell.sandboxUpAtAnswer)
        notes.push(
          `  ${name}, ${c.label} (fresh home): ${cell.sandboxUpAtAnswer} of ${cell.n ?? 0} answer(s) came after the embedded sandbox had started`,
        );
      if (cell.catalogFetched)
        notes.push(
          `  ${name}, ${c.label}: ${cell.catalogFetched} run(s) fetched the catalog instead of using the cached one`,
        );
    }
  }
  lines.push(...notes);
  const killed = Object.values(r.cells).reduce((s, c) => s + c.killedAfter5s, 0);
  if (killed === 0) lines.push("  every child exited on its own after stdin closed");
  lines.push(
    `  warm-up: ours ${r.warmUp.ours}; minimal ${r.warmUp.minimal}. Start-up section took ${r.durationSeconds.toFixed(1)} s.`,
  );
  return lines;
}
