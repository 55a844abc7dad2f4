/**
 * What the service's answers to a paid intent's requests mean, and how a failure counts, as
 * pure functions beside checkChallenge and checkQuote: the confirmation of a proof, a refused
 * execution request, an execution that is not this intent's, and the outcome a thrown error
 * is at a state. The steps (steps/send.ts, steps/execute.ts) act on these verdicts; nothing
 * here sends or records anything. Table-tested.
 */
import type { Execution, Payment } from "../../domain/wire.js";
import { paidError, type PaidActionError } from "../errors.js";
import { quoteAmount } from "../budget/policy.js";
import { STATES } from "../model/states.js";
import type { Outcome } from "../model/transitions.js";
import type { IntentState } from "../model/types.js";

/** A refusal as the service client hands it on. */
export interface Refusal {
  status: number;
  error: { code: string; message: string; [k: string]: unknown };
}

/** The service's answer to a request, as the service client hands it on. */
export type Answer<T> = ({ ok: true; body: T } | ({ ok: false } & Refusal)) & { status: number };

/** What the intent knows of its purchase when an answer comes. */
export interface Purchase {
  state: IntentState;
  action: string;
  quoteId?: string | null;
  amount?: bigint | null;
  paymentTx?: string | null;
}

/** An answer that leaves the paid intent to a human, and the attention note it is recorded with. */
export interface ForAHuman {
  error: PaidActionError;
  attention: string;
}

export type ConfirmationVerdict =
  /** The service settled exactly what was priced. */
  | { kind: "settled"; payment: Payment }
  /** The service confirmed a payment that is not the quote's: the budget stays held for a human. */
  | { kind: "mismatch"; payment: Payment; error: PaidActionError }
  /** No /payments/confirm: the proof settles with the execution request instead. */
  | { kind: "no_endpoint" }
  /** The same key is still being settled: ask again later. */
  | { kind: "in_progress"; error: PaidActionError }
  /** Refused: whether money moved is for the chain to say. */
  | { kind: "refused"; refusal: Refusal };

/** What the answer to `POST /payments/confirm` means for an intent whose proof left. */
export function confirmationVerdict(answer: Answer<Payment>, purchase: Purchase): ConfirmationVerdict {
  if (answer.ok) {
    const p = answer.body;
    if (p.quoteId === purchase.quoteId && quoteAmount(p.amount) === purchase.amount)
      return { kind: "settled", payment: p };
    // Money moved, and not as priced: its own code, whose advice is not to pay again.
    const error = paidError("payment_mismatch", { transaction: p.transaction }, { quote: p.quoteId, amount: p.amount });
    return { kind: "mismatch", payment: p, error };
  }
  if (answer.status === 404 || answer.status === 405 || answer.status === 501) return { kind: "no_endpoint" };
  if (answer.error.code === "idempotency_in_progress")
    return {
      kind: "in_progress",
      error: paidError("outcome_unknown", { problem: "settling" }),
    };
  return { kind: "refused", refusal: { status: answer.status, error: answer.error } };
}

export type ExecutionRefusalVerdict =
  /** The same key is still running at the service: ask again later. */
  | { kind: "in_progress"; error: PaidActionError }
  /** The proof travelled with this request and was refused: the chain must judge. */
  | { kind: "proof_refused" }
  /** The quote already funded an execution: adopt it if it is ours, else a human checks. */
  | { kind: "maybe_ours"; executionId: string; otherwise: ForAHuman }
  /** Paid, and refused: a human checks (402 again is a payment loop). */
  | ({ kind: "for_a_human" } & ForAHuman);

/** What a refused `POST /executions` means for the intent (state `signed` or `paid`). */
export function executionRefusalVerdict(refusal: Refusal, purchase: Purchase): ExecutionRefusalVerdict {
  const { status, error } = refusal;
  if (error.code === "idempotency_in_progress")
    return {
      kind: "in_progress",
      error: paidError("outcome_unknown", { problem: "executing" }),
    };
  if (purchase.state === "signed") return { kind: "proof_refused" };
  if (status === 402)
    return {
      kind: "for_a_human",
      attention: "402 after payment",
      error: paidError("payment_loop", { quoteId: purchase.quoteId, transaction: purchase.paymentTx }),
    };
  const rejected: ForAHuman = {
    attention: `execution refused: ${error.code}`,
    error: paidError(
      "execution_rejected",
      { serviceCode: error.code, quoteId: purchase.quoteId, transaction: purchase.paymentTx },
      { status, detail: error.message },
    ),
  };
  if (error.code === "quote_consumed" && typeof error.executionId === "string")
    return { kind: "maybe_ours", executionId: error.executionId, otherwise: rejected };
  return { kind: "for_a_human", ...rejected };
}

/** Whether an execution the service names is this intent's: its action, and its quote. */
export function isOurs(e: Pick<Execution, "action" | "quoteId">, purchase: Purchase): boolean {
  return e.quoteId === purchase.quoteId && e.action === purchase.action;
}

/** Why an execution the service returned cannot be recorded for this intent; undefined when it can. */
export function executionProblem(e: Execution, purchase: Purchase): ForAHuman | undefined {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(e.executionId))
    return { attention: "bad execution id", error: paidError("service_error", { problem: "execution_id" }) };
  if (e.action !== purchase.action || (e.quoteId !== undefined && e.quoteId !== purchase.quoteId))
    return {
      attention: "execution mismatch",
      error: paidError("service_error", {
        problem: "execution_other",
        forAction: e.action.slice(0, 60),
        forQuote: e.quoteId?.slice(0, 64) ?? null,
      }),
    };
  return undefined;
}

/** How a thrown error counts at a state: a cancellation, a transient failure, or the state's own failure. */
export function failureOutcome(state: IntentState, error: Pick<PaidActionError, "code" | "retryable">): Outcome {
  if (error.code === "cancelled") return "cancelled";
  if (error.retryable) return "transient";
  return STATES[state].onFailure ?? "refused";
}
