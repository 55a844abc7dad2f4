// `npm run bench`, section 1: the floor of a paid call — the work the engine's fast path
// cannot do without, with nothing around it. The same two HTTP requests (`POST /quotes`, then
// `POST /executions` with X-Payment-Proof and the same Idempotency-Key, which settles it) with
// undici; the proof built the same way (the x402 reference client's exact SVM scheme, signing
// with a blockhash from the RPC fetched beside the quote request on every call, as the
// engine's chain/lifetimes.ts does: the signature waits for it only if the RPC is the slower
// of the two); and the same three journal commits that wait for the disk (SQLite, WAL,
// synchronous=FULL): the intent before anything is sent, the quote with its reservation and
// signed proof before the proof leaves, the outcome.
import { join } from "node:path";
import Database from "better-sqlite3";
import { request } from "undici";
import { createSolanaRpc } from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { INPUT, work } from "./common.mjs";

/** The blockhash to sign with: fetched beside the quote request (`ahead`), awaited at the signature (`take`). */
function blockhashBeside(rpcUrl) {
  const rpc = createSolanaRpc(rpcUrl);
  let fetching;
  return {
    ahead: () => {
      fetching = rpc.getLatestBlockhash({ commitment: "finalized" }).send();
      fetching.catch(() => undefined); // met by take()
    },
    take: async () => (await fetching).value,
  };
}

/** One floor paid call at a time (`once`, for timed() in common.mjs), and `close`. */
export async function floorCall(svc, wallet) {
  const scheme = new ExactSvmScheme(wallet, { rpcUrl: svc.info.rpcUrl });
  const blockhash = blockhashBeside(svc.info.rpcUrl);
  const db = new Database(join(work, "floor.sqlite"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec(`CREATE TABLE IF NOT EXISTS intents (id INTEGER PRIMARY KEY, state TEXT, data TEXT);
    CREATE TABLE IF NOT EXISTS payments (quote_id TEXT PRIMARY KEY, intent_id INTEGER, proof TEXT)`);
  const insert = db.prepare("INSERT INTO intents (state, data) VALUES (?, ?)");
  const update = db.prepare("UPDATE intents SET state = ?, data = ? WHERE id = ?");
  const insertPayment = db.prepare("INSERT INTO payments (quote_id, intent_id, proof) VALUES (?, ?, ?)");
  const reserve = db.transaction((id, quote, proof) => {
    update.run("signed", JSON.stringify(quote), id);
    insertPayment.run(quote.quoteId, id, proof);
  });
  const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
  const http = async (path, body, extra) => {
    const res = await request(`${svc.info.baseUrl}${path}`, {
      method: "POST",
      headers: { ...headers, ...extra },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, body: await res.body.json() };
  };
  let k = 0;
  const once = async () => {
    const key = `floor-${process.pid}-${k++}`;
    const id = insert.run("new", key).lastInsertRowid; // commit 1: the intent
    blockhash.ahead();
    const q = await http(
      "/quotes",
      { action: "servers.provision", input: INPUT, budget: { amount: "10", currency: "USDC" } },
      { "idempotency-key": key },
    );
    if (q.status !== 201) throw new Error(`floor quote ${q.status}`);
    const reqs = q.body.paymentRequirement.accepts[0];
    const lifetime = await blockhash.take();
    const toSign = {
      ...reqs,
      extra: {
        ...reqs.extra,
        recentBlockhash: lifetime.blockhash,
        lastValidBlockHeight: lifetime.lastValidBlockHeight.toString(),
      },
    };
    const p = await scheme.createPaymentPayload(2, toSign);
    const proof = Buffer.from(JSON.stringify({ ...p, accepted: reqs })).toString("base64");
    reserve(id, q.body, proof); // commit 2: the quote, its reservation and the signed proof
    const e = await http(
      "/executions",
      { action: "servers.provision", input: INPUT },
      { "idempotency-key": key, "x-quote-id": q.body.quoteId, "x-payment-proof": proof },
    );
    if (e.status !== 201) throw new Error(`floor execution ${e.status}`);
    update.run("executed", JSON.stringify(e.body), id); // commit 3: the outcome
  };
  return { once, close: () => db.close() };
}
