/**
 * x402 purchases (paid_fetch) written into a journal the way the engine writes them, for the
 * console's tests (over HTTP, and in Chromium) without a seller: the request in its own
 * column with credentials in a header, a query and a body, its public view as the input.
 * Four purchases, oldest first: two refused (payment_unsupported), one delivered — priced,
 * reserved, its proof signed (a secret) and sent, answered 200 with PAYMENT-RESPONSE, its
 * settlement verified on chain — and one waiting for a person's approval.
 */
import type { JournalStore, Transcripts } from "../../src/engine/index.js";
import type { Intent, IntentPatch, StoredRequest } from "../../src/engine/model/types.js";
import { redactUrl } from "../../src/engine/x402-http/request.js";
import { newIntent, payment } from "../helpers/journal-records.js";

export const SELLER = "https://api.seller.example";
export const OTHER = "https://data.other.example:8443";
export const PAYEE = "Se11erPayee1111111111111111111111111111111";
export const TX = "5xTransaction1111111111111111111111111111111111111111111111111111111111111111111111111";
/** What must never leave the journal's secret columns. */
export const SECRETS = {
  header: "Bearer sk_live_HEADERSECRET_7d1f",
  query: "QUERYSECRET_93ab",
  body: "BODYSECRET_5c2e",
  proof: "PROOFSECRET_e0c4_base64payload",
};
export const IDS = {
  delivered: "int_delivered01",
  waiting: "int_waiting0001",
  older: ["int_older00001", "int_older00002"],
};
export const CALL = "call_purchase0001";
export const APPROVAL = "apr_fetchwait0001";

export interface Recording {
  journal: JournalStore;
  transcripts: Transcripts;
  /** The engine's service name (intents are recorded under it). */
  service: string;
  /** When the delivered purchase was asked for (the others are around it). */
  t0: number;
}

function request(origin: string, method: StoredRequest["method"], path: string, body: string | null): StoredRequest {
  return {
    url: `${origin}${path}`,
    origin,
    method,
    headers: { authorization: SECRETS.header, "x-trace": "trace-1" },
    body,
  };
}

/** A fetch intent as paid_fetch records it: the request apart, the public view as its input. */
async function recordFetch(
  r: Recording,
  id: string,
  at: number,
  req: StoredRequest,
  patch: IntentPatch,
): Promise<void> {
  const input = {
    method: req.method,
    url: redactUrl(req.url),
    origin: req.origin,
    headers: Object.keys(req.headers).sort(),
    bodyBytes: req.body === null ? 0 : Buffer.byteLength(req.body),
  };
  await r.journal.insertIntent(
    newIntent(id, {
      service: r.service,
      action: "paid_fetch",
      input,
      createdAt: at,
      fetch: { origin: req.origin, request: req },
    }),
  );
  await r.journal.update(id, { leaseOwner: null, leaseUntil: null, ...patch }, at + 10);
}

const priced = (quoteId: string, amount: bigint, at: number): IntentPatch => ({
  state: "quoted",
  quoteId,
  // What its 402 offered besides the requirement (the engine records it with the price).
  offer: {},
  amount,
  payee: PAYEE,
  quotedAt: at,
  quoteExpiresAt: at + 300_000,
  requirements: {
    scheme: "exact",
    network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    amount: amount.toString(),
    asset: "Mint111",
    payTo: PAYEE,
    maxTimeoutSeconds: 60,
  } as Intent["requirements"],
});

async function recordDelivered(r: Recording): Promise<void> {
  const j = r.journal;
  const at = r.t0;
  const get = request(SELLER, "GET", `/weather?api_key=${SECRETS.query}&city=paris`, null);
  await recordFetch(r, IDS.delivered, at, get, { ...priced("fq_delivered01", 10_000n, at + 20), callId: CALL });
  r.transcripts.append(CALL, "request", { intentId: IDS.delivered, paid: false, status: 402, headers: {} });
  await j.update(
    IDS.delivered,
    { state: "reserved", budgetState: "reserved", budgetAmount: 10_000n, budgetAt: at + 30 },
    at + 30,
  );
  await j.recordSigned(payment("fq_delivered01", IDS.delivered, { amount: 10_000n, payee: PAYEE, signedAt: at + 40 }), {
    intentId: IDS.delivered,
    patch: { state: "signed", proof: SECRETS.proof },
    now: at + 40,
    expect: { state: "reserved" },
  });
  const sentAt = Date.now() - 1_000;
  await j.updatePayment("fq_delivered01", { sentAt, claimedTx: TX });
  r.transcripts.append(CALL, "request", {
    intentId: IDS.delivered,
    paid: true,
    status: 200,
    headers: { "content-type": "application/json" },
    settlement: { success: true, transaction: TX, network: "solana:devnet" },
  });
  await j.saveResponseBody(IDS.delivered, Buffer.from('{"city":"paris","temp":21}'), sentAt + 5);
  const response = { status: 200, headers: {}, contentType: "application/json", size: 26, paid: true };
  await j.update(
    IDS.delivered,
    {
      state: "executed",
      execStatus: "completed",
      budgetState: "spent",
      paymentTx: TX,
      settlement: "verified",
      response,
    },
    sentAt + 10,
  );
  // The reconciler finds it on chain after the answer.
  await j.updatePayment("fq_delivered01", { fate: "landed", tx: TX, checkedAt: Date.now() + 500 });
}

async function recordWaiting(r: Recording): Promise<void> {
  const at = r.t0 + 1_000;
  const body = JSON.stringify({ text: "summarize this", token: SECRETS.body });
  await recordFetch(r, IDS.waiting, at, request(OTHER, "POST", "/summarize", body), {
    ...priced("fq_waiting0001", 2_500_000n, at + 20),
    state: "awaiting_approval",
    approvalId: APPROVAL,
  });
  await r.journal.insertApproval({
    approvalId: APPROVAL,
    intentId: IDS.waiting,
    quoteId: "fq_waiting0001",
    action: "paid_fetch",
    amount: 2_500_000n,
    payee: PAYEE,
    expiresAt: Date.now() + 300_000,
    status: "pending",
    createdAt: at + 30,
    decidedAt: null,
  });
}

/** Records the four purchases. */
export async function recordPurchases(r: Recording): Promise<void> {
  for (const [i, id] of IDS.older.entries())
    await recordFetch(r, id, r.t0 - 10_000 + i, request(SELLER, "GET", `/old?key=${SECRETS.query}`, null), {
      state: "refused",
      error: { code: "payment_unsupported", message: "the resource asks for no payment this server can make" },
    });
  await recordDelivered(r);
  await recordWaiting(r);
}
