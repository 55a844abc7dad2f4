/**
 * A paid_fetch purchase's own steps on its timeline (timeline.ts adds the approval, the
 * reservation and the problems every purchase shares): the request sent without payment and
 * its 402, the price read from it, each signed proof, the paid request, the resource's answer
 * and what the chain says of the settlement. Built from what the journal recorded and, where
 * this host keeps them, the calls' transcripts — never from the request itself (a secret: its
 * URL is the redacted one of the purchase's public input, its header values and body unseen).
 */
import { formatDecimal } from "../domain/money.js";
import type { Intent, PaymentRecord, TranscriptEntry } from "../engine/index.js";
import type { TimelineEntry } from "./timeline.js";

const iso = (ms: number) => new Date(ms).toISOString();
const usdc = (n: bigint | null) => (n === null ? "?" : `${formatDecimal(n)} USDC`);

/** What the purchase fetches, as its public input names it: `GET https://host/path?q=[redacted]`. */
function what(intent: Intent): string {
  const input = intent.input as { method?: unknown; url?: unknown };
  const method = typeof input.method === "string" ? input.method : "?";
  const url = typeof input.url === "string" ? input.url : (intent.origin ?? "?");
  return `${method} ${url}`;
}

/** The request without payment that the 402 answered (the intent is recorded on that 402), and the price read from it. */
export function fetchOpening(intent: Intent): TimelineEntry[] {
  const out: TimelineEntry[] = [
    {
      at: iso(intent.createdAt),
      step: "request",
      title: `${what(intent)} sent without payment`,
      detail: `the resource answered 402 Payment Required; the purchase recorded as intent ${intent.intentId}`,
      status: "402",
    },
  ];
  if (intent.quotedAt !== null && intent.quoteId) {
    const network = intent.requirements?.network;
    const until = intent.quoteExpiresAt !== null ? `; the price holds until ${iso(intent.quoteExpiresAt)}` : "";
    out.push({
      at: iso(intent.quotedAt),
      step: "price",
      title: `Priced ${usdc(intent.amount)} by its 402`,
      detail: `to ${intent.payee ?? "?"}${network ? ` on ${network}` : ""}; memo ${intent.quoteId}${until}`,
    });
  }
  return out;
}

/** The transcripts' paid requests of this purchase, oldest first: when each was answered, how, and the settlement claimed. */
function paidAnswers(calls: Array<{ entries: TranscriptEntry[] }>): TranscriptEntry[] {
  return calls
    .flatMap((c) => c.entries)
    .filter((e) => e.step === "request" && e.paid === true)
    .sort((a, b) => a.t.localeCompare(b.t));
}

/** An answer's settlement claim (PAYMENT-RESPONSE), as the transcript recorded it. */
function claimOf(e: TranscriptEntry | undefined): { success?: unknown; transaction?: unknown; errorReason?: unknown } {
  const s = e?.settlement;
  return s && typeof s === "object" ? (s as Record<string, unknown>) : {};
}

/** The answer to a paid request: from the transcript when this host keeps it, else the one the journal kept. */
function answerEntry(intent: Intent, p: PaymentRecord, seen: TranscriptEntry | undefined): TimelineEntry | undefined {
  const current = p.quoteId === intent.quoteId;
  const status = seen ? Number(seen.status) : current ? intent.response?.status : undefined;
  if (status === undefined || !Number.isFinite(status) || p.sentAt === null) return undefined;
  const claim = claimOf(seen);
  const tx = typeof claim.transaction === "string" ? claim.transaction : (p.claimedTx ?? undefined);
  const said =
    claim.success === false
      ? `PAYMENT-RESPONSE says the settlement failed${typeof claim.errorReason === "string" ? ` (${claim.errorReason})` : ""}`
      : tx
        ? "PAYMENT-RESPONSE says it settled the payment"
        : "no settlement claimed (no PAYMENT-RESPONSE)";
  const kept =
    current && intent.response
      ? `; ${intent.response.contentType ?? "no content type"}, ${intent.response.size} bytes kept`
      : "";
  return {
    at: seen ? seen.t : iso(p.sentAt),
    step: "answer",
    title: `Answered HTTP ${status}${seen ? "" : " (at the paid request's time)"}`,
    detail: `${said}${status < 400 ? kept : "; not delivered: the chain decides whether it was paid"}`,
    ...(tx ? { transaction: tx } : {}),
    status: String(status),
  };
}

/** What the chain said of a proof: landed (verified as priced, or not), can never land, or not seen yet. */
function settlementEntry(intent: Intent, p: PaymentRecord): TimelineEntry | undefined {
  if (p.checkedAt === null) return undefined;
  const current = p.quoteId === intent.quoteId;
  const title =
    p.fate === "landed"
      ? current && intent.settlement === "verified"
        ? "Settlement verified on chain: exactly as priced"
        : current && intent.settlement === "mismatch"
          ? "On chain, but not the priced payment: a person looks"
          : "Payment seen on chain"
      : p.fate === "never"
        ? "The payment can never land: nothing was spent"
        : "Looked for the payment on chain: not seen yet";
  return { at: iso(p.checkedAt), step: "settlement", title, ...(p.tx ? { transaction: p.tx } : {}), status: p.fate };
}

/** One signed proof of a fetch: signed, the paid request that carried it, the answer, the chain's word. */
export function fetchPaymentEntries(
  intent: Intent,
  p: PaymentRecord,
  calls: Array<{ entries: TranscriptEntry[] }>,
): TimelineEntry[] {
  const out: TimelineEntry[] = [
    {
      at: iso(p.signedAt),
      step: "payment",
      title: `Payment of ${usdc(p.amount)} signed`,
      detail: `to ${p.payee}${p.payer ? ` from wallet ${p.payer}` : ""}; memo ${p.quoteId}; attempt ${p.attempt + 1}`,
    },
  ];
  if (p.sentAt !== null) {
    const sentAt = iso(p.sentAt);
    out.push({
      at: sentAt,
      step: "request",
      title: `${what(intent)} sent again with the payment (PAYMENT-SIGNATURE)`,
      detail: "the proof left with this request: from here the payment may be settled",
    });
    const answer = answerEntry(
      intent,
      p,
      paidAnswers(calls).find((e) => e.t >= sentAt),
    );
    if (answer) out.push(answer);
  }
  const settled = settlementEntry(intent, p);
  if (settled) out.push(settled);
  return out;
}
