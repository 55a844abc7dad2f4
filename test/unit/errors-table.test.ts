/**
 * The error table (src/engine/error-table.ts): every code has a message, retryable, the
 * console's HTTP status and a hint; messages built from sample contexts of every shape
 * read whole (no `undefined`, no `[object Object]`) and keep the words agents and people
 * rely on; the console's status per code is what it was.
 */
import { describe, expect, it } from "vitest";
import { ERROR_TABLE } from "../../src/engine/error-table.js";
import {
  ERROR_CODES,
  fromStored,
  hintFor,
  httpStatusOf,
  paidError,
  type ErrorCode,
  type ErrorContext,
  type ErrorFacts,
} from "../../src/engine/errors.js";

type Sample = { [C in ErrorCode]: ReadonlyArray<ErrorContext<C>> };
const said = { serviceCode: "quote_mismatch", status: 409, detail: "no such quote" };

/** At least one context of every shape each code's message has. */
const SAMPLES: Sample = {
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
  payment_invalid: [{ transaction: "5".repeat(88) }, { quoteId: "qt_1", serviceCode: "invalid_payment" }],
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
  ],
  execution_rejected: [{ serviceCode: "provider_failed", transaction: "5".repeat(88) }, {}],
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
    { problem: "unexpected", detail: "boom" },
  ],
  not_found: [{ executionId: "exe_1" }, { companyId: "co_1", ...said, status: 404, serviceCode: "not_found" }],
  intent_conflict: [{ intentKey: "key-00001" }],
  busy: [{}, { by: "call" }, { by: "waiting_call" }, { by: "process" }, { by: "journal" }],
  cancelled: [
    {},
    { stage: "before_start" },
    { stage: "fetch_before_start" },
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
  payment_unsupported: [{ origin: "https://a.example", offered: ["exact on eip155:8453"] }, { offered: [] }, {}],
  balance_insufficient: [{ wallet: "0x" + "a".repeat(40), network: "base-sepolia", balance: "0.005", amount: "0.01" }],
};

const FETCH_FACTS: ReadonlyArray<ErrorFacts["fetch_failed"]> = [
  {},
  { errno: "ECONNREFUSED" },
  { host: "a.example", errno: "ENOTFOUND" },
  { host: "a.example" },
  { limit: 10 },
];

/** Any code's error from a context, as a site of that code would make it. */
const make = (code: ErrorCode, context: unknown, facts?: unknown) =>
  (paidError as (c: ErrorCode, x: unknown, f?: unknown) => ReturnType<typeof paidError>)(code, context, facts);

describe("the error table", () => {
  it("has a row for every code and none other, each with a message, retryable, a status and a hint", () => {
    expect(Object.keys(ERROR_TABLE).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const row = ERROR_TABLE[code];
      expect(typeof row.message, code).toBe("function");
      expect(["boolean", "function"], code).toContain(typeof row.retryable);
      expect([400, 404, 409, 500, 503], code).toContain(row.http);
      expect(typeof row.hint, code).toBe("function");
    }
  });

  it("builds a whole message from every sample context: no undefined, no [object Object]", () => {
    for (const code of ERROR_CODES) {
      expect(SAMPLES[code].length, code).toBeGreaterThan(0);
      for (const context of SAMPLES[code]) {
        for (const facts of code === "fetch_failed" ? FETCH_FACTS : [undefined]) {
          const e = make(code, context, facts);
          expect(e.code).toBe(code);
          expect(e.message.length, code).toBeGreaterThan(10);
          expect(e.message, `${code} ${JSON.stringify(context)}`).not.toMatch(/undefined|\[object Object\]|null/);
          expect(e.context).toEqual(context);
          const hint = hintFor(e);
          expect(hint.length, code).toBeGreaterThan(20);
          expect(hint, code).not.toMatch(/undefined|\[object Object\]/);
        }
      }
    }
  });

  it("answers the console with the status it had: 400 invalid_input, 404 not_found, 503 config_invalid, 409 approval_*, else 500", () => {
    for (const code of ERROR_CODES) {
      const expected =
        code === "invalid_input"
          ? 400
          : code === "not_found"
            ? 404
            : code === "config_invalid"
              ? 503
              : code.startsWith("approval_")
                ? 409
                : 500;
      expect(httpStatusOf(code), code).toBe(expected);
    }
  });

  it("says whether to retry per code, and where it depends on what happened, from the context", () => {
    const retryable = ["service_unavailable", "busy"];
    for (const code of ERROR_CODES) {
      if (typeof ERROR_TABLE[code].retryable === "boolean")
        expect(ERROR_TABLE[code].retryable, code).toBe(retryable.includes(code));
    }
    expect(paidError("payment_failed", { problem: "rpc", what: "blockhash", detail: "x" }).retryable).toBe(true);
    expect(paidError("payment_failed", { problem: "build", detail: "x" }).retryable).toBe(true);
    expect(paidError("payment_failed", { problem: "blockhash", blockhash: "h" }).retryable).toBe(false);
    expect(paidError("payment_failed", { problem: "landed", transaction: "t", detail: "d" }).retryable).toBe(false);
    expect(paidError("outcome_unknown", { problem: "stopped", intentId: "i", state: "signed" }).retryable).toBe(true);
    expect(paidError("outcome_unknown", { problem: "no_execution", intentId: "i" }).retryable).toBe(false);
  });

  it("keeps the words that reach agents and people", () => {
    const expectations: Array<[ReturnType<typeof paidError>, string]> = [
      [
        paidError("quote_expired", { quoteId: "qt_1", stage: "service" }),
        "quote qt_1 expired (the service says so); nothing was signed",
      ],
      [
        paidError("quote_expired", { quoteId: "qt_1", stage: "decide", expiredAt: "2030-01-01T00:00:00.000Z" }),
        "quote qt_1 expired at 2030-01-01T00:00:00.000Z before it was paid; nothing was signed — call again for a new quote",
      ],
      [
        paidError("service_error", { problem: "company", companyId: "co_x", ...said, status: 500 }),
        "company co_x: HTTP 500 quote_mismatch: no such quote",
      ],
      [
        paidError("invalid_input", { problem: "search", ...said, status: 400 }),
        "search refused (HTTP 400 quote_mismatch): no such quote",
      ],
      [
        paidError(
          "fetch_failed",
          { origin: "http://127.0.0.1:9", reason: "network", sent: false },
          { errno: "ECONNREFUSED" },
        ),
        "the request to http://127.0.0.1:9 failed (ECONNREFUSED)",
      ],
      [
        paidError(
          "fetch_failed",
          { origin: "https://a.example", reason: "network", sent: false },
          { host: "a.example", errno: "ENOTFOUND" },
        ),
        "the host a.example does not resolve (ENOTFOUND)",
      ],
      [paidError("approval_invalid", { approvalId: "apr_1", problem: "used" }), "approval apr_1 was already used"],
      [paidError("cancelled", { stage: "before_start" }), "the call was cancelled before it started; nothing was paid"],
      [
        paidError("service_unavailable", { problem: "journal", detail: "gone" }),
        "the journal cannot be opened (gone); nothing was paid — try again when it is back",
      ],
    ];
    for (const [e, message] of expectations) expect(e.message).toBe(message);
    const required = paidError("approval_required", SAMPLES.approval_required[0]!);
    expect(required.message).toContain("a person must approve this payment in the paid-actions console or terminal");
    expect(required.message).toContain('approvalId "apr_1"');
    expect(required.message).toContain("Nothing was paid.");
  });

  it("keeps a stored message as it was stored: history is not re-worded", () => {
    const e = fromStored("quote_expired", "quote q expired (old words)", { quoteId: "q" }, false);
    expect(e.message).toBe("quote q expired (old words)");
  });

  it("gives the hint where the purchase's money is", () => {
    const e = paidError("service_unavailable", { problem: "journal", detail: "x" });
    expect(hintFor(e)).toMatch(/nothing was paid/);
    expect(hintFor(e, "none")).toMatch(/nothing was paid/);
    expect(hintFor(e, "in_flight")).toMatch(/do not pay again/);
    expect(hintFor(e, "settled")).toMatch(/do not pay again/);
    const signed = paidError("service_unavailable", { problem: "journal", detail: "x", state: "signed" });
    expect(hintFor(signed)).toMatch(/do not pay again/);
  });
});
