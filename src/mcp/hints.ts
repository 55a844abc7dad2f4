/** What a human or agent can do about each refusal: the second half of every tool error, one entry per code. */
import { byCode, INTENT_STATES, STATES, type PaidActionError, type PerCode } from "../engine/index.js";

/** Whether a refusal's purchase had a proof signed (its money in flight or spent), as the states table says. */
function afterSigning(state: string | undefined): boolean {
  const known = INTENT_STATES.find((s) => s === state);
  return known !== undefined && STATES[known].money !== "none";
}

const HINTS: PerCode<string> = {
  config_invalid: () =>
    "A human must fix the configuration (see the keys named above); nothing will be paid until then. Run `paid-actions-mcp doctor`.",
  wallet_invalid: () => "A human must fix the wallet file as described; nothing was paid.",
  invalid_input: () => "Fix the input as described (see the tool's input schema) and call again; nothing was paid.",
  action_unknown: () => "This action is not in the service's catalog; list the tools again.",
  action_not_allowed: () =>
    "The human has not allowed this action; do not retry. A human can change PAID_ACTIONS_ALLOW_ACTIONS.",
  budget_exceeded: () =>
    "Nothing was paid. Choose a cheaper option, wait for the daily window, or ask the human to raise the limit in the configuration — the agent cannot raise it.",
  approval_required: (e) =>
    `A person must approve this payment in the paid-actions console or terminal: tell the user it is waiting (approval ${String(e.context.approvalId ?? "<approvalId>")}${e.context.consoleUrl ? `; the console's page for it: ${e.context.consoleUrl}` : ""}). Call again with the same input and this approvalId once the person has decided: an approval pays, once; a decline is refused. You cannot approve it yourself. Nothing was paid.`,
  approval_declined: () => "The human did not approve; nothing was paid. Do not retry without asking the human first.",
  approval_invalid: () => "Call the tool again without approvalId to get a new quote and a new approval.",
  quote_drift: () =>
    "The service asked to be paid something other than what it quoted; nothing was signed. Report this to the human; do not retry blindly.",
  quote_expired: () => "The quote expired before it was paid; nothing was paid. Call again for a new quote.",
  quote_rejected: () => "The service refused to price this; check the input or try later.",
  payee_not_allowed: () => "The service asked to pay an address the human has not allowed; nothing was paid.",
  payment_invalid: () => "The service refused the payment; nothing was charged. Calling again makes a fresh attempt.",
  payment_failed: () =>
    "The payment could not be made or its outcome needs a human's check; do not pay again. See list_executions and the transcript.",
  payment_loop: () =>
    "The service asked to be paid twice for one quote; nothing more was paid. A human should check with the service.",
  outcome_unknown: () =>
    "The payment may have gone through: do not start a new purchase. Call again with the same intentKey, or check list_executions; the server keeps reconciling in the background.",
  execution_rejected: () =>
    "The payment settled but the service refused the execution; a human should ask the service for the execution or a refund. Do not pay again.",
  service_unavailable: (e) =>
    afterSigning(e.context.state)
      ? "The service is not answering after payment was signed; do not pay again. The server finishes it in the background — call again with the same intentKey, or check list_executions."
      : "The service is not answering; nothing was paid. Try again later.",
  service_error: () =>
    "The service answered something unexpected; nothing more was paid. Try again later or tell the human.",
  not_found: () => "Check the id; list_executions shows what this server paid for.",
  intent_conflict: () => "Use a new intentKey for a different purchase.",
  cancelled: () =>
    "The call was cancelled before anything was signed; nothing was paid. Call again (the same intentKey is fine) to buy it.",
  busy: () => "Another process is finishing this purchase; call again in a few seconds with the same intentKey.",
  allowance_exhausted: () =>
    "Nothing was signed or paid. The wallet's owner must grant this server's key more allowance on chain; tell the user. The agent cannot raise it. Call again once they have.",
  frozen: () =>
    "A person has frozen all payments on purpose; nothing new was paid. Tell the user that payments are frozen (with the reason, if one is given) and that only a person can unfreeze them, at a terminal: you cannot, and must not try. Do not call paid tools again until the user says payments are unfrozen; quote_action still prices actions.",
  origin_not_allowed: () =>
    "Nothing was sent or paid. Only the person who set this server up can allow this origin (PAID_ACTIONS_ALLOW_ORIGINS, or allowOrigins in the configuration); tell the user which origin you need and why. Do not retry another spelling of the same address.",
  fetch_failed: (e) =>
    e.context.sent === false
      ? "No connection was made, so the request did not reach the server. Check the URL, or try again later."
      : "The request may have reached the server. Do not start a new purchase for it: call again with the same intentKey (a paid answer is returned, never paid twice), or tell the user.",
  payment_unsupported: () =>
    "This resource asks to be paid in a way this server cannot pay (see offered); nothing was paid. Look for another resource, or tell the user.",
};

export function hintFor(e: PaidActionError): string {
  return byCode(HINTS, e);
}
