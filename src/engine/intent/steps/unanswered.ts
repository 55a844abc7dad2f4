/**
 * A paid action whose execution request got no answer at all (5xx, a timeout, no connection)
 * while a resume drives it: no caller waits, so the chain is asked instead of the service.
 *
 * From `signed` (the proof travelled with the request, and may have been settled): what our
 * RPC shows of the payment decides — landed as priced, it is spent and the execution is asked
 * for again at once; it can never land, nothing was spent and a fresh attempt follows (as for
 * a refused proof: establish.ts); not known yet, the intent stays signed and is asked again
 * later. From `paid`: once the transfer landed longer ago than the reconciler's bound, a
 * person is told what the chain shows (the intent's `attention`), and the execution is asked
 * for again all the same, with the same idempotency key. When the service does create it,
 * the note is withdrawn (execute.ts): the transcript keeps it.
 */
import { formatDecimal } from "../../../domain/money.js";
import { establishFate } from "../../chain/settlement.js";
import type { PaidActionError } from "../../errors.js";
import type { IntentIn } from "../../model/types.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { landedNotAsPriced, neverLanded } from "./establish.js";

/** How a note about a silent service begins: it is found again (and withdrawn) by it. */
const UNANSWERED = "paid and unanswered:";

/** What the note for a person says: the chain's facts and the service's silence. */
export interface Silence {
  amount: bigint;
  payee: string;
  tx: string;
  /** When our RPC showed the transfer landed (ms). */
  landedAt: number;
  now: number;
  /** What the last attempt got instead of an answer, as the service client says it. */
  lastProblem?: string;
}

/** The note a person reads (one part of `attention`: it never contains the "; " notes are joined with). */
export function unansweredNote(s: Silence): string {
  const minutes = Math.floor((s.now - s.landedAt) / 60_000);
  const last = s.lastProblem ? ` (last attempt: ${s.lastProblem.slice(0, 80).replaceAll(";", ",")})` : "";
  return (
    `${UNANSWERED} our RPC shows ${formatDecimal(s.amount)} USDC paid to ${s.payee} in transaction ${s.tx}, ` +
    `landed by ${new Date(s.landedAt).toISOString()}, and the service has not created the execution in the ` +
    `${minutes} min since${last}. It is asked again with the same idempotency key. If it stays silent, ask the ` +
    `service for the execution or a refund, quoting the transaction`
  );
}

/** Whether the intent's attention already carries the note. */
export function saysUnanswered(attention: string | null): boolean {
  return attention?.split("; ").some((part) => part.startsWith(UNANSWERED)) ?? false;
}

/** The attention without the note (the service answered after all); null when nothing else is left. */
export function withoutUnansweredNote(attention: string | null): string | null {
  if (!attention) return attention;
  const left = attention.split("; ").filter((part) => !part.startsWith(UNANSWERED));
  return left.length > 0 ? left.join("; ") : null;
}

type Executing = IntentIn<"paid" | "signed", "action">;
/** No answer at all: what the service client throws when every attempt went unanswered. */
type NoAnswer = PaidActionError<"service_unavailable">;

/**
 * The move for an execution request that got no answer (`error`, service_unavailable), on a
 * resume (h.resuming): what the chain shows decides, or a person is told; see the header.
 */
export async function unanswered(h: HeldIntent, intent: Executing, error: NoAnswer): Promise<Move> {
  if (intent.state === "signed") return chainDecides(h, intent, error);
  return tellAfterBound(h, intent, error);
}

/** From `signed`: the payment's fate, read from our RPC through its rail, decides. */
async function chainDecides(h: HeldIntent, intent: IntentIn<"signed", "action">, error: NoAnswer): Promise<Move> {
  const fate = await establishFate(h.c, intent);
  h.c.transcript(intent, "fate", {
    after: "no answer to the execution request",
    fate: fate.kind,
    ...(fate.kind === "landed" ? { transaction: fate.tx.signature, problems: fate.problems } : { why: fate.why }),
  });
  if (fate.kind === "unknown") return refusal(intent.state, error); // as before: signed, followed
  if (fate.kind === "never") return neverLanded(intent, fate.why);
  if (fate.problems.length > 0) return landedNotAsPriced(intent, fate.tx.signature, fate.problems);
  // Spent, as the settlement's verification would record it; the execution is asked for next.
  return { outcome: "landed", patch: { paymentTx: fate.tx.signature, settlement: "verified" } };
}

/** From `paid`: past the bound since the transfer landed, once, a person is told; asked again either way. */
async function tellAfterBound(h: HeldIntent, intent: IntentIn<"paid", "action">, error: NoAnswer): Promise<Move> {
  const bound = h.resuming?.unansweredAttentionMs;
  const now = h.c.now();
  const p = await h.c.journal.payment(intent.quoteId);
  if (bound === undefined || !p || p.fate !== "landed" || p.tx === null || p.checkedAt === null)
    return refusal(intent.state, error);
  if (now - p.checkedAt < bound || saysUnanswered(intent.attention)) return refusal(intent.state, error);
  const { lastProblem } = error.context;
  const note = unansweredNote({
    amount: p.amount,
    payee: p.payee,
    tx: p.tx,
    landedAt: p.checkedAt,
    now,
    ...(lastProblem ? { lastProblem } : {}),
  });
  return {
    outcome: "unanswered",
    error,
    patch: { attention: [intent.attention, note].filter(Boolean).join("; ") },
    note: { step: "unanswered", data: { transaction: p.tx, attention: note } },
  };
}
