// `npm run bench`, section 1: how fast a paid call is through the MCP server over stdio (with
// a SQLite journal, then a PostgreSQL one), against its floor (the fast path's 2 HTTP
// requests, proofs and 3 journal commits in a tight loop, floor.mjs) and a peer (a stock
// x402 client).
import { join } from "node:path";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { startTestPostgres } from "../helpers/postgres.mjs";
import { floorCall } from "./floor.mjs";
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

  // The floor: the fast path's work with nothing around it — the same 2 HTTP requests with
  // undici in a tight loop, proofs built the same way and the same 3 fsynced SQLite commits.
  const wallet = await loadWallet(svc.info.walletPath);
  const floorOnce = await floorCall(svc, wallet);
  for (let i = 0; i < 10; i++) await timed(floorOnce.once);
  const floor = [];
  for (let i = 0; i < N_PAID; i++) await timed(floorOnce.once, floor);
  floorOnce.close();

  // The peer: a stock x402 client paying POST /executions (402, pay, retry).
  const peerClient = new x402Client();
  peerClient.register("solana:*", new ExactSvmScheme(wallet, { rpcUrl: svc.info.rpcUrl }));
  const paidFetch = wrapFetchWithPayment(fetch, peerClient);
  const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
  let k = 0;
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
