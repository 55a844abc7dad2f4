/**
 * One row per error code, checked by the compiler: the message template (from the code's
 * typed context; the longer templates are in error-messages.ts), whether retrying the same
 * call may succeed, the HTTP status the console answers with, and what the agent is told to
 * do (the hint). errors.ts builds every error from its row; a stored error keeps the
 * message it was stored with.
 *
 * A hint is given where the purchase's money is (`money`: none, in_flight or settled — from
 * the journal's payment records of the intent when the engine answered, intent/money.ts;
 * undefined when the refusal names no purchase), so that what the agent is told follows the
 * money, not the code alone: a hint says nothing was paid, or that calling again makes a
 * fresh attempt, only where no proof of the purchase has landed or can still land. Where one
 * may have moved money, every refusal that is not itself about that money says so instead
 * (MONEY_AT_RISK); test/unit/errors-table.test.ts holds every code × money to it.
 */
import type { ErrorCode, ErrorContext, ErrorFacts } from "./error-contexts.js";
import {
  approvalDeclinedMessage,
  approvalInvalidMessage,
  approvalRequiredMessage,
  budgetMessage,
  busyMessage,
  cancelledMessage,
  configMessage,
  driftMessage,
  executionRejectedMessage,
  fetchFailedMessage,
  inputMessage,
  originMessage,
  outcomeMessage,
  paymentFailedMessage,
  paymentInvalidMessage,
  paymentMismatchMessage,
  quote,
  quoteExpiredMessage,
  rejectedMessage,
  serviceErrorMessage,
  unavailableMessage,
  unsupportedMessage,
} from "./error-messages.js";
import type { Money } from "./model/states.js";

export type { Money } from "./model/states.js";

/** What a code's row says. */
export interface Spec<C extends ErrorCode> {
  /** The message, from the context (and, for the codes in ErrorFacts, the facts only the sentence reads). */
  message: (c: ErrorContext<C>, facts: C extends keyof ErrorFacts ? ErrorFacts[C] : Record<never, never>) => string;
  /** Whether retrying the same call later may succeed: fixed per code, or read from the context where it depends on it. */
  retryable: boolean | ((c: ErrorContext<C>) => boolean);
  /** The console's HTTP status for it. */
  http: 400 | 404 | 409 | 500 | 503;
  /** What a human or agent can do about it, given where the purchase's money is: the second half of every tool error. */
  hint: (c: ErrorContext<C>, money: Money | undefined) => string;
}

/** What the agent is told where a payment of the purchase may have moved money, whatever else refused the call. */
export const MONEY_AT_RISK = {
  in_flight:
    "A payment of this purchase may still move money (its proof left, and the chain has not said yet whether it landed): do not pay again, not even with a new intentKey. Call again with the same intentKey, or check list_executions; the server keeps reconciling it.",
  settled:
    "This purchase's payment moved money (or is held as spent until a person checks it): do not pay again, not even with a new intentKey. See list_executions and the transcript, and tell the user.",
} as const;

/** MONEY_AT_RISK's words where the money is at risk; undefined where nothing of the purchase was paid (or none is named). */
function atRisk(money: Money | undefined): string | undefined {
  return money === "in_flight" || money === "settled" ? MONEY_AT_RISK[money] : undefined;
}

/** A hint for a refusal that is not about the purchase's money: its own words only where no payment of it is at risk. */
const unpaid =
  <C>(own: (c: C) => string) =>
  (c: C, money: Money | undefined): string =>
    atRisk(money) ?? own(c);

/** Every code's row. The compiler checks there is one per code, and no other. */
export const ERROR_TABLE = {
  config_invalid: {
    message: configMessage,
    retryable: false,
    http: 503,
    hint: () =>
      "A human must fix the configuration (see the keys named above); nothing will be paid until then. Run `paid-actions-mcp doctor`.",
  },
  wallet_invalid: {
    message: (c) => c.detail ?? `wallet file ${c.walletPath} does not hold a valid ed25519 keypair`,
    retryable: false,
    http: 500,
    hint: unpaid(() => "A human must fix the wallet file as described; nothing was paid."),
  },
  invalid_input: {
    message: inputMessage,
    retryable: false,
    http: 400,
    hint: unpaid(() => "Fix the input as described (see the tool's input schema) and call again; nothing was paid."),
  },
  action_unknown: {
    message: (c) => `the service does not know this: ${c.detail ?? c.serviceCode ?? "no such action"}`,
    retryable: false,
    http: 500,
    hint: unpaid(() => "This action is not in the service's catalog; list the tools again."),
  },
  action_not_allowed: {
    message: (c) =>
      `${c.action ?? "this action"} is not in the allowed actions (${(c.allowActions ?? []).join(", ")}); a human can change PAID_ACTIONS_ALLOW_ACTIONS`,
    retryable: false,
    http: 500,
    hint: unpaid(
      () => "The human has not allowed this action; do not retry. A human can change PAID_ACTIONS_ALLOW_ACTIONS.",
    ),
  },
  budget_exceeded: {
    message: budgetMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "Nothing was paid. Choose a cheaper option, wait for the daily window, or ask the human to raise the limit in the configuration — the agent cannot raise it.",
    ),
  },
  approval_required: {
    message: approvalRequiredMessage,
    retryable: false,
    http: 409,
    hint: unpaid(
      (c) =>
        `A person must approve this payment in the paid-actions console or terminal: tell the user it is waiting (approval ${String(c.approvalId ?? "<approvalId>")}${c.consoleUrl ? `; the console's page for it: ${c.consoleUrl}` : ""}). Call again with the same input and this approvalId once the person has decided: an approval pays, once; a decline is refused. You cannot approve it yourself. Nothing was paid.`,
    ),
  },
  approval_declined: {
    message: approvalDeclinedMessage,
    retryable: false,
    http: 409,
    hint: unpaid(() => "The human did not approve; nothing was paid. Do not retry without asking the human first."),
  },
  approval_invalid: {
    message: approvalInvalidMessage,
    retryable: false,
    http: 409,
    hint: unpaid(() => "Call the tool again without approvalId to get a new quote and a new approval."),
  },
  quote_drift: {
    message: driftMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "The service asked to be paid something other than what it quoted; nothing was signed. Report this to the human; do not retry blindly.",
    ),
  },
  quote_expired: {
    message: quoteExpiredMessage,
    retryable: false,
    http: 500,
    hint: unpaid(() => "The quote expired before it was paid; nothing was paid. Call again for a new quote."),
  },
  quote_rejected: {
    message: rejectedMessage,
    retryable: false,
    http: 500,
    hint: unpaid(() => "The service refused to price this; check the input or try later."),
  },
  payee_not_allowed: {
    message: (c) => `payee ${c.payee ?? "(none)"} is not in the configured allowed payees`,
    retryable: false,
    http: 500,
    hint: unpaid(() => "The service asked to pay an address the human has not allowed; nothing was paid."),
  },
  payment_invalid: {
    message: paymentInvalidMessage,
    retryable: false,
    http: 500,
    // Said only where no proof of the purchase landed or can still land: a stored refusal that
    // names a transaction is a settlement the service confirmed (payment_mismatch's, before it).
    hint: (c, money) =>
      atRisk(c.problem === undefined && c.transaction !== undefined ? "settled" : money) ??
      "The service refused the payment and its proof can never land; nothing was charged. Calling again makes a fresh attempt.",
  },
  payment_failed: {
    message: paymentFailedMessage,
    // Our RPC could not be read, or the transaction not built: nothing was signed, and that may pass.
    retryable: (c) => c.problem === "rpc" || c.problem === "build",
    http: 500,
    hint: () =>
      "The payment could not be made or its outcome needs a human's check; do not pay again. See list_executions and the transcript.",
  },
  payment_loop: {
    message: (c) =>
      c.executionId !== undefined
        ? `the service started execution ${c.executionId.slice(0, 128)} without payment; nothing was paid — a human should check`
        : `the service asked for payment again after quote ${quote(c)} was paid${c.transaction ? ` (transaction ${c.transaction})` : ""}; nothing more was paid — a human should check`,
    retryable: false,
    http: 500,
    hint: () =>
      "The service asked to be paid twice for one quote; nothing more was paid. Do not pay again; a human should check with the service.",
  },
  outcome_unknown: {
    message: outcomeMessage,
    // An intent executed without an execution will not get one by asking again; the others are still followed.
    retryable: (c) => c.problem !== "no_execution",
    http: 500,
    hint: () =>
      "The payment may have gone through: do not start a new purchase. Call again with the same intentKey, or check list_executions; the server keeps reconciling in the background.",
  },
  execution_rejected: {
    message: executionRejectedMessage,
    retryable: false,
    http: 500,
    hint: () =>
      "The payment settled but the service refused the execution; a human should ask the service for the execution or a refund. Do not pay again.",
  },
  service_unavailable: {
    message: unavailableMessage,
    retryable: true,
    http: 500,
    hint: (_c, money) =>
      money !== undefined && money !== "none"
        ? "The service is not answering after payment was signed; do not pay again. The server finishes it in the background — call again with the same intentKey, or check list_executions."
        : "The service is not answering; nothing was paid. Try again later.",
  },
  service_error: {
    message: serviceErrorMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () => "The service answered something unexpected; nothing more was paid. Try again later or tell the human.",
    ),
  },
  not_found: {
    message: (c) =>
      "companyId" in c
        ? `company ${c.companyId}: HTTP ${c.status} ${c.serviceCode}: ${c.detail}`
        : `no execution ${c.executionId} in this server's journal`,
    retryable: false,
    http: 404,
    hint: () => "Check the id; list_executions shows what this server paid for.",
  },
  intent_conflict: {
    message: (c) =>
      `intentKey ${c.intentKey ?? "(none)"} was used for a different action or input; use a new key for a new intent`,
    retryable: false,
    http: 500,
    hint: () => "Use a new intentKey for a different purchase.",
  },
  busy: {
    message: busyMessage,
    retryable: true,
    http: 500,
    hint: () => "Another process is finishing this purchase; call again in a few seconds with the same intentKey.",
  },
  cancelled: {
    message: cancelledMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "The call was cancelled before anything was signed; nothing was paid. Call again (the same intentKey is fine) to buy it.",
    ),
  },
  allowance_exhausted: {
    message: (c) =>
      `${c.detail ?? `the allowance left for this server's key is ${c.allowance} USDC, less than the price ${c.amount} USDC`}: the wallet's owner must grant more allowance before this can be paid; nothing was signed`,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "Nothing was signed or paid. The wallet's owner must grant this server's key more allowance on chain; tell the user. The agent cannot raise it. Call again once they have.",
    ),
  },
  frozen: {
    message: (c) =>
      `payments are frozen by a person (${c.reason ? `reason: ${JSON.stringify(c.reason)}, ` : ""}since ${c.since}): nothing new was signed or reserved. A person must unfreeze payments at a terminal before anything is paid`,
    retryable: false,
    http: 500,
    hint: (_c, money) =>
      [
        "A person has frozen all payments on purpose; nothing new was paid. Tell the user that payments are frozen (with the reason, if one is given) and that only a person can unfreeze them, at a terminal: you cannot, and must not try. Do not call paid tools again until the user says payments are unfrozen; quote_action still prices actions.",
        atRisk(money),
      ]
        .filter(Boolean)
        .join(" "),
  },
  origin_not_allowed: {
    message: originMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "Nothing was sent or paid. Only the person who set this server up can allow this origin (PAID_ACTIONS_ALLOW_ORIGINS, or allowOrigins in the configuration); tell the user which origin you need and why. Do not retry another spelling of the same address.",
    ),
  },
  fetch_failed: {
    message: fetchFailedMessage,
    retryable: false,
    http: 500,
    hint: unpaid((c) =>
      c.sent === false
        ? "No connection was made, so the request did not reach the server. Check the URL, or try again later."
        : "The request may have reached the server. Do not start a new purchase for it: call again with the same intentKey (a paid answer is returned, never paid twice), or tell the user.",
    ),
  },
  payment_mismatch: {
    message: paymentMismatchMessage,
    retryable: false,
    http: 500,
    hint: () =>
      "The service confirmed a payment other than the one it quoted: money moved, and this purchase is held for a person. Do not pay again, not even with a new intentKey; tell the user, who can check the transaction named above (list_executions, the console).",
  },
  payment_unsupported: {
    message: unsupportedMessage,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "This resource asks to be paid in a way this server cannot pay (see offered); nothing was paid. Look for another resource, or tell the user.",
    ),
  },
  balance_insufficient: {
    message: (c) =>
      `the agent key ${c.wallet} holds ${c.balance} USDC on ${c.network}, less than the price ${c.amount} USDC: a person must add USDC to that key before this can be paid; nothing was signed`,
    retryable: false,
    http: 500,
    hint: unpaid(
      () =>
        "Nothing was signed or paid. On this network the agent key's own USDC balance is all the chain lets it spend, and it is too low; tell the user, who must top it up. The agent cannot. Call again once they have.",
    ),
  },
} satisfies { [C in ErrorCode]: Spec<C> };
