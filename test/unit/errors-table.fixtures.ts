/**
 * What the error table's test (errors-table.test.ts) builds errors from: at least one context
 * of every shape each code's message has, and the facts of every shape for the codes whose
 * message reads some.
 */
import type { ErrorCode, ErrorContext, ErrorFacts } from "../../src/engine/errors.js";

export type Sample = { [C in ErrorCode]: ReadonlyArray<ErrorContext<C>> };
/** A service's refusal, as samples quote it. */
export const said = { serviceCode: "quote_mismatch", status: 409, detail: "no such quote" };

/** At least one context of every shape each code's message has. */
export const SAMPLES: Sample = {
  config_invalid: [
    { issues: [{ key: "PAID_ACTIONS_MAX_PER_DAY", message: "must be a decimal" }] },
    { issues: [] },
    { key: "SOLANA_RPC_URL" },
    { key: "PAID_ACTIONS_JOURNAL_URL" },
    { key: "PAID_ACTIONS_FACILITATOR_URL" },
    { needs: "payer" },
    { needs: "chain" },
  ],
  wallet_invalid: [
    { walletPath: "/w.json", reason: "malformed" },
    { walletPath: "/w.json", reason: "missing", detail: "wallet file /w.json does not exist" },
  ],
  invalid_input: [
    { problem: "cursor", field: "cursor" },
    { problem: "origin", field: "origin" },
    { problem: "action_name", field: "action" },
    { problem: "input_object", field: "input" },
    { problem: "input_json", field: "input" },
    { problem: "input_size", field: "input" },
    { problem: "budget_amount", field: "budget.amount" },
    { problem: "intent_key", field: "intentKey" },
    { problem: "arguments_object" },
    { problem: "arguments_depth" },
    { problem: "budget_currency", field: "budget.currency", got: "EUR" },
    { problem: "proto_key", issues: [{ path: "__proto__", message: "not accepted" }] },
    { problem: "arguments", tool: "get_execution", issues: [{ path: "executionId", message: "required" }] },
    { problem: "schema", tool: "servers_provision", issues: [{ path: "region", message: "invalid" }] },
    { problem: "extras", issues: [{ path: "budget.amount", message: "expected string" }] },
    { problem: "extras", issues: [] },
    { problem: "request", field: "url", detail: "url must be an http(s) URL" },
    { problem: "service", serviceCode: "invalid_input", detail: "region is unknown", issues: [{ x: 1 }] },
    { problem: "search", ...said, status: 400 },
  ],
  action_unknown: [{ serviceCode: "not_found", detail: "no action x.y" }, {}],
  action_not_allowed: [{ action: "servers.provision", allowActions: ["dns.*"] }, {}],
  budget_exceeded: [
    { limit: "maxPerCall", amount: "2.00", ceiling: "1.00" },
    { limit: "budget", amount: "2.00", ceiling: "1.00", stage: "sign" },
    { limit: "maxPerDay", amount: "2.00", maxPerDay: "5.00", spentLast24h: "4.00", remaining: "1.00" },
    { limit: "maxTotal", amount: "2.00", maxTotal: "5.00", spentTotal: "4.00", remaining: "1.00" },
  ],
  approval_required: [
    {
      approvalId: "apr_1",
      action: "servers.provision",
      amount: "2.00",
      currency: "USDC",
      payee: "Pay11111111111111111111111111111111111111111",
      expiresAt: "2030-01-01T00:00:00.000Z",
    },
    {
      approvalId: "apr_1",
      action: "servers.provision",
      amount: "2.00",
      currency: "USDC",
      expiresAt: "2030-01-01T00:00:00.000Z",
      consoleUrl: "http://127.0.0.1:1/a",
      detail: "no decision yet after 30 s",
    },
  ],
  approval_declined: [
    { approvalId: "apr_1" },
    { answer: "decline", amount: "2.00", action: "servers.provision" },
    { approvalId: "apr_1", answer: "decline" },
    { approvalId: "apr_1", answer: "cancel" },
  ],
  approval_invalid: [
    { approvalId: "apr_1", problem: "missing" },
    { approvalId: "apr_1", problem: "mismatch" },
    { approvalId: "apr_1", problem: "other_input" },
    { approvalId: "apr_1", problem: "expired" },
    { approvalId: "apr_1", problem: "expired", expiresAt: "2030-01-01T00:00:00.000Z" },
    { approvalId: "apr_1", problem: "used" },
    { approvalId: "apr_1", problem: "decided", status: "declined" },
    { approvalId: "apr_1", problem: "changed" },
    { approvalId: "apr_1", problem: "gone" },
    { problem: "foreign_state" },
    { approvalId: "apr_1", problem: "other_call" },
  ],
  quote_drift: [
    { problem: "challenge", quoteId: "qt_1", drifts: [{ field: "amount", expected: "100000", actual: "288000" }] },
    { problem: "other_intent", quoteId: "qt_1", serviceCode: "quote_mismatch", detail: "not this input" },
    { problem: "prepared_other", quoteId: "qt_1", preparedFor: "qt_2" },
    { problem: "quote", quoteId: "qt_1", detail: "the quote's expiresAt is not a timestamp" },
  ],
  quote_expired: [
    { quoteId: "qt_1", stage: "service" },
    { quoteId: "qt_1", stage: "challenge" },
    { quoteId: "qt_1", stage: "sign" },
    { quoteId: "qt_1", stage: "decide", expiredAt: "2030-01-01T00:00:00.000Z" },
  ],
  quote_rejected: [
    { problem: "preflight", ...said },
    { problem: "prepare", ...said },
    { problem: "quote", ...said },
    { problem: "no_challenge" },
  ],
  payee_not_allowed: [{ payee: "Pay11111111111111111111111111111111111111111" }, {}],
  payment_invalid: [
    { transaction: "5".repeat(88) },
    { quoteId: "qt_1", serviceCode: "invalid_payment" },
    { problem: "never_landed", who: "service", quoteId: "qt_1", serviceCode: "payment_invalid" },
    { problem: "never_landed", who: "resource", quoteId: "fq_1" },
  ],
  payment_mismatch: [
    { transaction: "5".repeat(88) },
    { quoteId: "qt_1", transaction: "5".repeat(88), serviceCode: "x" },
  ],
  payment_failed: [
    { problem: "rpc", what: "allowance", detail: "fetch failed" },
    { problem: "rpc", what: "blockhash", detail: "fetch failed" },
    { problem: "build", detail: "mint not found" },
    { problem: "blockhash", blockhash: "Hash1111111111111111111111111111111111111111" },
    { problem: "landed", quoteId: "qt_1", transaction: "5".repeat(88), detail: "it landed late" },
  ],
  payment_loop: [{ executionId: "exe_1" }, { quoteId: "qt_1", transaction: "5".repeat(88) }, { quoteId: "qt_1" }],
  outcome_unknown: [
    { problem: "stopped", intentId: "int_1", state: "signed" },
    { problem: "no_execution", intentId: "int_1" },
    { problem: "settling" },
    { problem: "executing" },
    {
      problem: "not_settled",
      who: "service",
      status: 402,
      serviceCode: "payment_invalid",
      detail: "no",
      reason: "late",
    },
    { problem: "not_settled", who: "resource", status: 0, serviceCode: "fetch_failed", detail: "timeout" },
    { problem: "chain_unsure", who: "service", why: "the RPC did not answer", quoteId: "qt_1" },
  ],
  execution_rejected: [
    { serviceCode: "provider_failed", transaction: "5".repeat(88) },
    {},
    { problem: "undelivered", origin: "https://a.example", answered: 500, transaction: "5".repeat(88) },
    { problem: "undelivered", origin: "https://a.example", answered: null, transaction: null },
  ],
  service_unavailable: [
    { problem: "no_answer", request: "POST /v1/quotes", attempts: 3, lastProblem: "HTTP 503", retryAfterSeconds: 2 },
    { problem: "journal", detail: "connection refused" },
    { problem: "sandbox_locked", home: "/home/pam" },
    { problem: "discovery", url: "http://127.0.0.1:1/discovery/resources", detail: "timeout" },
  ],
  service_error: [
    { problem: "redirect", request: "POST /v1/quotes", status: 302, location: "http://elsewhere" },
    { problem: "redirect", request: "POST /v1/quotes", status: 302 },
    { problem: "off_interface", request: "POST /v1/quotes", status: 200, detail: "amount: required" },
    { problem: "company", companyId: "co_1", ...said, status: 500 },
    { problem: "search", ...said, status: 500 },
    { problem: "discovery_size", url: "http://127.0.0.1:1/d" },
    { problem: "discovery_json", url: "http://127.0.0.1:1/d" },
    { problem: "discovery_status", url: "http://127.0.0.1:1/d", status: 502 },
    { problem: "execution_id" },
    { problem: "execution_other", forAction: "domains.register", forQuote: "qt_2" },
    { problem: "execution_other", forAction: "domains.register", forQuote: null },
    { problem: "unexpected", detail: "boom" },
  ],
  not_found: [{ executionId: "exe_1" }, { companyId: "co_1", ...said, status: 404, serviceCode: "not_found" }],
  intent_conflict: [{ intentKey: "key-00001" }],
  busy: [{}, { by: "call" }, { by: "waiting_call" }, { by: "process" }, { by: "journal" }],
  cancelled: [
    {},
    { stage: "before_start" },
    { stage: "fetch_before_start" },
    { stage: "before_quote" },
    { stage: "before_request" },
    { stage: "after_quote" },
    { stage: "after_price" },
    { stage: "before_reserve" },
    { stage: "before_sign" },
    { stage: "waiting_for_service" },
    { stage: "waiting_for_person" },
  ],
  allowance_exhausted: [
    { owner: "Own1", delegate: "Del1", allowance: "0.10", amount: "0.288" },
    { owner: "Own1", delegate: "Del1", allowance: "0.10", amount: "0.288", detail: "the owner has no USDC account" },
  ],
  frozen: [
    { reason: "card reported lost", since: "2030-01-01T00:00:00.000Z", frozenBy: "terminal" },
    { reason: null, since: "2030-01-01T00:00:00.000Z", frozenBy: "console" },
  ],
  origin_not_allowed: [
    { origin: "https://a.example", reason: "a.example resolves to 10.0.0.1, a private address", rule: "public_only" },
    { origin: "http://localhost:1", reason: "localhost resolves to 10.0.0.1, not loopback", rule: "loopback_only" },
    { origin: "https://a.example", allowOrigins: ["https://b.example"] },
    { origin: "https://a.example", allowOrigins: [] },
    { origin: "https://a.example" },
  ],
  fetch_failed: [
    { origin: "https://a.example", reason: "cancelled", sent: false },
    { origin: "https://a.example", reason: "timeout", sent: true },
    { origin: "https://a.example", reason: "network", sent: false },
    { origin: "https://a.example", reason: "too_large", sent: true, status: 200 },
    { origin: "https://a.example", reason: "redirects", sent: true, status: 302 },
  ],
  payment_unsupported: [
    { origin: "https://a.example", offered: ["exact on eip155:8453"] },
    { offered: [] },
    {},
    { problem: "no_match", origin: "https://a.example", offered: [], network: "solana:x", mint: "Mint1" },
    { problem: "not_402", origin: "https://a.example", status: 200 },
    { problem: "no_requirements", origin: "https://a.example" },
    { problem: "memo_in_use", origin: "https://a.example", memo: "order-1" },
    { problem: "fee_payer", origin: "https://a.example", offered: ["exact on solana:x in Mint1: 10000"] },
  ],
};

/** The facts of every shape, for the codes whose message reads some. */
const FACTS: { [C in keyof ErrorFacts]: ReadonlyArray<ErrorFacts[C]> } = {
  fetch_failed: [
    {},
    { errno: "ECONNREFUSED" },
    { host: "a.example", errno: "ENOTFOUND" },
    { host: "a.example" },
    { limit: 10 },
  ],
  payment_invalid: [{}, { quote: "qt_2", amount: "0.289" }, { quote: "qt_2" }],
  payment_mismatch: [{}, { quote: "qt_2", amount: "0.289" }, { quote: "qt_2" }],
  execution_rejected: [{}, { status: 500, detail: "internal" }, { detail: "no status" }],
};
export const factsOf = (code: ErrorCode): ReadonlyArray<unknown> =>
  code in FACTS ? FACTS[code as keyof ErrorFacts] : [undefined];
