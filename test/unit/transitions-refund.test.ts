/**
 * refundVerdict (src/engine/model/transitions.ts): what a refund credits back, from what the
 * chain shows against what the service claims, and when a person must look.
 */
import { describe, expect, it } from "vitest";
import { formatDecimal } from "../../src/domain/money.js";
import { refundVerdict, type RefundEvidence } from "../../src/engine/model/transitions.js";

describe("refundVerdict", () => {
  const PAID = 1_000_000n; // 1.00 USDC
  const TX = "RefundTx1111";
  const base = (over: Partial<RefundEvidence>): RefundEvidence => ({
    paid: PAID,
    credited: 0n,
    status: "refunded",
    ...over,
  });
  const verdict = (over: Partial<RefundEvidence>) => refundVerdict(base(over), formatDecimal);

  it("no claim, status refunded: nothing credited, settled, a human told there is no transaction", () => {
    const v = verdict({ credited: 5n });
    expect(v.credit).toBe(5n);
    expect(v.settled).toBe(true);
    expect(v.attention).toMatch(/names no refund transaction/);
  });

  it("no claim, status failed: nothing credited, look again later", () => {
    expect(verdict({ status: "failed" })).toEqual({ credit: 0n, settled: false });
  });

  it("a claim without a transaction counts as no claim", () => {
    expect(verdict({ status: "failed", claim: { amount: PAID } })).toEqual({ credit: 0n, settled: false });
    expect(verdict({ claim: { amount: PAID } })).toMatchObject({ credit: 0n, settled: true });
  });

  it("a claimed transaction not on chain (yet), or not looked at: nothing credited, look again later", () => {
    expect(verdict({ claim: { amount: PAID, transaction: TX }, landed: "missing", credited: 7n })).toEqual({
      credit: 7n,
      settled: false,
    });
    expect(verdict({ claim: { amount: PAID, transaction: TX } })).toEqual({ credit: 0n, settled: false });
  });

  it("a transaction that already credited another purchase: no credit, a human looks", () => {
    const v = verdict({ claim: { amount: PAID, transaction: TX }, landed: "elsewhere" });
    expect(v).toMatchObject({ credit: 0n, settled: true });
    expect(v.attention).toContain(TX);
    expect(v.attention).toMatch(/another purchase/);
  });

  it("a transaction that moved nothing from the payee: no credit, a human looks", () => {
    const v = verdict({ claim: { amount: PAID, transaction: TX }, landed: "not_from_payee" });
    expect(v).toMatchObject({ credit: 0n, settled: true });
    expect(v.attention).toContain(TX);
    expect(v.attention).toMatch(/from the payee/);
  });

  it("landed == paid and the claim matches: the whole amount credited, no human", () => {
    expect(verdict({ claim: { amount: PAID, transaction: TX }, landed: PAID })).toEqual({
      credit: PAID,
      settled: true,
    });
  });

  it("landed == paid with no claimed amount: credited, no human", () => {
    expect(verdict({ claim: { transaction: TX }, landed: PAID })).toEqual({ credit: PAID, settled: true });
  });

  it("a refund on chain counts whatever the execution status says", () => {
    expect(verdict({ status: "failed", claim: { amount: PAID, transaction: TX }, landed: PAID })).toEqual({
      credit: PAID,
      settled: true,
    });
  });

  it("1 atomic unit back on a 'refunded' status: credits 1, a human hears it was partial", () => {
    const v = verdict({ claim: { transaction: TX }, landed: 1n });
    expect(v).toMatchObject({ credit: 1n, settled: true });
    expect(v.attention).toContain("only 0.000001 of the 1.00 USDC paid came back");
  });

  it("a partial refund on a status other than 'refunded' is credited without a partial note", () => {
    expect(verdict({ status: "failed", claim: { transaction: TX }, landed: 1n })).toEqual({
      credit: 1n,
      settled: true,
    });
  });

  it("more back than was paid (inflated): credits only what was paid, a human looks", () => {
    const v = verdict({ claim: { amount: 3_000_000n, transaction: TX }, landed: 3_000_000n });
    expect(v).toMatchObject({ credit: PAID, settled: true });
    expect(v.attention).toContain("moved 3.00 USDC back, more than the 1.00 USDC paid");
    expect(v.attention).not.toMatch(/came back/);
  });

  it("a claimed amount that differs from what landed: the chain counts, the attention names both", () => {
    const v = verdict({ claim: { amount: PAID, transaction: TX }, landed: 400_000n });
    expect(v).toMatchObject({ credit: 400_000n, settled: true });
    expect(v.attention).toContain("the service reports 1.00 USDC refunded");
    expect(v.attention).toContain("the chain shows 0.40 USDC");
    expect(v.attention).toContain("only 0.40 of the 1.00 USDC paid came back");
  });

  it("a claim below what landed: credits what landed (up to paid), names both", () => {
    const v = verdict({ claim: { amount: 1n, transaction: TX }, landed: PAID });
    expect(v).toMatchObject({ credit: PAID, settled: true });
    expect(v.attention).toContain("the service reports 0.000001 USDC refunded; the chain shows 1.00 USDC");
  });

  it("never credits more than was paid, even when nothing counts as paid", () => {
    expect(verdict({ paid: 0n, claim: { transaction: TX }, landed: 5n }).credit).toBe(0n);
  });
});
