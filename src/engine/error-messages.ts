/**
 * The words of the error table (error-table.ts): for each code whose message has several
 * shapes, the template that picks one from the code's typed context. Pure: no I/O, and
 * nothing read but the context (and a code's facts).
 */
import { describeDrifts } from "./budget/policy.js";
import { describeIssues } from "./config/config.js";
import type {
  ApprovalProblem,
  CancelStage,
  ConfigKeyProblem,
  ErrorContext,
  ErrorFacts,
  InputRule,
  Payee,
} from "./error-contexts.js";
import type { PasskeyProblem } from "./evidence/webauthn.js";

/** The quote a refusal is about, as a message names it. */
export const quote = (c: { quoteId?: string | null }) => c.quoteId ?? "(none)";

/** Who was handed the proof, as a message names it. */
const WHO: { [P in Payee]: string } = { service: "the service", resource: "the resource" };

/** An issue as a message lists it: `path: message`, or as the service gave it. */
export function issueText(i: unknown): string {
  if (i && typeof i === "object" && "path" in i && "message" in i) return `${String(i.path)}: ${String(i.message)}`;
  return JSON.stringify(i) ?? String(i);
}
/** Where an issue is, for a list of paths. */
const pathOf = (i: unknown) => (i && typeof i === "object" && "path" in i ? String(i.path) : String(i));
const issueList = (issues: readonly unknown[]) => issues.map(issueText).join("; ");

/** The one key that stops the engine, as a person reads what to do. */
const CONFIG_KEYS: { [K in ConfigKeyProblem]: string } = {
  SOLANA_RPC_URL: "SOLANA_RPC_URL is not set: the engine cannot read the chain",
  PAID_ACTIONS_JOURNAL_URL:
    "PAID_ACTIONS_JOURNAL_URL (journalUrl) is invalid, so the journal cannot be opened; see: paid-actions-mcp doctor",
  PAID_ACTIONS_FACILITATOR_URL:
    "no facilitator is configured to search: a person can set PAID_ACTIONS_FACILITATOR_URL (or facilitatorUrl in the config file)",
};

/** A fixed rule the agent's input broke, as it reads. */
const INPUT_RULES: { [R in InputRule]: string } = {
  cursor: "cursor is not one this server issued",
  origin: "origin must be an http(s) origin, like https://api.example.com",
  action_name: "action must be a catalog action name such as servers.provision",
  input_object: "input must be an object",
  input_json: "input is not serializable JSON",
  input_size: "input is larger than 60 KiB",
  budget_amount: 'budget.amount must be a decimal string such as "2.50" (at most 6 decimals)',
  intent_key: "intentKey must be 8-100 characters of A-Z a-z 0-9 _ . : -",
  arguments_object: "arguments must be an object",
  arguments_depth: "the arguments are nested too deeply",
};

export function inputMessage(c: ErrorContext<"invalid_input">): string {
  switch (c.problem) {
    case "budget_currency":
      return `budget.currency must be USDC, not ${JSON.stringify(c.got).slice(0, 40)}`;
    case "proto_key":
      return `the arguments carry a key named __proto__ (${c.issues
        .map(pathOf)
        .join(", ")
        .slice(0, 200)}), which no tool accepts; nothing was paid`;
    case "arguments":
      return `invalid arguments for ${c.tool}: ${issueList(c.issues)}`;
    case "schema":
      return `the input does not match ${c.tool}'s schema: ${issueList(c.issues)}`;
    case "extras":
      return c.issues[0] ? issueText(c.issues[0]) : "budget, intentKey or approvalId is malformed";
    case "request":
      return c.detail;
    case "service":
      return `the service refused the input: ${c.detail}`;
    case "search":
      return `search refused (HTTP ${c.status} ${c.serviceCode}): ${c.detail}`;
    default:
      return INPUT_RULES[c.problem];
  }
}

/** Why an approvalId cannot be used, as it reads. */
const APPROVAL_PROBLEMS: { [P in ApprovalProblem]: (id: string, c: ErrorContext<"approval_invalid">) => string } = {
  missing: (id) => `approval ${id} does not exist`,
  mismatch: (id) => `approval ${id} was for another quote or a lower amount`,
  other_input: (id) =>
    `approval ${id} was given for a different action or input; send exactly the input that was approved`,
  expired: (id, c) =>
    c.expiresAt === undefined
      ? `approval ${id} expired with its quote; call again without approvalId for a new quote`
      : `approval ${id} expired with its quote at ${c.expiresAt}; the agent must ask again`,
  used: (id) => `approval ${id} was already used`,
  decided: (id, c) => `approval ${id} is already ${c.status ?? "decided"}`,
  changed: (id) => `approval ${id} changed while approving; check it again`,
  gone: (id) => `approval ${id} expired or is gone; call again without it for a new quote. Nothing was paid`,
  foreign_state: () =>
    "the call came back with a state this server did not issue; call again without it for a new quote. Nothing was paid",
  other_call: () =>
    "the approval question was asked for another call (tool or input differ); call again for a new quote. Nothing was paid",
  passkey_required: (id) =>
    `approval ${id} needs the person's passkey: a passkey is registered, so only an approval given with it in the paid-actions console counts`,
  passkey_invalid: (id, c) =>
    `the passkey assertion for approval ${id} does not verify (${PASSKEY_CHECKS[c.passkey ?? "format"]}); it does not count`,
};

/** Which check a passkey assertion failed, as a person reads it. */
const PASSKEY_CHECKS: { [P in PasskeyProblem]: string } = {
  format: "it is malformed",
  type: "it is not an approval's assertion",
  challenge: "it was made for other terms",
  origin: "it was made outside this console",
  rp_id: "it was made for another site",
  user_presence: "no person was present",
  user_verification: "the person was not verified by the authenticator",
  signature: "its signature is not the passkey's",
  credential: "it is not from a registered passkey",
  counter: "its counter did not advance: a replay",
  algorithm: "its key is of an algorithm not accepted",
};

/** Where the person approves, when a page was offered: its URL, and the one-time code to type there when there is one. */
function consolePage(c: ErrorContext<"approval_required">): string {
  if (c.consoleUrl === undefined) return "";
  const code = c.consoleCode ? ` (type the one-time code ${c.consoleCode} there; it works once, for 5 minutes)` : "";
  return `. The console's page for it: ${c.consoleUrl}${code}`;
}

export function approvalRequiredMessage(c: ErrorContext<"approval_required">): string {
  const what = `${c.amount} USDC for ${c.action}${c.payee ? ` to ${c.payee}` : ""}`;
  // Returned before a person decided (the host could not ask, or no decision came in time).
  if (c.detail !== undefined)
    return `${c.detail}; a person must approve this payment in the paid-actions console or terminal: ${what} (approval ${c.approvalId}; it stays waiting until its quote expires at ${c.expiresAt})${consolePage(c)}. Call again with the same input and approvalId "${c.approvalId}" once the person has decided; nothing was paid.`;
  return `a person must approve this payment in the paid-actions console or terminal: ${what}, above the approval threshold (approval ${c.approvalId}; it expires with the quote at ${c.expiresAt}). Once the person has approved it, call again with the same input and approvalId "${c.approvalId}". Nothing was paid.`;
}

export function approvalDeclinedMessage(c: ErrorContext<"approval_declined">): string {
  if (c.amount !== undefined && c.action !== undefined)
    return `the human did not approve paying ${c.amount} USDC for ${c.action} (${c.answer ?? "declined"}); nothing was paid`;
  if (c.answer === "decline") return "the person declined this payment; nothing was paid";
  if (c.answer !== undefined) return `the human did not approve this payment (${c.answer}); nothing was paid`;
  return `approval ${c.approvalId ?? "(none)"} was declined; nothing was paid`;
}

export function budgetMessage(c: ErrorContext<"budget_exceeded">): string {
  if (c.limit === "maxPerDay")
    return `paying ${c.amount} USDC would exceed the daily limit of ${c.maxPerDay} USDC (${c.spentLast24h} spent or reserved in the last 24 h)`;
  if (c.limit === "maxTotal")
    return `paying ${c.amount} USDC would exceed the total limit of ${c.maxTotal} USDC (${c.spentTotal} spent or reserved)`;
  const over = c.limit === "budget" ? "budget given for this call" : `per-call limit (${c.limit ?? "maxPerCall"})`;
  return `the price ${c.amount} USDC is above the ${over} of ${c.ceiling} USDC${c.stage === "sign" ? "; nothing was signed" : ""}`;
}

export function driftMessage(c: ErrorContext<"quote_drift">): string {
  switch (c.problem) {
    case "challenge":
      return `the payment challenge does not match the quote, so nothing was signed: ${describeDrifts(c.drifts)}`;
    case "other_intent":
      return `the service says quote ${quote(c)} is not for this intent (${c.serviceCode}: ${c.detail}); nothing was signed`;
    case "prepared_other":
      return `/payments/prepare answered for quote ${c.preparedFor.slice(0, 64)}, not ${quote(c)}; nothing was signed`;
    case "quote":
      return `${c.detail}; nothing was signed`;
  }
}

export function rejectedMessage(c: ErrorContext<"quote_rejected">): string {
  switch (c.problem) {
    case "preflight":
      return `the service refused the intent before payment (HTTP ${c.status} ${c.serviceCode}): ${c.detail}; nothing was signed`;
    case "prepare":
      return `the service refused to prepare a payment challenge (HTTP ${c.status} ${c.serviceCode}): ${c.detail}`;
    case "quote":
      return `the service refused to quote (HTTP ${c.status} ${c.serviceCode}): ${c.detail}`;
    case "no_challenge":
      return "the service gave no payment challenge for this quote (none in the quote, /payments/prepare or the 402); nothing was signed";
  }
}

export function paymentFailedMessage(c: ErrorContext<"payment_failed">): string {
  switch (c.problem) {
    case "rpc":
      if (c.what === "balance")
        return `could not read the agent key's USDC balance on ${c.network} from the EVM RPC (${c.detail}); nothing was signed`;
      return c.what === "allowance"
        ? `could not read the allowance on the owner's USDC account from the Solana RPC (${c.detail}); nothing was signed`
        : `could not get a blockhash to sign with from the Solana RPC (${c.detail}); nothing was signed`;
    case "build":
      return c.network !== undefined
        ? `could not sign the payment authorization on ${c.network}: ${c.detail} (check PAID_ACTIONS_EVM_WALLET)`
        : `could not build the payment transaction: ${c.detail} (check SOLANA_RPC_URL and that the wallet holds USDC)`;
    case "blockhash":
      return `the payment transaction was not built with the blockhash our Solana RPC gave (${c.blockhash}); nothing was sent`;
    case "landed":
      return c.detail;
  }
}

export function unavailableMessage(c: ErrorContext<"service_unavailable">): string {
  switch (c.problem) {
    case "no_answer":
      return `the service did not answer ${c.request} usefully after ${c.attempts} attempts (${c.lastProblem}); it is safe to retry later with the same intent`;
    case "journal":
      return `the journal cannot be opened (${c.detail}); nothing was paid — try again when it is back`;
    case "sandbox_locked":
      return `the embedded sandbox for ${c.home} is locked by another process that does not answer`;
    case "discovery":
      return `the facilitator's discovery list (${c.url}) did not answer: ${c.detail}`;
  }
}

export function serviceErrorMessage(c: ErrorContext<"service_error">): string {
  switch (c.problem) {
    case "redirect":
      return `the service answered ${c.request} with a redirect (HTTP ${c.status}${c.location ? ` to ${c.location}` : ""}); redirects are not followed`;
    case "off_interface":
      return `the service's answer to ${c.request} does not match the v1 interface: ${c.detail}`;
    case "company":
      return `company ${c.companyId}: HTTP ${c.status} ${c.serviceCode}: ${c.detail}`;
    case "search":
      return `search refused (HTTP ${c.status} ${c.serviceCode}): ${c.detail}`;
    case "discovery_size":
      return `the facilitator's discovery list (${c.url}) is larger than 4 MiB`;
    case "discovery_json":
      return `the facilitator's discovery list (${c.url}) is not JSON`;
    case "discovery_status":
      return `the facilitator's discovery list (${c.url}) answered HTTP ${c.status}`;
    case "execution_id":
      return "the service returned an execution id with characters an id cannot have";
    case "execution_other":
      return `the service returned an execution for ${c.forAction.slice(0, 60)} / ${(c.forQuote ?? "(no quote)").slice(0, 64)}, not for this intent`;
    case "unexpected":
      return `unexpected failure: ${c.detail}`.slice(0, 500);
  }
}

export function fetchFailedMessage(c: ErrorContext<"fetch_failed">, f: ErrorFacts["fetch_failed"]): string {
  switch (c.reason) {
    case "cancelled":
      return `the request to ${c.origin} was cancelled`;
    case "timeout":
      return `${c.origin} did not answer in time`;
    case "too_large":
      return `${c.origin} answered more than ${f.limit ?? "the allowed"} bytes`;
    case "redirects":
      return `${c.origin} redirected more than ${f.limit ?? "the allowed number of"} times`;
    case "network":
      if (f.host === undefined) return `the request to ${c.origin} failed${f.errno ? ` (${f.errno})` : ""}`;
      return f.errno ? `the host ${f.host} does not resolve (${f.errno})` : `the host ${f.host} resolves to no address`;
  }
}

/** What a standing rule allows, when the address an origin resolves to breaks it. */
const ORIGIN_RULES = {
  public_only: (origin: string) =>
    `"*" allows public addresses only; listing the exact origin ${origin} in allowOrigins allows it.`,
  loopback_only: () => "Plain http and localhost names are allowed to loopback addresses only.",
} as const;

export function originMessage(c: ErrorContext<"origin_not_allowed">): string {
  if (c.rule !== undefined)
    return `${c.origin} is not allowed: ${c.reason ?? "not allowed"}; nothing was sent. ${ORIGIN_RULES[c.rule](c.origin)}`;
  if (c.allowOrigins !== undefined)
    return `${c.origin} is not an origin this server may pay (allowed: ${c.allowOrigins.length > 0 ? c.allowOrigins.join(", ") : "none"}); nothing was sent — a person can add it to PAID_ACTIONS_ALLOW_ORIGINS (or allowOrigins in the config file)`;
  return `${c.origin} is not allowed; nothing was sent`;
}

export function configMessage(c: ErrorContext<"config_invalid">): string {
  if ("issues" in c)
    return c.issues.length > 0
      ? `the configuration is invalid, so nothing will be paid: ${describeIssues(c.issues)}`
      : "the configuration is invalid, so nothing will be paid";
  if ("needs" in c) return c.needs === "payer" ? "this command does not pay" : "this command reads no chain";
  return CONFIG_KEYS[c.key];
}

export function approvalInvalidMessage(c: ErrorContext<"approval_invalid">): string {
  return APPROVAL_PROBLEMS[c.problem](String(c.approvalId).slice(0, 60), c);
}

export function outcomeMessage(c: ErrorContext<"outcome_unknown">): string {
  switch (c.problem) {
    case "stopped":
      return `intent ${c.intentId} stopped in state ${c.state}`;
    case "no_execution":
      return `intent ${c.intentId} has no execution`;
    case "settling":
      return "the payment is still being settled by the service; the engine will check again";
    case "executing":
      return "the execution request is still running at the service; the engine will check again";
    case "not_settled": {
      const reason = typeof c.reason === "string" ? `: ${c.reason.slice(0, 120)}` : "";
      return `${WHO[c.who]} did not settle the payment (HTTP ${c.status} ${c.serviceCode}${reason}: ${c.detail}); whether money moved is being established from the chain, and the budget stays reserved`;
    }
    case "chain_unsure":
      return `${WHO[c.who]} did not settle the payment and the chain cannot tell yet whether it landed (${c.why}); the budget stays reserved and the engine keeps checking — call again with the same intentKey`;
  }
}

export function paymentInvalidMessage(c: ErrorContext<"payment_invalid">, f: ErrorFacts["payment_invalid"]): string {
  if (c.problem === "never_landed")
    return `${WHO[c.who]} refused the payment (${c.serviceCode ?? "refused"}) and its transfer can never land (${c.why}): nothing was charged`;
  if (c.transaction !== undefined) {
    const what =
      f.quote !== undefined ? ` (quote ${f.quote.slice(0, 64)}, amount ${(f.amount ?? "?").slice(0, 40)})` : "";
    return `the service confirmed a payment that does not match the quote${what}; the budget stays held until a human checks transaction ${c.transaction.slice(0, 100)}`;
  }
  return `the service refused the payment (${c.serviceCode ?? "refused"}) and its transfer can never land: nothing was charged`;
}

export function paymentMismatchMessage(c: ErrorContext<"payment_mismatch">, f: ErrorFacts["payment_mismatch"]): string {
  const what =
    f.quote !== undefined ? ` (quote ${f.quote.slice(0, 64)}, amount ${(f.amount ?? "?").slice(0, 40)})` : "";
  return `the service confirmed a payment that does not match the quote${what}; the budget stays held until a human checks transaction ${c.transaction.slice(0, 100)}`;
}

export function executionRejectedMessage(
  c: ErrorContext<"execution_rejected">,
  f: ErrorFacts["execution_rejected"],
): string {
  if (c.problem === "undelivered") {
    const answer = c.answered === null ? "it gave no answer" : `it answered HTTP ${c.answered}`;
    return `the payment for ${c.origin} landed on chain${c.transaction ? ` in ${c.transaction}` : ""}, but the resource was not delivered (${answer}); it is not paid again — a person should ask the seller for it or for a refund`;
  }
  const how = c.serviceCode ? ` (${f.status !== undefined ? `HTTP ${f.status} ` : ""}${c.serviceCode})` : "";
  return `the payment settled but the service refused the execution${how}${f.detail !== undefined ? `: ${f.detail}` : ""}; a human should ask the service for the execution or a refund`;
}

export function unsupportedMessage(c: ErrorContext<"payment_unsupported">): string {
  switch (c.problem) {
    case "not_402":
      return `the resource answered HTTP ${c.status} without asking for payment this time; nothing was paid`;
    case "no_requirements":
      return "the resource answered 402 without x402 v2 payment requirements (a PAYMENT-REQUIRED header); nothing was paid";
    case "fee_payer":
      return "the resource names this server's own wallet (or its owner) as the fee payer: a proof signed for it would be whole, for the seller to send to the chain itself with our wallet paying the fee; nothing was signed and nothing was paid";
    case "memo_in_use":
      return `the resource's memo (${c.memo.slice(0, 64)}) is in use by another purchase of this wallet, so the chain could not tell the two payments apart; nothing was paid for this one`;
    case "no_match":
    case undefined: {
      const what =
        c.terms !== undefined
          ? ` (scheme ${c.terms})`
          : c.network !== undefined
            ? ` (scheme exact on ${c.network} in USDC ${c.mint ?? "?"})`
            : "";
      const offered = c.offered ? `; it offered: ${c.offered.join("; ").slice(0, 400) || "nothing"}` : "";
      return `the resource asks for no payment this server can make${what}${offered}; nothing was paid`;
    }
  }
}

/** What holds a purchase another caller is driving, as it reads. */
const BUSY = {
  call: "another call is driving this purchase right now; call again in a few seconds with the same intentKey",
  waiting_call:
    "another call is still driving this purchase (it may be waiting for a human's approval); call again in a little while with the same intentKey",
  process: "another process is driving this purchase right now; call again in a few seconds with the same intentKey",
  journal: "the journal is busy with another process's write; retry in a moment with the same intentKey",
} as const;

export const busyMessage = (c: ErrorContext<"busy">) => BUSY[c.by ?? "process"];

/** When a call was cancelled, as it reads. */
const CANCELLED: { [S in CancelStage]: string } = {
  before_start: "the call was cancelled before it started; nothing was paid",
  fetch_before_start: "the call was cancelled before it started; nothing was sent",
  before_quote: "the call was cancelled before the quote; nothing was paid",
  before_request: "the call was cancelled before the request; nothing was paid",
  after_quote: "the call was cancelled after the quote; nothing was paid",
  after_price: "the call was cancelled after the price; nothing was paid",
  before_reserve: "the call was cancelled before the payment was reserved; nothing was paid",
  before_sign: "the call was cancelled before anything was signed; nothing was paid",
  waiting_for_service: "the call was cancelled while waiting for the service; nothing was paid",
  waiting_for_person: "the call was cancelled while it waited for a person; nothing was paid",
};

export const cancelledMessage = (c: ErrorContext<"cancelled">) =>
  c.stage === undefined ? "the call was cancelled; nothing was paid" : CANCELLED[c.stage];

export function quoteExpiredMessage(c: ErrorContext<"quote_expired">): string {
  const when = {
    service: "(the service says so)",
    challenge: "before it could be paid",
    sign: "before it was signed",
    decide: `${c.expiredAt ? `at ${c.expiredAt} ` : ""}before it was paid`,
  }[c.stage];
  return `quote ${quote(c)} expired ${when}; nothing was signed${c.stage === "decide" ? " — call again for a new quote" : ""}`;
}
