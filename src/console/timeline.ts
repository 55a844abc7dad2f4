/**
 * One purchase's timeline, from what the journal recorded of it — the intent (quote,
 * reservation, execution, refund, error), its approval, every signed payment by its memo —
 * and, where this host keeps them, its calls' transcripts (the execution's status changes as
 * this fleet saw them). A paid_fetch purchase tells its own steps instead of the quote, the
 * payments and the execution (purchase-timeline.ts). Each entry carries a time that was recorded: none is made up, so a
 * step whose time nobody wrote down is not shown.
 */
import { formatDecimal } from "../domain/money.js";
import {
  INTENT_STATES,
  STATES,
  type Approval,
  type Intent,
  type IntentState,
  type JournalStore,
  type PaymentRecord,
  type TranscriptEntry,
  type Transcripts,
} from "../engine/index.js";
import { fetchOpening, fetchPaymentEntries } from "./purchase-timeline.js";

export type TimelineStep =
  | "quote"
  | "approval"
  | "reservation"
  | "payment"
  | "settlement"
  | "execution"
  | "refund"
  | "error"
  // A paid_fetch purchase's: a request to the resource (unpaid, or with the payment), its price, its answer.
  | "request"
  | "price"
  | "answer";

export interface TimelineEntry {
  at: string;
  step: TimelineStep;
  title: string;
  detail?: string;
  transaction?: string;
  status?: string;
}

/** How many of the newest indexed calls are looked through for the purchase's other calls. */
const CALLS_LOOKED_AT = 200;

/**
 * The states a purchase stops short in: every resting state of the table (nothing drives it
 * on from there; engine/model/states.ts) but the one it ends well in.
 */
export const STOPPED_STATES: ReadonlySet<IntentState> = new Set(
  INTENT_STATES.filter((s) => STATES[s].step === null && s !== "executed"),
);

const iso = (ms: number) => new Date(ms).toISOString();
const usdc = (n: bigint | null) => (n === null ? "?" : `${formatDecimal(n)} USDC`);

/** The calls whose transcripts tell of this purchase: its current call and, on this host, earlier ones (an approval's first ask). */
export async function callsOf(
  journal: JournalStore,
  transcripts: Transcripts,
  intent: Intent,
): Promise<Array<{ callId: string; entries: TranscriptEntry[] }>> {
  const ids = new Set<string>();
  if (intent.callId) ids.add(intent.callId);
  for (const r of await journal.transcriptIndex(CALLS_LOOKED_AT)) {
    if (r.createdAt >= intent.createdAt - 1_000 && r.createdAt <= intent.updatedAt + 1_000) ids.add(r.callId);
  }
  const out: Array<{ callId: string; entries: TranscriptEntry[] }> = [];
  for (const callId of ids) {
    const entries = (transcripts.read(callId) ?? []).filter((e) => e.intentId === intent.intentId);
    if (entries.length > 0 || callId === intent.callId) out.push({ callId, entries });
  }
  return out.sort((a, b) => (a.entries[0]?.t ?? "").localeCompare(b.entries[0]?.t ?? ""));
}

/** Every signed proof of the purchase (one per attempt that signed), oldest first. */
async function paymentsOf(journal: JournalStore, intent: Intent): Promise<PaymentRecord[]> {
  const byQuote = new Map<string, PaymentRecord>();
  // A fresh attempt signs under a new quote: only then are earlier proofs looked for.
  if (intent.attempt > 0)
    for (const p of await journal.paymentsSince(intent.createdAt))
      if (p.intentId === intent.intentId) byQuote.set(p.quoteId, p);
  const current = intent.quoteId ? await journal.payment(intent.quoteId) : undefined;
  if (current && current.intentId === intent.intentId) byQuote.set(current.quoteId, current);
  return [...byQuote.values()].sort((a, b) => a.signedAt - b.signedAt);
}

function paymentEntries(p: PaymentRecord): TimelineEntry[] {
  const out: TimelineEntry[] = [
    {
      at: iso(p.signedAt),
      step: "payment",
      title: `Payment of ${usdc(p.amount)} signed`,
      detail: `to ${p.payee}${p.payer ? ` from wallet ${p.payer}` : ""}; memo (quote) ${p.quoteId}; attempt ${p.attempt + 1}`,
    },
  ];
  const tx = p.tx ?? p.claimedTx ?? undefined;
  if (p.sentAt !== null) {
    out.push({
      at: iso(p.sentAt),
      step: "payment",
      title: "Payment sent to the service",
      detail: p.claimedTx ? "the service said it settled the payment" : "the service did not confirm a settlement",
      ...(tx ? { transaction: tx } : {}),
      status: p.fate,
    });
  }
  if (p.checkedAt !== null) {
    const title =
      p.fate === "landed"
        ? "Payment seen on chain"
        : p.fate === "never"
          ? "The payment can never land: nothing was spent"
          : "Looked for the payment on chain: not seen yet";
    out.push({
      at: iso(p.checkedAt),
      step: "settlement",
      title,
      ...(p.tx ? { transaction: p.tx } : {}),
      status: p.fate,
    });
  }
  return out;
}

function executionEntries(intent: Intent, calls: Array<{ entries: TranscriptEntry[] }>): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  const seen = calls.flatMap((c) => c.entries);
  const started = seen.find(
    (e) =>
      e.step === "execution" && (e.body as { executionId?: unknown } | undefined)?.executionId === intent.executionId,
  );
  const first = started ? String((started.body as { status?: unknown }).status ?? "") : "";
  if (started)
    out.push({
      at: started.t,
      step: "execution",
      title: "Execution started by the service",
      detail: intent.executionId!,
      ...(first ? { status: first } : {}),
    });
  else if (intent.execution)
    out.push({
      at: intent.execution.createdAt,
      step: "execution",
      title: "Execution created by the service (its time)",
      detail: intent.execution.executionId,
    });
  let last = first;
  for (const e of seen) {
    if (e.step !== "status") continue;
    const to = String(e.to);
    out.push({
      at: e.t,
      step: "execution",
      title: `Execution ${e.from ? `${String(e.from)} → ` : ""}${to}`,
      status: to,
    });
    last = to;
  }
  // The service's own stamp of its last change, when this host saw no change to the current status.
  const now = intent.execStatus;
  if (now && now !== last && intent.execution?.updatedAt) {
    out.push({
      at: intent.execution.updatedAt,
      step: "execution",
      title: `Execution ${now} (the service's time)`,
      status: now,
    });
  }
  return out;
}

function refundEntries(intent: Intent): TimelineEntry[] {
  if (intent.refundState === "none" && !intent.refund) return [];
  if (intent.refundSeenAt === null) return [];
  const claimed = intent.refund ? `${intent.refund.amount} USDC` : "a refund";
  const detail =
    intent.refundState === "verified"
      ? `${usdc(intent.refundCredit)} credited back to the limits: seen arriving in the wallet${intent.refundTx ? ` (${intent.refundTx})` : ""}`
      : intent.refundState === "pending"
        ? "not yet seen arriving in the wallet: nothing credited back yet"
        : "not seen arriving in the wallet: nothing credited back";
  return [
    {
      at: iso(intent.refundSeenAt),
      step: "refund",
      title: `The service reported ${claimed} refunded`,
      detail,
      ...(intent.refund?.transaction ? { transaction: intent.refund.transaction } : {}),
      status: intent.refundState,
    },
  ];
}

/** The purchase asked for, and its quote once it had one. */
function quoteEntries(intent: Intent): TimelineEntry[] {
  const out: TimelineEntry[] = [
    {
      at: iso(intent.createdAt),
      step: "quote",
      title: `${intent.action} asked for`,
      detail: `intent ${intent.intentId}`,
    },
  ];
  if (intent.quotedAt !== null && intent.quoteId) {
    const expires = intent.quoteExpiresAt !== null ? `; expires ${iso(intent.quoteExpiresAt)}` : "";
    out.push({
      at: iso(intent.quotedAt),
      step: "quote",
      title: `Quoted ${usdc(intent.amount)}`,
      detail: `quote ${intent.quoteId}${intent.payee ? `; payee ${intent.payee}` : ""}${expires}`,
    });
  }
  return out;
}

/**
 * A person's approval: when it was asked for (unless it was answered in the host's prompt at
 * once) and how it was decided.
 */
function approvalEntries(approval: Approval | undefined): TimelineEntry[] {
  if (!approval) return [];
  const out: TimelineEntry[] = [];
  const inPrompt = approval.decidedAt === approval.createdAt;
  if (!inPrompt)
    out.push({
      at: iso(approval.createdAt),
      step: "approval",
      title: "A person's approval asked for",
      detail: `approval ${approval.approvalId} for ${usdc(approval.amount)}`,
      status: "pending",
    });
  if (approval.decidedAt !== null) {
    const title =
      approval.status === "declined"
        ? inPrompt
          ? "Declined in the host's prompt"
          : "Declined by a person"
        : approval.status === "approved"
          ? "Approved by a person"
          : inPrompt
            ? "Approved in the host's prompt"
            : "The person's approval used by the paying call";
    out.push({
      at: iso(approval.decidedAt),
      step: "approval",
      title,
      detail: `approval ${approval.approvalId}`,
      status: approval.status,
    });
  }
  return out;
}

/** The budget reservation, as it stands now. */
function reservationEntries(intent: Intent): TimelineEntry[] {
  if (intent.budgetAt === null || intent.budgetState === "none") return [];
  const what =
    intent.budgetState === "released"
      ? "released: nothing spent"
      : intent.budgetState === "spent"
        ? "counted as spent"
        : "held until the payment's fate is known";
  return [
    {
      at: iso(intent.budgetAt),
      step: "reservation",
      title: `${usdc(intent.budgetAmount)} of the budget reserved`,
      detail: `now ${what}`,
      status: intent.budgetState,
    },
  ];
}

/** Why a purchase stopped, and whether it needs a person; both at the record's last change. */
function problemEntries(intent: Intent): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  // The record's last change is when a purchase that stopped was stopped.
  if (intent.error && STOPPED_STATES.has(intent.state)) {
    out.push({
      at: iso(intent.updatedAt),
      step: "error",
      title: `Stopped: ${intent.error.code}`,
      detail: intent.error.message,
      status: intent.state,
    });
  }
  if (intent.attention)
    out.push({
      at: iso(intent.updatedAt),
      step: "error",
      title: "Needs a person's attention (as of the last update)",
      detail: intent.attention,
      status: intent.state,
    });
  return out;
}

/** Oldest first; entries at the same time (or with no readable time) keep the order they were told in. */
function byTime(entries: TimelineEntry[]): TimelineEntry[] {
  const order = (e: TimelineEntry) => Date.parse(e.at) || 0;
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => order(a.e) - order(b.e) || a.i - b.i)
    .map(({ e }) => e);
}

/** The purchase's timeline, oldest first, and the calls whose transcripts tell of it. */
export async function timelineOf(
  journal: JournalStore,
  transcripts: Transcripts,
  intent: Intent,
): Promise<{ timeline: TimelineEntry[]; transcripts: string[] }> {
  const [approval, payments, calls] = await Promise.all([
    intent.approvalId ? journal.approval(intent.approvalId) : undefined,
    paymentsOf(journal, intent),
    callsOf(journal, transcripts, intent),
  ]);
  const fetch = intent.kind === "fetch";
  const t: TimelineEntry[] = [
    ...(fetch ? fetchOpening(intent) : quoteEntries(intent)),
    ...approvalEntries(approval),
    ...reservationEntries(intent),
    ...(fetch ? payments.flatMap((p) => fetchPaymentEntries(intent, p, calls)) : payments.flatMap(paymentEntries)),
    ...(fetch ? [] : executionEntries(intent, calls)),
    ...refundEntries(intent),
    ...problemEntries(intent),
  ];
  return { timeline: byTime(t), transcripts: calls.map((c) => c.callId) };
}
