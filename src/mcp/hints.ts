/** What a human or agent can do about each refusal: the second half of every tool error. */
import type { PaidActionError } from "../engine/index.js";

export function hintFor(e: PaidActionError): string {
  switch (e.code) {
    case "config_invalid":
      return "A human must fix the configuration (see the keys named above); nothing will be paid until then. Run `paid-actions-mcp doctor`.";
    case "wallet_invalid":
      return "A human must fix the wallet file as described; nothing was paid.";
    case "invalid_input":
      return "Fix the input as described (see the tool's input schema) and call again; nothing was paid.";
    case "action_unknown":
      return "This action is not in the service's catalog; list the tools again.";
    case "action_not_allowed":
      return "The human has not allowed this action; do not retry. A human can change PAID_ACTIONS_ALLOW_ACTIONS.";
    case "budget_exceeded":
      return "Nothing was paid. Choose a cheaper option, wait for the daily window, or ask the human to raise the limit in the configuration — the agent cannot raise it.";
    case "approval_required":
      return `A person must approve this payment in the paid-actions console or terminal: tell the user it is waiting (approval ${String(e.context.approvalId ?? "<approvalId>")}). Once they have approved it, call this tool again with the same input plus approvalId. You cannot approve it yourself. Nothing was paid.`;
    case "approval_declined":
      return "The human did not approve; nothing was paid. Do not retry without asking the human first.";
    case "approval_invalid":
      return "Call the tool again without approvalId to get a new quote and a new approval.";
    case "quote_drift":
      return "The service asked to be paid something other than what it quoted; nothing was signed. Report this to the human; do not retry blindly.";
    case "quote_expired":
      return "The quote expired before it was paid; nothing was paid. Call again for a new quote.";
    case "quote_rejected":
      return "The service refused to price this; check the input or try later.";
    case "payee_not_allowed":
      return "The service asked to pay an address the human has not allowed; nothing was paid.";
    case "payment_invalid":
      return "The service refused the payment; nothing was charged. Calling again makes a fresh attempt.";
    case "payment_failed":
      return "The payment could not be made or its outcome needs a human's check; do not pay again. See list_executions and the transcript.";
    case "payment_loop":
      return "The service asked to be paid twice for one quote; nothing more was paid. A human should check with the service.";
    case "outcome_unknown":
      return "The payment may have gone through: do not start a new purchase. Call again with the same intentKey, or check list_executions; the server keeps reconciling in the background.";
    case "execution_rejected":
      return "The payment settled but the service refused the execution; a human should ask the service for the execution or a refund. Do not pay again.";
    case "service_unavailable":
      return e.context.state === "signed" || e.context.state === "unsettled" || e.context.state === "paid"
        ? "The service is not answering after payment was signed; do not pay again. The server finishes it in the background — call again with the same intentKey, or check list_executions."
        : "The service is not answering; nothing was paid. Try again later.";
    case "service_error":
      return "The service answered something unexpected; nothing more was paid. Try again later or tell the human.";
    case "not_found":
      return "Check the id; list_executions shows what this server paid for.";
    case "intent_conflict":
      return "Use a new intentKey for a different purchase.";
    case "cancelled":
      return "The call was cancelled before anything was signed; nothing was paid. Call again (the same intentKey is fine) to buy it.";
    case "busy":
      return "Another process is finishing this purchase; call again in a few seconds with the same intentKey.";
    case "allowance_exhausted":
      return "Nothing was signed or paid. The wallet's owner must grant this server's key more allowance on chain; tell the user. The agent cannot raise it. Call again once they have.";
    case "frozen":
      return "A person has frozen all payments on purpose; nothing new was paid. Tell the user that payments are frozen (with the reason, if one is given) and that only a person can unfreeze them, at a terminal: you cannot, and must not try. Do not call paid tools again until the user says payments are unfrozen; quote_action still prices actions.";
  }
}
