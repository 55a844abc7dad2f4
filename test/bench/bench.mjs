// `npm run bench`: how fast a paid call is against its floor and a peer, how fast the server
// starts, what it costs to keep running, and how the reconciler and the journal scale.
// Everything runs against the reference service on 127.0.0.1, in one run, so ratios are fair.
// Prints a table and writes .bench/results.json. BENCH_QUICK=1 runs a smaller version.
// `--only startup` runs only the start-up section (startup.mjs) and writes .bench/startup.json.
import { spawn } from "node:child_process";
import { cpus, totalmem, release } from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { request } from "undici";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { startTestPostgres } from "../helpers/postgres.mjs";
import {
  CLI,
  COLD_RUNS,
  INPUT,
  log,
  loadWallet,
  mcpClient,
  ms,
  N_MEMORY,
  N_PAID,
  QUICK,
  ROOT,
  rssMb,
  serviceEnv,
  sleep,
  startSandbox,
  stats,
  timed,
  work,
  children,
} from "./common.mjs";
import { journal, reconciler, service } from "./scale.mjs";
import { startupFigures, formatStartup } from "./startup.mjs";

const { only: ONLY } = parseArgs({ options: { only: { type: "string" } } }).values;
if (ONLY !== undefined && ONLY !== "startup") throw new Error(`--only takes one section name: startup (not ${ONLY})`);

// ---- 1. Paid call latency: MCP server vs floor vs peer ------------------------------------

/** N_PAID paid calls through the MCP server over stdio, one after another (10 untimed first). */
async function mcpPaidCalls(env) {
  const { client } = await mcpClient(env);
  await client.listTools();
  const call = () => client.callTool({ name: "servers_provision", arguments: INPUT });
  for (let i = 0; i < 10; i++) await call();
  const samples = [];
  for (let i = 0; i < N_PAID; i++) {
    const t0 = performance.now();
    const r = await call();
    samples.push(performance.now() - t0);
    if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
  }
  await client.close();
  return samples;
}

async function paidCalls(svc) {
  log("1. paid call latency (MCP over stdio with SQLite, then PostgreSQL; floor; peer)…");
  const mcp = await mcpPaidCalls(serviceEnv(svc.info, join(work, "mcp-home")));
  // The same calls with the journal on PostgreSQL (a local server, fsync on, on loopback).
  const pgServer = await startTestPostgres();
  let mcpPostgres;
  try {
    const url = await pgServer.createDatabase("bench");
    mcpPostgres = await mcpPaidCalls(
      serviceEnv(svc.info, join(work, "mcp-home-pg"), { PAID_ACTIONS_JOURNAL_URL: url }),
    );
  } finally {
    await pgServer.stop();
  }

  // The floor: the same HTTP requests in a tight loop with undici, proofs built the same way,
  // and the same number of journal commits (WAL, synchronous=FULL).
  const wallet = await loadWallet(svc.info.walletPath);
  const scheme = new ExactSvmScheme(wallet, { rpcUrl: svc.info.rpcUrl });
  const db = new Database(join(work, "floor.sqlite"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE IF NOT EXISTS intents (id INTEGER PRIMARY KEY, state TEXT, data TEXT)");
  const insert = db.prepare("INSERT INTO intents (state, data) VALUES (?, ?)");
  const update = db.prepare("UPDATE intents SET state = ?, data = ? WHERE id = ?");
  const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
  let k = 0;
  const http = async (method, path, body, extra = {}) => {
    const res = await request(`${svc.info.baseUrl}${path}`, {
      method,
      headers: { ...headers, ...extra },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.statusCode, body: await res.body.json() };
  };
  const floorOnce = async () => {
    const key = `floor-${process.pid}-${k++}`;
    const id = insert.run("new", key).lastInsertRowid; // 1 intent
    const q = await http(
      "POST",
      "/quotes",
      { action: "servers.provision", input: INPUT, budget: { amount: "10", currency: "USDC" } },
      { "idempotency-key": key },
    );
    update.run("quoted", JSON.stringify(q.body), id); // 2 quote
    const pre = await http(
      "POST",
      "/executions",
      { action: "servers.provision", input: INPUT },
      { "idempotency-key": key, "x-quote-id": q.body.quoteId },
    );
    if (pre.status !== 402) throw new Error(`floor preflight ${pre.status}`);
    const reqs = q.body.paymentRequirement.accepts[0];
    db.transaction(() => update.run("reserved", "", id)).immediate(); // 3 reservation
    const p = await scheme.createPaymentPayload(2, reqs);
    const proof = Buffer.from(JSON.stringify({ ...p, accepted: reqs })).toString("base64");
    update.run("signed", proof, id); // 4 proof
    const c = await http(
      "POST",
      "/payments/confirm",
      { quoteId: q.body.quoteId, paymentProof: proof },
      { "idempotency-key": key },
    );
    if (c.status !== 200) throw new Error(`floor confirm ${c.status}`);
    update.run("paid", JSON.stringify(c.body), id); // 5 payment
    const e = await http(
      "POST",
      "/executions",
      { action: "servers.provision", input: INPUT },
      { "idempotency-key": key, "x-quote-id": q.body.quoteId, "x-payment-proof": proof },
    );
    if (e.status !== 201) throw new Error(`floor execution ${e.status}`);
    update.run("executed", JSON.stringify(e.body), id); // 6 execution (the engine ends its lease in the same commit)
  };
  for (let i = 0; i < 10; i++) await timed(floorOnce);
  const floor = [];
  for (let i = 0; i < N_PAID; i++) await timed(floorOnce, floor);
  db.close();

  // The peer: a stock x402 client paying POST /executions (402, pay, retry).
  const peerClient = new x402Client();
  peerClient.register("solana:*", new ExactSvmScheme(wallet, { rpcUrl: svc.info.rpcUrl }));
  const paidFetch = wrapFetchWithPayment(fetch, peerClient);
  const peerOnce = async () => {
    const res = await paidFetch(`${svc.info.baseUrl}/executions`, {
      method: "POST",
      headers: { ...headers, "idempotency-key": `peer-${process.pid}-${k++}` },
      body: JSON.stringify({ action: "servers.provision", input: INPUT }),
    });
    if (res.status !== 201) throw new Error(`peer ${res.status}: ${await res.text()}`);
    await res.text();
  };
  for (let i = 0; i < 10; i++) await timed(peerOnce);
  const peer = [];
  for (let i = 0; i < N_PAID; i++) await timed(peerOnce, peer);
  return { mcp: stats(mcp), mcpPostgres: stats(mcpPostgres), floor: stats(floor), peer: stats(peer) };
}

// ---- 2. Cold start ---------------------------------------------------------------------

async function stubCatalog(count) {
  const names = Array.from({ length: count }, (_, i) => `bench${Math.floor(i / 10)}.action-${i}`);
  const detail = (name) => ({
    name,
    description: `Generated action ${name}`,
    supportsAsync: true,
    inputSchema: {
      type: "object",
      properties: { size: { type: "integer", minimum: 1, maximum: 100 }, note: { type: "string", maxLength: 200 } },
      required: ["size"],
      additionalProperties: false,
    },
    pricing: { model: "per_unit", currency: "USDC", unit: "size", formula: "0.01 x size" },
    budgetHints: { typical: "0.10", max: "1.00" },
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let body;
    if (url.pathname === "/v1/actions") body = { items: names.map((n) => ({ name: n, supportsAsync: true })) };
    else if (url.pathname.startsWith("/v1/actions/")) body = detail(decodeURIComponent(url.pathname.slice(12)));
    else body = { error: { code: "not_found", message: "not here" } };
    res.writeHead(body.error ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

/** Process spawn to the tools/list answer on stdout, speaking raw JSON-RPC as a host does. */
async function coldStart(env) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI, "serve"], { env, stdio: ["pipe", "pipe", "ignore"] });
  children.add(child);
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
  });
  let buf = "";
  const { elapsed, tools } = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no tools/list answer within 30 s")), 30_000);
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const msg = JSON.parse(line);
        if (msg.id === 1) {
          send({ jsonrpc: "2.0", method: "notifications/initialized" });
          send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
        } else if (msg.id === 2) {
          clearTimeout(timer);
          resolve({ elapsed: performance.now() - t0, tools: msg.result.tools.length });
        }
      }
    });
  });
  child.stdin.end();
  await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  children.delete(child);
  return { elapsed, tools };
}

async function coldStarts(svc) {
  log("2. cold start to tools/list…");
  const out = {};
  for (const [label, makeEnv] of [
    ["6 actions", async (i) => serviceEnv(svc.info, join(work, `cold6-${i}`))],
    [
      "500 actions",
      async (i) => ({ ...serviceEnv(svc.info, join(work, `cold500-${i}`)), PAID_ACTIONS_BASE_URL: stub.url }),
    ],
  ]) {
    const first = [];
    const cached = [];
    let tools = 0;
    for (let i = 0; i < COLD_RUNS; i++) {
      const env = await makeEnv(i);
      const a = await coldStart(env); // a new home: the catalog is fetched
      const b = await coldStart(env); // the same home: the cached catalog answers
      first.push(a.elapsed);
      cached.push(b.elapsed);
      tools = b.tools;
    }
    out[label] = { firstStart: stats(first), cachedCatalog: stats(cached), tools };
  }
  // What bounds it: a bare Node process, and one that only loads the MCP SDK the server is
  // built on (v2, and zod with it).
  const spawnTime = async (args) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: "ignore", cwd: ROOT });
    await new Promise((r) => child.once("exit", r));
    return performance.now() - t0;
  };
  const bare = [];
  const sdkOnly = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    bare.push(await spawnTime(["-e", "0"]));
    sdkOnly.push(
      await spawnTime([
        "--input-type=module",
        "-e",
        "await import('@modelcontextprotocol/server'); await import('@modelcontextprotocol/server/stdio')",
      ]),
    );
  }
  out["floor: node -e 0"] = { restart: stats(bare) };
  out["floor: node loading the MCP SDK"] = { restart: stats(sdkOnly) };
  // The sandbox default (no service configured): the embedded reference service starts in-process.
  const embedded = [];
  for (let i = 0; i < Math.min(COLD_RUNS, 5); i++) {
    const env = { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: join(work, `coldsb-${i}`) };
    await coldStart(env); // genesis of the embedded sandbox
    embedded.push((await coldStart(env)).elapsed);
  }
  out["embedded sandbox"] = { restart: stats(embedded) };
  return out;
}
let stub;

// ---- 3. Memory -------------------------------------------------------------------------

async function memory(svc) {
  log(`3. memory: idle, then ${N_MEMORY} paid calls…`);
  const env = serviceEnv(svc.info, join(work, "mem-home"));
  const { client, pid } = await mcpClient(env);
  await client.listTools();
  await sleep(1500);
  const idle = rssMb(pid);
  const samples = [];
  for (let i = 1; i <= N_MEMORY; i++) {
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
    if (i % 100 === 0) samples.push({ calls: i, rssMb: rssMb(pid) });
  }
  await sleep(1000);
  const after = rssMb(pid);
  await client.close();
  // Trend: least-squares slope of RSS over the second half of the run, MB per 100 calls.
  const half = samples.slice(Math.floor(samples.length / 2));
  const mx = half.reduce((s, p) => s + p.calls, 0) / half.length;
  const my = half.reduce((s, p) => s + p.rssMb, 0) / half.length;
  const slope =
    half.reduce((s, p) => s + (p.calls - mx) * (p.rssMb - my), 0) /
    Math.max(
      1,
      half.reduce((s, p) => s + (p.calls - mx) ** 2, 0),
    );
  return { idleMb: idle, afterMb: after, calls: N_MEMORY, samples, slopeMbPer100Calls: slope * 100 };
}

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
if (ONLY === "startup") {
  results.startup = await startupFigures({ root: ROOT, work, log });
  results.durationSeconds = (performance.now() - started) / 1000;
  process.stdout.write(
    `${[...formatStartup(results.startup), "", `Total ${results.durationSeconds.toFixed(0)} s on ${machine.cpu} (${machine.cores} cores), Node ${machine.node}.`].join("\n")}\n`,
  );
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  writeFileSync(join(ROOT, ".bench", "startup.json"), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`Results written to .bench/startup.json\n`);
  process.exit(0);
}
const svc = await startSandbox("sandbox", 0);
stub = await stubCatalog(500);
results.paidCall = await paidCalls(svc);
results.coldStart = await coldStarts(svc);
results.startup = await startupFigures({ root: ROOT, work, log });
results.memory = await memory(svc);
results.reconciler = await reconciler();
results.journal = await journal();
results.service = await service(svc);
await stub.close();
svc.child.kill("SIGTERM");
results.durationSeconds = (performance.now() - started) / 1000;

// ---- Report ------------------------------------------------------------------------------------
const p = results.paidCall;
const ratio = (a, b) => (a / b).toFixed(2);
const pass = (ok) => (ok ? "meets target" : "MISSES target");
const lines = [];
const row = (...cells) => lines.push(cells.map((c, i) => String(c).padEnd([44, 10, 10, 10, 10, 0][i] ?? 0)).join(""));
lines.push("");
row("Paid call latency (ms)", "median", "p95", "min", "max", "");
for (const [name, s] of [
  ["MCP server over stdio (SQLite journal)", p.mcp],
  ["MCP server, PostgreSQL journal", p.mcpPostgres],
  ["floor (undici + same proofs + commits)", p.floor],
  ["peer (@x402/fetch + @x402/svm)", p.peer],
])
  row(`  ${name}`, ms(s.median), ms(s.p95), ms(s.min), ms(s.max), "");
lines.push(
  `  ratio MCP/floor p50 ${ratio(p.mcp.median, p.floor.median)} (target <= 1.25: ${pass(p.mcp.median / p.floor.median <= 1.25)}); MCP/peer p50 ${ratio(p.mcp.median, p.peer.median)}; PostgreSQL/SQLite journal p50 ${ratio(p.mcpPostgres.median, p.mcp.median)}`,
);
lines.push("");
row("Cold start to tools/list (ms)", "median", "p95", "min", "max", "");
for (const [label, c] of Object.entries(results.coldStart)) {
  if (c.firstStart) {
    row(
      `  ${label}, first start (catalog fetched)`,
      ms(c.firstStart.median),
      ms(c.firstStart.p95),
      ms(c.firstStart.min),
      ms(c.firstStart.max),
      "",
    );
    row(
      `  ${label}, cached catalog`,
      ms(c.cachedCatalog.median),
      ms(c.cachedCatalog.p95),
      ms(c.cachedCatalog.min),
      ms(c.cachedCatalog.max),
      "",
    );
  } else
    row(
      `  ${label}${label.startsWith("floor") ? "" : ", restart"}`,
      ms(c.restart.median),
      ms(c.restart.p95),
      ms(c.restart.min),
      ms(c.restart.max),
      "",
    );
}
const c6 = results.coldStart["6 actions"].firstStart.median;
const c500 = results.coldStart["500 actions"].firstStart.median;
lines.push(
  `  targets: 6 actions < 300 ms (${pass(c6 < 300)}), 500 actions < 600 ms (${pass(c500 < 600)}) — first start`,
);
lines.push(...formatStartup(results.startup));
lines.push("");
const m = results.memory;
lines.push(
  `Memory (RSS): idle ${m.idleMb.toFixed(1)} MB (target < 120: ${pass(m.idleMb < 120)}); after ${m.calls} paid calls ${m.afterMb.toFixed(1)} MB; trend over the second half ${m.slopeMbPer100Calls.toFixed(2)} MB per 100 calls`,
);
lines.push("");
lines.push(
  `Reconciler over ${results.reconciler.windowMs / 1000} s windows, with 10,000 finished executions in the journal:`,
);
for (const l of results.reconciler.levels)
  lines.push(
    `  ${String(l.unfinished).padStart(5)} unfinished: ${l.requestsPerSecond.toFixed(1)} requests/s, CPU ${(l.cpuShare * 100).toFixed(1)}% of one core`,
  );
lines.push("");
lines.push("list_executions latency (ms, in process):");
for (const j of results.journal)
  lines.push(
    `  ${String(j.rows).padStart(9)} rows: latest page p50 ${ms(j.latest.median)} p95 ${ms(j.latest.p95)}; by status p50 ${ms(j.byStatus.median)}; next page p50 ${ms(j.secondPage.median)}`,
  );
const big = results.journal[results.journal.length - 1];
lines.push(`  target: p50 < 20 ms at ${big.rows.toLocaleString("en-US")} rows (${pass(big.latest.median < 20)})`);
lines.push("");
lines.push(
  `Reference service: ${results.service.quotesPerSecond.toFixed(0)} quotes/s, ${results.service.settledExecutionsPerSecond.toFixed(0)} settled executions/s`,
);
lines.push(
  `\nTotal ${results.durationSeconds.toFixed(0)} s on ${machine.cpu} (${machine.cores} cores), Node ${machine.node}.`,
);
process.stdout.write(`${lines.join("\n")}\n`);
mkdirSync(join(ROOT, ".bench"), { recursive: true });
writeFileSync(join(ROOT, ".bench", "results.json"), `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`Results written to .bench/results.json\n`);
process.exit(0);
