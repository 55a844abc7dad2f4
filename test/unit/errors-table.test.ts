/**
 * The error table (src/engine/error-table.ts): every code has a message, retryable, the
 * console's HTTP status and a hint; messages built from sample contexts of every shape
 * read whole (no `undefined`, no `[object Object]`) and keep the words agents and people
 * rely on; the console's status per code is what it was.
 */
import { describe, expect, it } from "vitest";
import { ERROR_TABLE, MONEY_AT_RISK } from "../../src/engine/error-table.js";
import { SAYS_UNCHARGED } from "../helpers/says-uncharged.js";
import { ERROR_CODES, fromStored, hintFor, httpStatusOf, paidError, type ErrorCode } from "../../src/engine/errors.js";
import { factsOf, said, SAMPLES } from "./errors-table.fixtures.js";

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
        for (const facts of factsOf(code)) {
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

  it("says nothing was paid, or to buy afresh, only where no payment of the purchase is at risk: every code × money", () => {
    // The codes whose hint is about something other than this purchase's money (a key, an id, the setup, a lease).
    const elsewhere: readonly ErrorCode[] = ["config_invalid", "not_found", "intent_conflict", "busy"];
    const table: string[] = [];
    for (const code of ERROR_CODES)
      for (const context of SAMPLES[code])
        for (const money of [undefined, "none", "in_flight", "settled"] as const) {
          const hint = hintFor(make(code, context), money);
          table.push(`${code} × ${money ?? "no purchase"}: ${hint}`);
          if (money !== "in_flight" && money !== "settled") continue;
          const where = `${code} ${JSON.stringify(context)} with money ${money}`;
          expect(hint, where).not.toMatch(SAYS_UNCHARGED);
          expect(hint, where).not.toMatch(/fresh attempt|new quote|try again later/i);
          if (!elsewhere.includes(code)) expect(hint, where).toMatch(/do not (pay again|start a new purchase)/i);
        }
    expect(table.length).toBeGreaterThan(4 * ERROR_CODES.length);
    // Where the money moved, or may still, a refusal that is not about the money says so in the same words.
    expect(hintFor(paidError("budget_exceeded", { limit: "maxPerDay" }), "in_flight")).toBe(MONEY_AT_RISK.in_flight);
    expect(hintFor(paidError("quote_expired", { stage: "sign" }), "settled")).toBe(MONEY_AT_RISK.settled);
  });

  it("tells the settled-but-mismatched payment apart from one that can never land", () => {
    const mismatch = paidError("payment_mismatch", { transaction: "5".repeat(88) }, { quote: "qt_2", amount: "0.289" });
    expect(mismatch.message).toBe(
      `the service confirmed a payment that does not match the quote (quote qt_2, amount 0.289); the budget stays held until a human checks transaction ${"5".repeat(88)}`,
    );
    for (const money of [undefined, "none", "in_flight", "settled"] as const) {
      expect(hintFor(mismatch, money)).toMatch(/do not pay again/i);
      expect(hintFor(mismatch, money)).not.toMatch(SAYS_UNCHARGED);
    }
    const never = paidError("payment_invalid", {
      problem: "never_landed",
      who: "service",
      why: "its blockhash expired and no transfer carries its memo",
      quoteId: "qt_1",
    });
    expect(never.message).toMatch(/can never land .*: nothing was charged$/);
    expect(hintFor(never, "none")).toMatch(/nothing was charged\. Calling again makes a fresh attempt/);
    expect(hintFor(never, "settled")).toBe(MONEY_AT_RISK.settled);
    // A stored payment_invalid naming a transaction is a confirmed settlement (before payment_mismatch): never "nothing was charged".
    const stored = fromStored("payment_invalid", "the service confirmed a payment that does not match", {
      transaction: "5".repeat(88),
    });
    expect(hintFor(stored)).toBe(MONEY_AT_RISK.settled);
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
