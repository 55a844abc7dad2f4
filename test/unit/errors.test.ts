/**
 * The engine's error type (src/engine/errors.ts): one context type per code, checked where
 * an error is made and read without casts once narrowed; every code listed once, and every
 * code has its hint for the agent (src/mcp/hints.ts).
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  byCode,
  ERROR_CODES,
  fromStored,
  isCode,
  paidError,
  PaidActionError,
  toStored,
  type ErrorCode,
  type ErrorContexts,
  type PerCode,
} from "../../src/engine/errors.js";
import { hintFor } from "../../src/mcp/hints.js";

describe("error codes and their contexts", () => {
  it("lists every code once, each with its context type", () => {
    expectTypeOf<(typeof ERROR_CODES)[number]>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<keyof ErrorContexts>().toEqualTypeOf<ErrorCode>();
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  it("a context is checked where the error is made: required fields, and no foreign ones", () => {
    // @ts-expect-error approval_required must say which approval
    void paidError("approval_required", {});
    // @ts-expect-error budget_exceeded has no approvalId
    void paidError("budget_exceeded", { approvalId: "apr_1" });
    // @ts-expect-error the old form (message inline) is closed to every code
    void new PaidActionError("busy", "m");
    // @ts-expect-error even with a whole context
    void new PaidActionError("approval_required", "m", {
      approvalId: "apr_1",
      action: "a.b",
      amount: "2.00",
      currency: "USDC",
      expiresAt: "2030-01-01T00:00:00.000Z",
    });
    const e = paidError("allowance_exhausted", {
      owner: "o",
      delegate: "d",
      allowance: "0.00",
      amount: "0.288",
    });
    expect(e.context.allowance).toBe("0.00");
    expect(paidError("busy").context).toEqual({});
    expect(paidError("busy").retryable).toBe(true);
  });

  it("narrows by code, and reads the context typed", () => {
    const e: unknown = paidError("approval_required", {
      approvalId: "apr_1",
      action: "a.b",
      amount: "2.00",
      currency: "USDC",
      expiresAt: "2030-01-01T00:00:00.000Z",
    });
    expect(isCode(e, "budget_exceeded")).toBe(false);
    if (!isCode(e, "approval_required")) throw new Error("expected approval_required");
    expectTypeOf(e.context.approvalId).toEqualTypeOf<string>();
    expect(e.context.approvalId).toBe("apr_1");
    expect(isCode(new Error("x"), "busy")).toBe(false);
  });

  it("dispatches on the code through a table with one entry per code", () => {
    const table: PerCode<string> = Object.fromEntries(
      ERROR_CODES.map((c) => [c, () => c]),
    ) as unknown as PerCode<string>;
    for (const code of ERROR_CODES) expect(byCode(table, new PaidActionError(code, "m", {} as never))).toBe(code);
  });

  it("every code has a hint for the agent", () => {
    for (const code of ERROR_CODES)
      expect(hintFor(new PaidActionError(code, "m", {} as never)).length, code).toBeGreaterThan(20);
  });

  it("keeps code, message, context and whether to retry when stored", () => {
    const e = fromStored("quote_rejected", "no", { serviceCode: "x", status: 409 }, true);
    expect(toStored(e)).toEqual({
      code: "quote_rejected",
      message: "no",
      context: { serviceCode: "x", status: 409 },
      retryable: true,
    });
  });
});
