/**
 * Making a receipt (receipt.ts) for one purchase, by its intentId or its execution's
 * executionId: what the journal holds — the intent, the proof's payment record, the
 * approval with its kept passkey assertion, the seller's word — and what the payment's
 * rail reads from our RPC now (the transaction, its slot and finality, the wire bytes; a
 * refund's inflow), signed as a whole by the key that signed the payment. A purchase for
 * which nothing was ever signed moved no money: it gets no receipt, and says so.
 */
import { createHash } from "node:crypto";
import { formatDecimal } from "../../domain/money.js";
import { canonicalJson } from "../../domain/wire.js";
import type { JournalStore } from "../journal/port.js";
import type { Intent, PaymentRecord } from "../model/types.js";
import type { Rails } from "../rails/load.js";
import type { ChainEvidence, JournaledProof, Rail } from "../rails/port.js";
import { parseKept } from "./kept.js";
import {
  digestsOf,
  signedBytes,
  type ApprovalSection,
  type Bought,
  type ChainSection,
  type Outcome,
  type ReceiptDocument,
  type SellerSection,
  type Unsigned,
} from "./receipt.js";
import { parseKeptWord, resourceOf, type KeptWord } from "./seller.js";

export interface ReceiptDeps {
  journal: JournalStore;
  rails: Rails;
  now: () => number;
}

/** A receipt, or why there is none: no such purchase, nothing ever signed for it, or the paying key is not the configured one. */
export type ReceiptResult =
  | { ok: true; receipt: ReceiptDocument }
  | { ok: false; problem: "not_found" | "unpaid" | "key_changed"; message: string };

const iso = (ms: number) => new Date(ms).toISOString();
const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** The proof a receipt is about: the one that landed, else the current attempt's, else the last signed. */
function paymentOf(intent: Intent, payments: PaymentRecord[]): PaymentRecord | undefined {
  return (
    payments.find((p) => p.fate === "landed") ?? payments.find((p) => p.quoteId === intent.quoteId) ?? payments.at(-1)
  );
}

/** How a person approved, and the passkey's assertion when one was kept. */
async function approvalSection(journal: JournalStore, intent: Intent): Promise<ApprovalSection | null> {
  if (!intent.approvalId) return null;
  const a = await journal.approval(intent.approvalId);
  if (!a) return null;
  const kept = parseKept(await journal.approvalAssertion(a.approvalId));
  // The host's prompt records its approval already decided; the console and a terminal decide a pending one.
  const channel = kept ? "passkey" : a.decidedAt !== null && a.decidedAt === a.createdAt ? "host" : "person";
  return {
    approvalId: a.approvalId,
    status: a.status,
    channel,
    decidedAt: a.decidedAt === null ? null : iso(a.decidedAt),
    evidence: kept ?? null,
  };
}

/** What our RPC shows of the settling transaction now, or why nothing. */
async function chainSection(
  rail: Rail,
  p: JournaledProof,
  tx: string | null,
  now: number,
): Promise<{ chain: ChainSection | null; chainUnread: string | null; evidence?: ChainEvidence }> {
  if (!tx) return { chain: null, chainUnread: "no transaction had been seen or claimed for this payment" };
  const read = await rail.evidence(p, tx);
  if (read.kind === "missing") return { chain: null, chainUnread: `our RPC does not have transaction ${tx}` };
  if (read.kind === "unknown") return { chain: null, chainUnread: read.why };
  const e = read.evidence;
  const transfer = e.transfer && { ...e.transfer, amount: e.transfer.amount.toString() };
  return {
    chain: {
      readAt: iso(now),
      slot: e.slot.toString(),
      blockHash: e.blockHash,
      blockTime: e.blockTime,
      finality: e.finality,
      failed: e.failed,
      transfer,
      memos: e.memos.slice(0, 16),
      wire: e.wire,
    },
    chainUnread: null,
    evidence: e,
  };
}

/** The execution's or the answer's outcome, and the refunds claimed with what our RPC shows of them. */
async function outcomeOf(d: ReceiptDeps, intent: Intent, rail: Rail, p: PaymentRecord): Promise<Outcome> {
  const body = intent.kind === "fetch" && intent.response ? await d.journal.responseBody(intent.intentId) : undefined;
  const refunds: Outcome["refunds"] = [];
  if (intent.refund || intent.refundTx) {
    const tx = intent.refundTx ?? intent.refund?.transaction ?? null;
    const inflow = tx ? await rail.refundInflow(p, p.payee, tx).catch(() => undefined) : undefined;
    refunds.push({
      transaction: tx,
      claimed: intent.refund?.amount ?? null,
      seenOnChain: typeof inflow === "bigint" ? formatDecimal(inflow) : null,
      state: intent.refundState,
    });
  }
  return {
    state: intent.state,
    status: intent.execStatus,
    settlement: intent.settlement,
    outputDigest: intent.output === null || intent.output === undefined ? null : sha256(canonicalJson(intent.output)),
    answer:
      intent.kind === "fetch" && intent.response
        ? {
            status: intent.response.status,
            contentType: intent.response.contentType,
            size: intent.response.size,
            bodyDigest: sha256(body ?? new Uint8Array()),
          }
        : null,
    refunds,
    attention: intent.attention,
    error: intent.error?.code ?? null,
  };
}

/** A kept part of the seller's word as a receipt carries it: withheld when its signed URL carries query values (maybe secrets). */
function sellerPart(w: KeptWord | undefined): SellerSection["offer"] {
  if (!w) return null;
  const url = (w.signed.format === "eip712" ? w.signed.payload?.resourceUrl : jwsUrl(w.signed.signature)) ?? "";
  const withheld =
    typeof url === "string" && resourceOf(url) !== url ? "its signed URL carries query values, which stay out" : null;
  return { signed: withheld ? null : w.signed, state: w.state, signer: w.signer, problems: w.problems, withheld };
}

function jwsUrl(jws: string): unknown {
  try {
    const payload = JSON.parse(Buffer.from(jws.split(".")[1] ?? "", "base64url").toString("utf8")) as unknown;
    return (payload as { resourceUrl?: unknown } | null)?.resourceUrl;
  } catch {
    return undefined;
  }
}

async function sellerSection(journal: JournalStore, intentId: string): Promise<SellerSection | null> {
  const word = await journal.sellerWord(intentId);
  const offer = parseKeptWord(word?.offer);
  const receipt = parseKeptWord(word?.receipt);
  return offer || receipt ? { offer: sellerPart(offer), receipt: sellerPart(receipt) } : null;
}

/**
 * What the purchase asked for: a fetch's request as the journal keeps it (query values
 * redacted); an action's, the POST to the service's paid resource its challenge named (what
 * the service's signed offer and receipt were checked against), when it was kept.
 */
function requestOf(intent: Intent): Bought["request"] {
  if (intent.kind === "fetch") {
    const request = intent.input as { method?: unknown; url?: unknown };
    return { method: String(request.method ?? "?"), url: String(request.url ?? "?"), origin: intent.origin ?? "?" };
  }
  const url = intent.offer?.resource?.url;
  if (!url) return null;
  let origin = "?";
  try {
    origin = new URL(url).origin;
  } catch {
    // kept as the challenge named it; verify compares the URL itself
  }
  return { method: "POST", url, origin };
}

/** The intent an id names: an intentId, else an executionId. */
async function intentNamed(journal: JournalStore, id: string): Promise<Intent | undefined> {
  return (await journal.intent(id)) ?? (await journal.intentByExecution(id));
}

/** The receipt of the purchase `id` names (see ReceiptResult). */
export async function buildReceipt(d: ReceiptDeps, id: string): Promise<ReceiptResult> {
  const intent = await intentNamed(d.journal, id);
  if (!intent) return { ok: false, problem: "not_found", message: `no purchase or execution ${id} in this journal` };
  const p = paymentOf(intent, await d.journal.paymentsOf(intent.intentId));
  if (!p)
    return {
      ok: false,
      problem: "unpaid",
      message: `nothing was ever signed for ${intent.intentId} (state ${intent.state}): no money moved, so there is no receipt`,
    };
  const rail = await d.rails.forPayment(p);
  const account = p.payer && p.source ? undefined : await rail.account();
  const payer = p.payer ?? account!.wallet;
  const now = d.now();
  const tx = p.tx ?? p.claimedTx ?? (p.quoteId === intent.quoteId ? intent.paymentTx : null);
  const { chain, chainUnread } = await chainSection(rail, p, tx, now);
  const unsigned = await unsignedReceipt(d, intent, p, rail, { payer, source: p.source ?? account!.account, tx, now });
  const doc = { ...unsigned, chain, chainUnread };
  const full: Unsigned = { ...doc, digests: digestsOf(doc) };
  const signature = await rail.signReceipt(payer, signedBytes(full));
  if ("problem" in signature)
    return {
      ok: false,
      problem: "key_changed",
      message: `the payment was signed by ${payer}, and the configured key is another now: only that key can sign its receipt`,
    };
  return { ok: true, receipt: { ...full, signature } };
}

/** Every section but the chain's, the digests and the signature. */
async function unsignedReceipt(
  d: ReceiptDeps,
  intent: Intent,
  p: PaymentRecord,
  rail: Rail,
  o: { payer: string; source: string; tx: string | null; now: number },
): Promise<Omit<Unsigned, "digests" | "chain" | "chainUnread">> {
  const requirement = intent.requirements ?? {};
  return {
    receipt: "paid-actions/1",
    id: intent.intentId,
    madeAt: iso(o.now),
    bought: {
      kind: intent.kind,
      intentId: intent.intentId,
      executionId: intent.executionId,
      action: intent.kind === "action" ? intent.action : null,
      inputDigest: intent.fingerprint,
      request: requestOf(intent),
    },
    requirement,
    quote: {
      quoteId: p.quoteId,
      amount: formatDecimal(p.amount),
      currency: "USDC",
      quotedAt: iso(intent.quotedAt ?? p.signedAt),
      expiresAt: iso(intent.quoteExpiresAt ?? p.signedAt),
    },
    approval: await approvalSection(d.journal, intent),
    payment: {
      network: p.network ?? rail.network,
      transaction: o.tx,
      payer: o.payer,
      source: o.source,
      payee: p.payee,
      asset: p.mint ?? String(intent.requirements?.asset ?? ""),
      amount: formatDecimal(p.amount),
      // What ties the transfer to the purchase: Solana's memo (the quote id), EVM's authorization nonce.
      memo: p.nonce ?? p.quoteId,
      signedAt: iso(p.signedAt),
      fate: p.fate,
    },
    outcome: await outcomeOf(d, intent, rail, p),
    seller: await sellerSection(d.journal, intent.intentId),
  };
}
