// `npm run bench`, section 1: how fast a paid call is through the MCP server over stdio (with
// a SQLite journal, then a PostgreSQL one), against its floor (the same HTTP requests, proofs
// and journal commits in a tight loop) and a peer (a stock x402 client).
import { join } from "node:path";
import Database from "better-sqlite3";
import { request } from "undici";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { startTestPostgres } from "../helpers/postgres.mjs";
import { INPUT, log, loadWallet, mcpClient, N_PAID, serviceEnv, stats, timed, work } from "./common.mjs";

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

export async function paidCalls(svc) {
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
