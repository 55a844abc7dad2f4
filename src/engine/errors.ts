/**
 * The engine's one error type. Callers branch on `code`, never on the message. A code,
 * once shipped, is never renamed. `context` carries what a human or agent needs to act
 * (amounts as decimal strings, ids, what drifted); it never carries a secret.
 *
 * Each code has its context's type (ErrorContexts in error-contexts.ts, as Solana Kit keys
 * its errors' context by code), and one row in the table of error-table.ts: its message
 * template, whether a retry may succeed, the console's HTTP status and the agent's hint.
 * `paidError(code, context)` makes an error from that row; a reader that narrows with
 * `isCode` reads typed fields, with no cast.
 */
import type { ErrorCode, ErrorContext, ErrorFacts } from "./error-contexts.js";
import { ERROR_TABLE } from "./error-table.js";
import { INTENT_STATES, STATES, type Money } from "./model/states.js";

export type {
  ApprovalProblem,
  CancelStage,
  ErrorCode,
  ErrorContext,
  ErrorContexts,
  ErrorFacts,
  InputIssue,
  LimitContext,
  Payee,
  PurchaseContext,
} from "./error-contexts.js";

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
  "payment_mismatch",
  "balance_insufficient",
] as const satisfies readonly ErrorCode[];

type Loose<T> = T extends unknown ? Partial<T> : never;

/**
 * The constructor's public arguments after the message: one no value has, so `new
 * PaidActionError(code, message, …)` does not compile anywhere — an error is built by
 * `paidError`, its message and retryable from the table (fromStored rebuilds a stored one).
 */
type ContextArgs = [oldFormIsClosed: never];

/** The facts a code's message needs beyond its context; only the codes in ErrorFacts take any. */
type FactsOf<C extends ErrorCode> = C extends keyof ErrorFacts ? ErrorFacts[C] : never;

/** The one constructor's arguments: the context (left out when the code needs none), then the message's facts. */
type TableArgs<C extends ErrorCode> =
  Partial<ErrorContext<C>> extends ErrorContext<C>
    ? [context?: ErrorContext<C>, facts?: FactsOf<C>]
    : [context: ErrorContext<C>, facts?: FactsOf<C>];

export class PaidActionError<C extends ErrorCode = ErrorCode> extends Error {
  readonly context: ErrorContext<C>;
  /** Whether retrying the same call later may succeed. */
  readonly retryable: boolean;

  /**
   * The low-level form, with the message given, reached only through `make`: by the one
   * constructor (paidError) and by an error rebuilt as it was stored (fromStored).
   */
  constructor(
    readonly code: C,
    message: string,
    ...args: ContextArgs
  ) {
    super(message);
    // `make` passes the context and retryable, which the public signature does not show.
    const [context, retryable] = args as unknown as [ErrorContext<C> | undefined, boolean | undefined];
    this.name = "PaidActionError";
    this.context = context ?? ({} as ErrorContext<C>);
    this.retryable = retryable ?? false;
  }

  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable, ...this.context };
  }
}

/**
 * The one constructor: an error of `code` whose message and retryable come from the code's
 * row of the table (error-table.ts), e.g. `paidError("quote_expired", { quoteId, stage: "sign" })`.
 */
export function paidError<C extends ErrorCode>(code: C, ...args: TableArgs<C>): PaidActionError<C> {
  const [given, facts] = args as [ErrorContext<C> | undefined, FactsOf<C> | undefined];
  const context = given ?? ({} as ErrorContext<C>);
  // Indexed by a type parameter, the table's row reads as a union of rows: this is the row of C.
  const row = ERROR_TABLE[code] as unknown as {
    message: (c: ErrorContext<C>, f: FactsOf<C> | Record<never, never>) => string;
    retryable: boolean | ((c: ErrorContext<C>) => boolean);
  };
  const retryable = typeof row.retryable === "function" ? row.retryable(context) : row.retryable;
  return make(code, row.message(context, facts ?? {}), context, retryable);
}

/** The constructor with every argument, retryable too: for paidError (a context the table's form checked) and fromStored. */
function make<C extends ErrorCode>(
  code: C,
  message: string,
  context: ErrorContext<C>,
  retryable: boolean,
): PaidActionError<C> {
  const full = PaidActionError as unknown as new (
    code: C,
    message: string,
    context: ErrorContext<C>,
    retryable: boolean,
  ) => PaidActionError<C>;
  return new full(code, message, context, retryable);
}

/** Any error, as a union over the codes: a switch on `code` narrows its context. */
export type AnyPaidActionError = { [C in ErrorCode]: PaidActionError<C> }[ErrorCode];

/**
 * An error as the journal keeps it, as a union over the codes. Its context may predate any
 * field today's messages read, so every field is optional: a stored error is read, never
 * re-worded.
 */
export type StoredError = {
  [C in ErrorCode]: { code: C; message: string; context?: Loose<ErrorContext<C>>; retryable?: boolean };
}[ErrorCode];

/** Narrows an error to one code, so that its context reads typed. */
export function isCode<C extends ErrorCode>(e: unknown, code: C): e is PaidActionError<C> {
  return e instanceof PaidActionError && e.code === code;
}

/**
 * An error rebuilt from what was stored or handed over (its context a plain record): the
 * edge where a context is taken on trust, once. The message is kept as it was: a stored
 * message is history, not rebuilt from today's table.
 */
export function fromStored(
  code: ErrorCode,
  message: string,
  context: Record<string, unknown> | undefined,
  retryable = false,
): PaidActionError {
  return make(code, message, (context ?? {}) as ErrorContext, retryable);
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

/** Where a refusal's purchase had its money, as the states table says for the state it names; undefined: no purchase named. */
export function moneyOf(context: { state?: string }): Money | undefined {
  const known = INTENT_STATES.find((s) => s === context.state);
  return known === undefined ? undefined : STATES[known].money;
}

/**
 * What a human or agent can do about a refusal: the table's hint for its code. `money` is
 * where the purchase's money is; by default what the engine found in the journal when it
 * answered (`context.money`), else what the state the refusal names says.
 */
export function hintFor(e: PaidActionError, money: Money | undefined = e.context.money ?? moneyOf(e.context)): string {
  const hint = ERROR_TABLE[e.code].hint as (c: ErrorContext, money: Money | undefined) => string;
  return hint(e.context, money);
}

/** The status the console answers a refusal of this code with. */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].http;
}
