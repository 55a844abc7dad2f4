/**
 * The engine's one error type. Callers branch on `code`, never on the message. A code,
 * once shipped, is never renamed. `context` carries what a human or agent needs to act
 * (amounts as decimal strings, ids, what drifted); it never carries a secret.
 *
 * Each code has its context's type (ErrorContexts, as Solana Kit keys its errors' context
 * by code): a constructor checks what it is given, and a reader that narrows with `isCode`
 * reads typed fields, with no cast.
 */

/** What any refusal may also say: which purchase it is about, and where that purchase stands. */
export interface PurchaseContext {
  intentId?: string;
  intentKey?: string;
  /** The intent's state once the outcome was recorded (an IntentState). */
  state?: string;
  quoteId?: string | null;
}

/** A limit that refused a payment, as budget/policy.ts says it (decimal USDC strings). */
export interface LimitContext {
  limit?: string;
  amount?: string;
  ceiling?: string;
  maxPerDay?: string;
  spentLast24h?: string;
  maxTotal?: string;
  spentTotal?: string;
  remaining?: string;
}

/** Each code's context. */
export interface ErrorContexts {
  config_invalid: { issues?: ReadonlyArray<{ key: string; message: string }>; key?: string };
  wallet_invalid: { walletPath: string; reason: string };
  /** `field`: which of the agent's fields; `issues`: the service's own, when it refused the input. */
  invalid_input: { field?: string; serviceCode?: string; issues?: readonly unknown[] };
  action_unknown: { serviceCode?: string };
  action_not_allowed: { action?: string; allowActions?: readonly string[] };
  budget_exceeded: LimitContext;
  approval_required: {
    approvalId: string;
    action: string;
    amount: string;
    currency: "USDC";
    payee?: string | null;
    expiresAt: string;
    /** A one-time sign-in link to the console's page for it, when the person was sent there (URL mode). */
    consoleUrl?: string;
  };
  /** `answer`: what the host's prompt answered (decline, cancel). */
  approval_declined: { approvalId?: string; answer?: string };
  /** The agent's approvalId, as it gave it (maybe not even a string). */
  approval_invalid: { approvalId?: unknown };
  quote_drift: { serviceCode?: string; drifts?: readonly unknown[] };
  quote_expired: Record<never, never>;
  quote_rejected: { serviceCode?: string; status?: number };
  payee_not_allowed: { payee?: string };
  payment_invalid: { serviceCode?: string; transaction?: string };
  payment_failed: { transaction?: string };
  payment_loop: { executionId?: string; transaction?: string | null };
  outcome_unknown: { serviceCode?: string; reason?: unknown };
  execution_rejected: { serviceCode?: string; transaction?: string | null };
  service_unavailable: { lastProblem?: string; retryAfterSeconds?: number };
  service_error: { status?: number };
  not_found: { executionId?: string };
  intent_conflict: Record<never, never>;
  busy: Record<never, never>;
  cancelled: Record<never, never>;
  /** Delegate mode: the allowance left on chain (decimal USDC), below the price. */
  allowance_exhausted: { owner: string; delegate: string; allowance: string; amount: string };
  frozen: { reason: string | null; since: string; frozenBy: string };
  /** Addressed to the person: `reason` names what refused it (not listed, or the address it resolves to). */
  origin_not_allowed: { origin: string; reason?: string; allowOrigins?: readonly string[] };
  /**
   * An outbound request of paid_fetch failed: `reason` is timeout, too_large, network, redirects or
   * cancelled; `sent` is false only when no connection was made (else the request may have reached the server).
   */
  fetch_failed: { origin?: string; reason?: string; status?: number; sent?: boolean };
  /** A 402 this server cannot pay: `offered` is what it asked for, one line per accepted way to pay. */
  payment_unsupported: { origin?: string; offered?: readonly string[] };
}

export type ErrorCode = keyof ErrorContexts;
export type ErrorContext<C extends ErrorCode = ErrorCode> = PurchaseContext & ErrorContexts[C];

/** Every code, in the order they were added (a shipped code is never renamed or removed). */
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
  "origin_not_allowed",
  "fetch_failed",
  "payment_unsupported",
] as const satisfies readonly ErrorCode[];

/** The context, then whether to retry: a code whose context needs nothing lets the caller leave it out. */
type ContextArgs<C extends ErrorCode> =
  Partial<ErrorContext<C>> extends ErrorContext<C>
    ? [context?: ErrorContext<C>, retryable?: boolean]
    : [context: ErrorContext<C>, retryable?: boolean];

export class PaidActionError<C extends ErrorCode = ErrorCode> extends Error {
  readonly context: ErrorContext<C>;
  /** Whether retrying the same call later may succeed. */
  readonly retryable: boolean;

  constructor(
    readonly code: C,
    message: string,
    ...args: ContextArgs<C>
  ) {
    super(message);
    const [context, retryable] = args as [ErrorContext<C> | undefined, boolean | undefined];
    this.name = "PaidActionError";
    this.context = context ?? ({} as ErrorContext<C>);
    this.retryable = retryable ?? false;
  }

  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable, ...this.context };
  }
}

/** Any error, as a union over the codes: a switch on `code` narrows its context. */
export type AnyPaidActionError = { [C in ErrorCode]: PaidActionError<C> }[ErrorCode];

/** An error as the journal keeps it, as a union over the codes. */
export type StoredError = {
  [C in ErrorCode]: { code: C; message: string; context?: ErrorContext<C>; retryable?: boolean };
}[ErrorCode];

/** Narrows an error to one code, so that its context reads typed. */
export function isCode<C extends ErrorCode>(e: unknown, code: C): e is PaidActionError<C> {
  return e instanceof PaidActionError && e.code === code;
}

/**
 * An error rebuilt from what was stored or handed over (its context a plain record): the
 * edge where a context is taken on trust, once.
 */
export function fromStored(
  code: ErrorCode,
  message: string,
  context: Record<string, unknown> | undefined,
  retryable = false,
): PaidActionError {
  return new PaidActionError(code, message, (context ?? {}) as ErrorContext, retryable);
}

/** As the journal keeps it. */
export function toStored(e: PaidActionError): StoredError {
  return { code: e.code, message: e.message, context: e.context, retryable: e.retryable } as StoredError;
}

/** Every code's own view of an error: one function per code, each reading its code's context typed. */
export type PerCode<R> = { [C in ErrorCode]: (e: PaidActionError<C>) => R };

/** Applies the function for the error's code. */
export function byCode<R>(table: PerCode<R>, e: PaidActionError): R {
  return (table[e.code] as (e: PaidActionError) => R)(e);
}
