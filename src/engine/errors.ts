/**
 * The engine's one error type. Callers branch on `code`, never on the message. A code,
 * once shipped, is never renamed. `context` carries what a human or agent needs to act
 * (amounts as decimal strings, ids, what drifted); it never carries a secret.
 */

export const ERROR_CODES = [
  "config_invalid",
  "wallet_invalid",
  "invalid_input",
  "action_unknown",
  "action_not_allowed",
  "budget_exceeded",
  "approval_required",
  "approval_declined",
  "approval_invalid",
  "quote_drift",
  "quote_expired",
  "quote_rejected",
  "payee_not_allowed",
  "payment_invalid",
  "payment_failed",
  "payment_loop",
  "outcome_unknown",
  "execution_rejected",
  "service_unavailable",
  "service_error",
  "not_found",
  "intent_conflict",
  "busy",
  "cancelled",
  "allowance_exhausted",
  "frozen",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class PaidActionError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
    /** Whether retrying the same call later may succeed. */
    readonly retryable = false,
  ) {
    super(message);
    this.name = "PaidActionError";
  }

  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable, ...this.context };
  }
}
