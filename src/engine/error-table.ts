/**
 * One row per error code, checked by the compiler: the message template (from the code's
 * typed context; the longer templates are in error-messages.ts), whether retrying the same
 * call may succeed, the HTTP status the console answers with, and what the agent is told to
 * do (the hint). errors.ts builds every error from its row; a stored error keeps the
 * message it was stored with.
 *
 * A hint is given where the purchase's money is (`money`, from the states table: none,
 * in_flight or settled; undefined when the refusal names no purchase), so that what the
 * agent is told can follow the money, not the code alone.
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
  fetchFailedMessage,
  inputMessage,
  originMessage,
  outcomeMessage,
  paymentFailedMessage,
  quote,
  quoteExpiredMessage,
  rejectedMessage,
  serviceErrorMessage,
  unavailableMessage,
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
    hint: () => "A human must fix the wallet file as described; nothing was paid.",
  },
  invalid_input: {
    message: inputMessage,
    retryable: false,
    http: 400,
    hint: () => "Fix the input as described (see the tool's input schema) and call again; nothing was paid.",
  },
  action_unknown: {
    message: (c) => `the service does not know this: ${c.detail ?? c.serviceCode ?? "no such action"}`,
    retryable: false,
    http: 500,
    hint: () => "This action is not in the service's catalog; list the tools again.",
  },
  action_not_allowed: {
    message: (c) =>
      `${c.action ?? "this action"} is not in the allowed actions (${(c.allowActions ?? []).join(", ")}); a human can change PAID_ACTIONS_ALLOW_ACTIONS`,
    retryable: false,
    http: 500,
    hint: () => "The human has not allowed this action; do not retry. A human can change PAID_ACTIONS_ALLOW_ACTIONS.",
  },
  budget_exceeded: {
    message: budgetMessage,
    retryable: false,
    http: 500,
    hint: () =>
      "Nothing was paid. Choose a cheaper option, wait for the daily window, or ask the human to raise the limit in the configuration — the agent cannot raise it.",
  },
  approval_required: {
    message: approvalRequiredMessage,
    retryable: false,
    http: 409,
    hint: (c) =>
      `A person must approve this payment in the paid-actions console or terminal: tell the user it is waiting (approval ${String(c.approvalId ?? "<approvalId>")}${c.consoleUrl ? `; the console's page for it: ${c.consoleUrl}` : ""}). Call again with the same input and this approvalId once the person has decided: an approval pays, once; a decline is refused. You cannot approve it yourself. Nothing was paid.`,
  },
  approval_declined: {
    message: approvalDeclinedMessage,
    retryable: false,
    http: 409,
    hint: () => "The human did not approve; nothing was paid. Do not retry without asking the human first.",
  },
  approval_invalid: {
    message: approvalInvalidMessage,
    retryable: false,
    http: 409,
    hint: () => "Call the tool again without approvalId to get a new quote and a new approval.",
  },
  quote_drift: {
    message: driftMessage,
    retryable: false,
    http: 500,
    hint: () =>
      "The service asked to be paid something other than what it quoted; nothing was signed. Report this to the human; do not retry blindly.",
  },
  quote_expired: {
    message: quoteExpiredMessage,
    retryable: false,
    http: 500,
    hint: () => "The quote expired before it was paid; nothing was paid. Call again for a new quote.",
  },
  quote_rejected: {
    message: rejectedMessage,
    retryable: false,
    http: 500,
    hint: () => "The service refused to price this; check the input or try later.",
  },
  payee_not_allowed: {
    message: (c) => `payee ${c.payee ?? "(none)"} is not in the configured allowed payees`,
    retryable: false,
    http: 500,
    hint: () => "The service asked to pay an address the human has not allowed; nothing was paid.",
  },
  payment_invalid: {
    message: (c) =>
      c.transaction !== undefined
        ? `the service confirmed a payment that does not match the quote; the budget stays held until a human checks transaction ${c.transaction}`
        : `the service refused the payment (${c.serviceCode ?? "refused"}) and its transfer can never land: nothing was charged`,
    retryable: false,
    http: 500,
    hint: () => "The service refused the payment; nothing was charged. Calling again makes a fresh attempt.",
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
      "The service asked to be paid twice for one quote; nothing more was paid. A human should check with the service.",
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
    message: (c) =>
      `the payment settled but the service refused the execution${c.serviceCode ? ` (${c.serviceCode})` : ""}; a human should ask the service for the execution or a refund`,
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
    hint: () => "The service answered something unexpected; nothing more was paid. Try again later or tell the human.",
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
    hint: () =>
      "The call was cancelled before anything was signed; nothing was paid. Call again (the same intentKey is fine) to buy it.",
  },
  allowance_exhausted: {
    message: (c) =>
      `${c.detail ?? `the allowance left for this server's key is ${c.allowance} USDC, less than the price ${c.amount} USDC`}: the wallet's owner must grant more allowance before this can be paid; nothing was signed`,
    retryable: false,
    http: 500,
    hint: () =>
      "Nothing was signed or paid. The wallet's owner must grant this server's key more allowance on chain; tell the user. The agent cannot raise it. Call again once they have.",
  },
  frozen: {
    message: (c) =>
      `payments are frozen by a person (${c.reason ? `reason: ${JSON.stringify(c.reason)}, ` : ""}since ${c.since}): nothing new was signed or reserved. A person must unfreeze payments at a terminal before anything is paid`,
    retryable: false,
    http: 500,
    hint: () =>
      "A person has frozen all payments on purpose; nothing new was paid. Tell the user that payments are frozen (with the reason, if one is given) and that only a person can unfreeze them, at a terminal: you cannot, and must not try. Do not call paid tools again until the user says payments are unfrozen; quote_action still prices actions.",
  },
  origin_not_allowed: {
    message: originMessage,
    retryable: false,
    http: 500,
    hint: () =>
      "Nothing was sent or paid. Only the person who set this server up can allow this origin (PAID_ACTIONS_ALLOW_ORIGINS, or allowOrigins in the configuration); tell the user which origin you need and why. Do not retry another spelling of the same address.",
  },
  fetch_failed: {
    message: fetchFailedMessage,
    retryable: false,
    http: 500,
    hint: (c) =>
      c.sent === false
        ? "No connection was made, so the request did not reach the server. Check the URL, or try again later."
        : "The request may have reached the server. Do not start a new purchase for it: call again with the same intentKey (a paid answer is returned, never paid twice), or tell the user.",
  },
  payment_unsupported: {
    message: (c) =>
      `the resource asks for no payment this server can make${c.offered ? `; it offered: ${c.offered.join("; ").slice(0, 400) || "nothing"}` : ""}; nothing was paid`,
    retryable: false,
    http: 500,
    hint: () =>
      "This resource asks to be paid in a way this server cannot pay (see offered); nothing was paid. Look for another resource, or tell the user.",
  },
  balance_insufficient: {
    message: (c) =>
      `the agent key ${c.wallet} holds ${c.balance} USDC on ${c.network}, less than the price ${c.amount} USDC: a person must add USDC to that key before this can be paid; nothing was signed`,
    retryable: false,
    http: 500,
    hint: () =>
      "Nothing was signed or paid. On this network the agent key's own USDC balance is all the chain lets it spend, and it is too low; tell the user, who must top it up. The agent cannot. Call again once they have.",
  },
} satisfies { [C in ErrorCode]: Spec<C> };
