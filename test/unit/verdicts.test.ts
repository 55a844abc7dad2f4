/**
 * What the service's answers to a paid intent's requests mean (src/engine/intent/verdicts.ts):
 * the confirmation of a proof, a refused execution request, an execution that is not the
 * intent's, and how a thrown error counts at each state. Pure tables.
 */
import { describe, expect, it } from "vitest";
import {
  confirmationVerdict,
  executionProblem,
  executionRefusalVerdict,
  failureOutcome,
  isOurs,
  type Answer,
  type Purchase,
} from "../../src/engine/intent/verdicts.js";
import { INTENT_STATES } from "../../src/engine/model/types.js";
import type { Execution, Payment } from "../../src/domain/wire.js";

const TX = "5".repeat(88);
const PURCHASE: Purchase = {
  state: "signed",
  action: "servers.provision",
  quoteId: "qt_1",
  amount: 288_000n,
  paymentTx: null,
};
const PAYMENT = { quoteId: "qt_1", amount: "0.288", currency: "USDC", transaction: TX, status: "settled" } as Payment;
const refused = (status: number, code: string, extra: Record<string, unknown> = {}) =>
  ({ ok: false, status, error: { code, message: `${code} says no`, ...extra } }) as const;

describe("confirmationVerdict", () => {
  it("settles a payment of exactly the quote and its amount", () => {
    expect(confirmationVerdict({ ok: true, status: 200, body: PAYMENT }, PURCHASE)).toEqual({
      kind: "settled",
      payment: PAYMENT,
    });
  });

  it.each<[string, Partial<Payment>]>([
    ["another quote", { quoteId: "qt_2" }],
    ["another amount", { amount: "0.289" }],
    ["an amount that is no decimal", { amount: "lots" }],
  ])("holds the budget for a human when the service confirms %s", (_, drift) => {
    const v = confirmationVerdict({ ok: true, status: 200, body: { ...PAYMENT, ...drift } }, PURCHASE);
    expect(v.kind).toBe("mismatch");
    if (v.kind !== "mismatch") return;
    // Not payment_invalid, whose advice is that nothing was charged (issue 30 item 1): money moved.
    expect(v.error.code).toBe("payment_mismatch");
    expect(v.error.message).toMatch(/does not match the quote .*until a human checks transaction 5{88}/);
    expect(v.error.context).toEqual({ transaction: TX });
  });

  it.each([404, 405, 501])("takes HTTP %i as a service without /payments/confirm", (status) => {
    expect(confirmationVerdict(refused(status, "not_found"), PURCHASE)).toEqual({ kind: "no_endpoint" });
  });

  it("asks again later while the same key is still being settled", () => {
    const v = confirmationVerdict(refused(409, "idempotency_in_progress"), PURCHASE);
    expect(v.kind).toBe("in_progress");
    if (v.kind === "in_progress") expect([v.error.code, v.error.retryable]).toEqual(["outcome_unknown", true]);
  });

  it.each([
    [402, "payment_invalid"],
    [409, "payment_already_used"],
    [503, "unavailable"],
  ])("leaves HTTP %i %s to the chain", (status, code) => {
    const answer = refused(status, code) as Answer<Payment>;
    expect(confirmationVerdict(answer, PURCHASE)).toEqual({
      kind: "refused",
      refusal: { status, error: { code, message: `${code} says no` } },
    });
  });
});

describe("executionRefusalVerdict", () => {
  const PAID: Purchase = { ...PURCHASE, state: "paid", paymentTx: TX };

  it("asks again later while the same key is still running, in either state", () => {
    for (const p of [PURCHASE, PAID]) {
      const v = executionRefusalVerdict(refused(409, "idempotency_in_progress"), p);
      expect(v.kind).toBe("in_progress");
      if (v.kind === "in_progress") expect([v.error.code, v.error.retryable]).toEqual(["outcome_unknown", true]);
    }
  });

  it.each([402, 409, 422, 500])(
    "leaves a refused proof that travelled with the request (HTTP %i) to the chain",
    (s) => {
      expect(executionRefusalVerdict(refused(s, "whatever"), PURCHASE)).toEqual({ kind: "proof_refused" });
    },
  );

  it("calls a 402 after payment a payment loop, for a human, naming the quote and transaction", () => {
    const v = executionRefusalVerdict(refused(402, "payment_required"), PAID);
    expect(v.kind).toBe("for_a_human");
    if (v.kind !== "for_a_human") return;
    expect(v.attention).toBe("402 after payment");
    expect(v.error.code).toBe("payment_loop");
    expect(v.error.message).toBe(
      `the service asked for payment again after quote qt_1 was paid (transaction ${TX}); nothing more was paid — a human should check`,
    );
    expect(v.error.context).toEqual({ quoteId: "qt_1", transaction: TX });
  });

  it("offers the execution a consumed quote funded, with the refusal to record if it is not ours", () => {
    const v = executionRefusalVerdict(refused(409, "quote_consumed", { executionId: "ex_9" }), PAID);
    expect(v.kind).toBe("maybe_ours");
    if (v.kind !== "maybe_ours") return;
    expect(v.executionId).toBe("ex_9");
    expect(v.otherwise.attention).toBe("execution refused: quote_consumed");
    expect(v.otherwise.error.code).toBe("execution_rejected");
  });

  it.each<[string, number, string, Record<string, unknown>]>([
    ["a consumed quote without an execution id", 409, "quote_consumed", {}],
    ["a consumed quote with an id that is no string", 409, "quote_consumed", { executionId: 9 }],
    ["an invalid input", 400, "invalid_request", {}],
    ["a server error", 500, "internal_error", {}],
  ])("leaves %s after payment to a human, as execution_rejected", (_, status, code, extra) => {
    const v = executionRefusalVerdict(refused(status, code, extra), PAID);
    expect(v.kind).toBe("for_a_human");
    if (v.kind !== "for_a_human") return;
    expect(v.attention).toBe(`execution refused: ${code}`);
    expect(v.error.code).toBe("execution_rejected");
    expect(v.error.message).toBe(
      `the payment settled but the service refused the execution (HTTP ${status} ${code}): ${code} says no; a human should ask the service for the execution or a refund`,
    );
    expect(v.error.context).toEqual({ serviceCode: code, quoteId: "qt_1", transaction: TX });
  });
});

describe("an execution the service names", () => {
  const E = { executionId: "ex_1", action: "servers.provision", quoteId: "qt_1", status: "pending" } as Execution;

  it("is ours only with our action and our quote", () => {
    expect(isOurs(E, PURCHASE)).toBe(true);
    expect(isOurs({ ...E, quoteId: "qt_2" }, PURCHASE)).toBe(false);
    expect(isOurs({ ...E, quoteId: undefined }, PURCHASE)).toBe(false);
    expect(isOurs({ ...E, action: "domains.register" }, PURCHASE)).toBe(false);
  });

  it.each<[string, Partial<Execution>, string | undefined]>([
    ["ours", {}, undefined],
    ["ours, without a quote id", { quoteId: undefined }, undefined],
    ["an id with a slash", { executionId: "ex/../1" }, "bad execution id"],
    ["an empty id", { executionId: "" }, "bad execution id"],
    ["an id of 129 characters", { executionId: "e".repeat(129) }, "bad execution id"],
    ["another action", { action: "domains.register" }, "execution mismatch"],
    ["another quote", { quoteId: "qt_2" }, "execution mismatch"],
  ])("%s: recorded unless it has a problem (%s)", (_, change, attention) => {
    const problem = executionProblem({ ...E, ...change }, PURCHASE);
    expect(problem?.attention).toBe(attention);
    if (problem) expect(problem.error.code).toBe("service_error");
  });
});

describe("failureOutcome", () => {
  it("counts a cancellation as cancelled and a retryable error as transient, at every state", () => {
    for (const state of INTENT_STATES) {
      expect(failureOutcome(state, { code: "cancelled", retryable: false })).toBe("cancelled");
      expect(failureOutcome(state, { code: "service_unavailable", retryable: true })).toBe("transient");
    }
  });

  it.each([
    ["new", "refused"],
    ["quoted", "refused"],
    ["awaiting_approval", "refused"],
    ["reserved", "refused"],
    ["signed", "proof_refused"],
    ["unsettled", "transient"],
    ["paid", "refused_after_payment"],
    ["executed", "refused"],
    ["refused", "refused"],
    ["failed", "refused"],
    ["attention", "refused"],
  ] as const)("counts any other error at %s as %s", (state, outcome) => {
    expect(failureOutcome(state, { code: "quote_rejected", retryable: false })).toBe(outcome);
  });

  it("has a row for every state", () => {
    expect(INTENT_STATES.length).toBe(11);
  });
});
