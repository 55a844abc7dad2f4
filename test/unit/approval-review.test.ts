import { describe, expect, it } from "vitest";
import { payeeOf, reviewOf } from "../../src/engine/approvals/review.js";
import type { Usage } from "../../src/engine/budget/policy.js";
import type { Approval, Intent } from "../../src/engine/model/types.js";

const usdc = (n: string) => BigInt(Math.round(Number(n) * 1_000_000));
const NOW = Date.parse("2026-11-02T10:00:00Z");
const CHALLENGE_PAYEE = "Chal1enge11111111111111111111111111111111111";
const QUOTE_PAYEE = "QuotePayee1111111111111111111111111111111111";

function approval(over: Partial<Approval> = {}): Approval {
  return {
    approvalId: "apr_1",
    intentId: "int_1",
    quoteId: "q_1",
    action: "servers.provision",
    amount: usdc("12.5"),
    payee: null,
    expiresAt: NOW + 60_000,
    status: "pending",
    createdAt: NOW - 1_000,
    decidedAt: null,
    ...over,
  };
}
function intent(over: Partial<Intent> = {}): Intent {
  return {
    intentId: "int_1",
    input: { region: "eu-west-1", plan: "large" },
    payee: null,
    quote: { paymentRequirement: { accepts: [{ payTo: CHALLENGE_PAYEE }] } },
    budgetState: "none",
    ...over,
  } as unknown as Intent;
}

describe("payeeOf", () => {
  it.each([
    ["the approval's payee first", { payee: QUOTE_PAYEE }, intent(), QUOTE_PAYEE],
    ["else the intent's payee", { payee: null }, intent({ payee: QUOTE_PAYEE }), QUOTE_PAYEE],
    ["else the payTo of the quote's challenge", { payee: null }, intent(), CHALLENGE_PAYEE],
    ["else null (no challenge)", { payee: null }, intent({ quote: null }), null],
    ["else null (no intent)", { payee: null }, undefined, null],
  ])("%s", (_name, a, i, want) => {
    expect(payeeOf(a, i)).toBe(want);
  });
});

describe("reviewOf", () => {
  const usage: Usage = { day: usdc("3.25"), total: usdc("40") };
  const limits = { maxPerDay: usdc("25"), maxTotal: usdc("100") };
  const rows: Array<{
    name: string;
    a?: Partial<Approval>;
    i?: Partial<Intent> | null;
    limits?: typeof limits | { maxPerDay: bigint; maxTotal?: bigint } | undefined;
    want: Record<string, unknown>;
  }> = [
    {
      name: "a pending approval adds its amount to the day and the total",
      want: {
        status: "pending",
        amount: "12.50",
        payee: CHALLENGE_PAYEE,
        expired: false,
        after: { spentLast24h: "15.75", maxPerDay: "25.00", spentTotal: "52.50", maxTotal: "100.00" },
      },
    },
    {
      name: "a used approval whose intent holds the money is counted once",
      a: { status: "used", decidedAt: NOW - 500 },
      i: { budgetState: "reserved" },
      want: {
        status: "used",
        decidedAt: new Date(NOW - 500).toISOString(),
        after: { spentLast24h: "3.25", maxPerDay: "25.00", spentTotal: "40.00", maxTotal: "100.00" },
      },
    },
    {
      name: "no total cap: maxTotal null",
      limits: { maxPerDay: usdc("25") },
      want: { after: { spentLast24h: "15.75", maxPerDay: "25.00", spentTotal: "52.50", maxTotal: null } },
    },
    {
      name: "no config: no caps",
      limits: undefined,
      want: { after: { spentLast24h: "15.75", maxPerDay: null, spentTotal: "52.50", maxTotal: null } },
    },
    {
      name: "expired at its quote's expiry",
      a: { expiresAt: NOW },
      want: { expired: true, expiresAt: new Date(NOW).toISOString() },
    },
    {
      name: "the intent is gone: input null, payee from the approval",
      a: { payee: QUOTE_PAYEE },
      i: null,
      want: { input: null, payee: QUOTE_PAYEE },
    },
  ];
  it.each(rows)("$name", (row) => {
    const i = row.i === null ? undefined : intent(row.i ?? {});
    const r = reviewOf(approval(row.a), i, usage, "limits" in row ? row.limits : limits, NOW);
    expect(r).toMatchObject(row.want);
    expect(r).toMatchObject({
      approvalId: "apr_1",
      intentId: "int_1",
      action: "servers.provision",
      currency: "USDC",
      quoteId: "q_1",
      createdAt: new Date(NOW - 1_000).toISOString(),
    });
    if (i) expect(r.input).toEqual({ region: "eu-west-1", plan: "large" });
  });
});
