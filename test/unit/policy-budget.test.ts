/**
 * evaluateBudget (src/engine/budget/policy.ts), row by row: allowed actions and payees, the
 * per-call, per-action, daily and total limits at and around their edges, and when a payment
 * needs a person's approval. Pure: no clock, no I/O.
 */
import { describe, expect, it } from "vitest";
import type { Limits } from "../../src/engine/config/config.js";
import { evaluateBudget, type Usage } from "../../src/engine/budget/policy.js";
import { budgetRefusal } from "../../src/engine/intent/failures.js";
import { limits, OTHER_PAYEE, PAYEE, usdc } from "./policy.fixtures.js";

const NONE: Usage = { day: 0n, total: 0n };

type Charge = Parameters<typeof evaluateBudget>[2];
interface Row {
  name: string;
  limits?: Partial<Limits>;
  usage?: Usage;
  charge: Partial<Charge>;
  /** "ok" / "ok+approval", or the refusal code and the `limit` it names. */
  expect: "ok" | "ok+approval" | { code: string; limit?: string };
  ceiling?: bigint;
}

const rows: Row[] = [
  // allowActions
  { name: "any action under *", charge: {}, expect: "ok" },
  {
    name: "an action not listed",
    limits: { allowActions: ["domains.register"] },
    charge: { action: "servers.provision" },
    expect: { code: "action_not_allowed" },
  },
  {
    name: "an exact listed action",
    limits: { allowActions: ["domains.register", "servers.provision"] },
    charge: {},
    expect: "ok",
  },
  { name: "a category wildcard", limits: { allowActions: ["servers.*"] }, charge: {}, expect: "ok" },
  {
    name: "a wildcard of another category",
    limits: { allowActions: ["domains.*"] },
    charge: {},
    expect: { code: "action_not_allowed" },
  },
  { name: "a verb wildcard", limits: { allowActions: ["*.provision"] }, charge: {}, expect: "ok" },
  { name: "a prefix wildcard", limits: { allowActions: ["servers.prov*"] }, charge: {}, expect: "ok" },
  {
    name: "a wildcard is not a regex (. is literal)",
    limits: { allowActions: ["servers.provisio."] },
    charge: {},
    expect: { code: "action_not_allowed" },
  },
  {
    name: "a pattern must match the whole name",
    limits: { allowActions: ["servers"] },
    charge: {},
    expect: { code: "action_not_allowed" },
  },
  {
    name: "an empty allow list allows nothing",
    limits: { allowActions: [] },
    charge: {},
    expect: { code: "action_not_allowed" },
  },
  // allowedPayees
  { name: "a listed payee", limits: { allowedPayees: [PAYEE] }, charge: { payee: PAYEE }, expect: "ok" },
  {
    name: "a payee not listed",
    limits: { allowedPayees: [PAYEE] },
    charge: { payee: OTHER_PAYEE },
    expect: { code: "payee_not_allowed" },
  },
  { name: "any payee when none are configured", charge: { payee: OTHER_PAYEE }, expect: "ok" },
  {
    name: "a charge naming no payee yet (checked again on the challenge)",
    limits: { allowedPayees: [PAYEE] },
    charge: {},
    expect: "ok",
  },
  // maxPerCall
  { name: "amount == maxPerCall passes", charge: { amount: usdc(5) }, expect: "ok+approval", ceiling: usdc(5) },
  {
    name: "maxPerCall + 1 atomic unit fails",
    charge: { amount: usdc(5) + 1n },
    expect: { code: "budget_exceeded", limit: "maxPerCall" },
  },
  // perAction
  {
    name: "perAction exact caps its action",
    limits: { perAction: { "servers.provision": usdc(2) } },
    charge: { amount: usdc(2) + 1n },
    expect: { code: "budget_exceeded", limit: "perAction[servers.provision]" },
  },
  {
    name: "perAction exact: amount == cap passes",
    limits: { perAction: { "servers.provision": usdc(2) } },
    charge: { amount: usdc(2) },
    expect: "ok+approval",
    ceiling: usdc(2),
  },
  {
    name: "perAction exact leaves other actions alone",
    limits: { perAction: { "servers.provision": usdc(2) } },
    charge: { action: "domains.register", amount: usdc(4) },
    expect: "ok+approval",
    ceiling: usdc(5),
  },
  {
    name: "perAction pattern caps a matching action",
    limits: { perAction: { "servers.*": usdc(3) } },
    charge: { amount: usdc(3) + 1n },
    expect: { code: "budget_exceeded", limit: "perAction[servers.*]" },
  },
  {
    name: "perAction pattern leaves other actions alone",
    limits: { perAction: { "servers.*": usdc(3) } },
    charge: { action: "domains.register", amount: usdc(4) },
    expect: "ok+approval",
  },
  {
    name: "perAction above maxPerCall does not raise it",
    limits: { perAction: { "servers.provision": usdc(50) } },
    charge: { amount: usdc(6) },
    expect: { code: "budget_exceeded", limit: "maxPerCall" },
  },
  // agent budget
  {
    name: "an agent budget lower than the limits lowers the ceiling",
    charge: { amount: usdc(2), agentBudget: usdc(1.5) },
    expect: { code: "budget_exceeded", limit: "budget" },
  },
  {
    name: "amount == agent budget passes",
    charge: { amount: usdc(1.5), agentBudget: usdc(1.5) },
    expect: "ok+approval",
    ceiling: usdc(1.5),
  },
  {
    name: "an agent budget higher than maxPerCall never raises it",
    charge: { amount: usdc(6), agentBudget: usdc(100) },
    expect: { code: "budget_exceeded", limit: "maxPerCall" },
  },
  {
    name: "an agent budget higher than perAction never raises it",
    limits: { perAction: { "servers.*": usdc(2) } },
    charge: { amount: usdc(3), agentBudget: usdc(4) },
    expect: { code: "budget_exceeded", limit: "perAction[servers.*]" },
  },
  {
    name: "an agent budget never raises the daily limit",
    usage: { day: usdc(24), total: 0n },
    charge: { amount: usdc(2), agentBudget: usdc(100) },
    expect: { code: "budget_exceeded", limit: "maxPerDay" },
  },
  // maxPerDay
  {
    name: "daily: usage + amount == maxPerDay passes",
    usage: { day: usdc(20), total: usdc(20) },
    charge: { amount: usdc(5) },
    expect: "ok+approval",
  },
  {
    name: "daily: usage + amount == maxPerDay + 1 fails",
    usage: { day: usdc(20) + 1n, total: 0n },
    charge: { amount: usdc(5) },
    expect: { code: "budget_exceeded", limit: "maxPerDay" },
  },
  {
    name: "daily: usage already above the limit refuses even 1 unit",
    usage: { day: usdc(30), total: 0n },
    charge: { amount: 1n },
    expect: { code: "budget_exceeded", limit: "maxPerDay" },
  },
  // maxTotal
  {
    name: "total: usage + amount == maxTotal passes",
    limits: { maxTotal: usdc(100) },
    usage: { day: 0n, total: usdc(99) },
    charge: { amount: usdc(1) },
    expect: "ok",
  },
  {
    name: "total: usage + amount == maxTotal + 1 fails",
    limits: { maxTotal: usdc(100) },
    usage: { day: 0n, total: usdc(99) + 1n },
    charge: { amount: usdc(1) },
    expect: { code: "budget_exceeded", limit: "maxTotal" },
  },
  {
    name: "total: no maxTotal, no total limit",
    usage: { day: 0n, total: usdc(1_000_000) },
    charge: { amount: usdc(1) },
    expect: "ok",
  },
  // order: the first refusal wins
  {
    name: "action refusal comes before the payee",
    limits: { allowActions: ["domains.*"], allowedPayees: [PAYEE] },
    charge: { payee: OTHER_PAYEE },
    expect: { code: "action_not_allowed" },
  },
  {
    name: "payee refusal comes before the amount",
    limits: { allowedPayees: [PAYEE] },
    charge: { payee: OTHER_PAYEE, amount: usdc(100) },
    expect: { code: "payee_not_allowed" },
  },
  {
    name: "per-call refusal comes before the daily one",
    usage: { day: usdc(25), total: 0n },
    charge: { amount: usdc(6) },
    expect: { code: "budget_exceeded", limit: "maxPerCall" },
  },
  {
    name: "daily refusal comes before the total one",
    limits: { maxTotal: usdc(1) },
    usage: { day: usdc(25), total: usdc(1) },
    charge: { amount: usdc(1) },
    expect: { code: "budget_exceeded", limit: "maxPerDay" },
  },
  // needsApproval
  { name: "amount == approvalAbove needs no approval", charge: { amount: usdc(1) }, expect: "ok" },
  { name: "approvalAbove + 1 atomic unit needs approval", charge: { amount: usdc(1) + 1n }, expect: "ok+approval" },
  { name: "zero needs no approval", charge: { amount: 0n }, expect: "ok" },
  {
    name: "approvalAbove 0: any paid amount needs approval",
    limits: { approvalAbove: 0n },
    charge: { amount: 1n },
    expect: "ok+approval",
  },
];

describe("evaluateBudget", () => {
  it.each(rows)("$name", (row) => {
    const charge: Charge = { action: "servers.provision", amount: usdc(0.5), ...row.charge };
    const d = evaluateBudget(limits(row.limits), row.usage ?? NONE, charge);
    if (row.expect === "ok" || row.expect === "ok+approval") {
      expect(d).toMatchObject({ ok: true, needsApproval: row.expect === "ok+approval" });
      if (row.ceiling !== undefined && d.ok) expect(d.ceiling).toBe(row.ceiling);
    } else {
      expect(d.ok).toBe(false);
      if (d.ok) return;
      expect(d.code).toBe(row.expect.code);
      if (row.expect.limit !== undefined)
        expect("limit" in d.context ? d.context.limit : undefined).toBe(row.expect.limit);
      // The words are the error table's, from the context (error-table.ts).
      expect(budgetRefusal(d).message.length).toBeGreaterThan(0);
    }
  });

  it.each<[string, Partial<Limits>, Usage, Partial<Charge>, string]>([
    [
      "an action not allowed",
      { allowActions: ["domains.register", "dns.*"] },
      NONE,
      {},
      "servers.provision is not in the allowed actions (domains.register, dns.*); a human can change PAID_ACTIONS_ALLOW_ACTIONS",
    ],
    [
      "a payee not allowed",
      { allowedPayees: [PAYEE] },
      NONE,
      { payee: OTHER_PAYEE },
      `payee ${OTHER_PAYEE} is not in the configured allowed payees`,
    ],
    [
      "the per-call limit",
      {},
      NONE,
      { amount: usdc(6) },
      "the price 6.00 USDC is above the per-call limit (maxPerCall) of 5.00 USDC",
    ],
    [
      "a per-action limit",
      { perAction: { "servers.*": usdc(0.25) } },
      NONE,
      {},
      "the price 0.50 USDC is above the per-call limit (perAction[servers.*]) of 0.25 USDC",
    ],
    [
      "the agent's budget",
      {},
      NONE,
      { agentBudget: usdc(0.2) },
      "the price 0.50 USDC is above the budget given for this call of 0.20 USDC",
    ],
    [
      "the daily limit",
      {},
      { day: usdc(22.5), total: 0n },
      { amount: usdc(3) },
      "paying 3.00 USDC would exceed the daily limit of 25.00 USDC (22.50 spent or reserved in the last 24 h)",
    ],
    [
      "the total limit",
      { maxTotal: usdc(10) },
      { day: 0n, total: usdc(9.75) },
      {},
      "paying 0.50 USDC would exceed the total limit of 10.00 USDC (9.75 spent or reserved)",
    ],
  ])("words %s's refusal as policy.ts did, from its context alone", (_, over, usage, charge, message) => {
    const d = evaluateBudget(limits(over), usage, { action: "servers.provision", amount: usdc(0.5), ...charge });
    if (d.ok) throw new Error("expected a refusal");
    expect(budgetRefusal(d).message).toBe(message);
  });

  it("says how much of the day is left", () => {
    const d = evaluateBudget(
      limits(),
      { day: usdc(22.5), total: 0n },
      { action: "servers.provision", amount: usdc(3) },
    );
    expect(d).toMatchObject({ ok: false, context: { limit: "maxPerDay", remaining: "2.50", spentLast24h: "22.50" } });
    const over = evaluateBudget(limits(), { day: usdc(30), total: 0n }, { action: "servers.provision", amount: 1n });
    expect(over).toMatchObject({ ok: false, context: { remaining: "0.00" } });
  });
});
