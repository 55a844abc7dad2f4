import { describe, expect, it } from "vitest";
import type { Limits } from "../../src/engine/config/config.js";
import {
  callCeiling,
  checkChallenge,
  describeDrifts,
  evaluateBudget,
  quoteAmount,
  type PricedIntent,
  type Usage,
} from "../../src/engine/budget/policy.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";

const usdc = (n: number) => BigInt(Math.round(n * 1_000_000));

const PAYEE = "PayeeAddr1111111111111111111111111111111111";
const OTHER_PAYEE = "OtherPayee111111111111111111111111111111111";
const NONE: Usage = { day: 0n, total: 0n };

function limits(over: Partial<Limits> = {}): Limits {
  return {
    maxPerCall: usdc(5),
    maxPerDay: usdc(25),
    maxTotal: undefined,
    approvalAbove: usdc(1),
    allowActions: ["*"],
    perAction: {},
    allowedPayees: undefined,
    ...over,
  };
}

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
      if (row.expect.limit !== undefined) expect(d.context.limit).toBe(row.expect.limit);
      expect(d.message.length).toBeGreaterThan(0);
    }
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

describe("callCeiling", () => {
  it.each<[string, Partial<Limits>, string, bigint | undefined, bigint, string]>([
    ["maxPerCall alone", {}, "servers.provision", undefined, usdc(5), "maxPerCall"],
    [
      "an exact perAction below it",
      { perAction: { "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "an exact perAction equal to it does not take over",
      { perAction: { "servers.provision": usdc(5) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "an exact perAction above it",
      { perAction: { "servers.provision": usdc(9) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "a pattern perAction",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      undefined,
      usdc(3),
      "perAction[servers.*]",
    ],
    [
      "a verb pattern",
      { perAction: { "*.provision": usdc(3) } },
      "servers.provision",
      undefined,
      usdc(3),
      "perAction[*.provision]",
    ],
    [
      "a pattern of another category",
      { perAction: { "domains.*": usdc(1) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "the lowest of pattern and exact: pattern",
      { perAction: { "servers.provision": usdc(4), "servers.*": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.*]",
    ],
    [
      "the lowest of pattern and exact: exact",
      { perAction: { "servers.*": usdc(4), "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "exact wins a tie",
      { perAction: { "servers.*": usdc(2), "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "the lowest of several patterns",
      { perAction: { "*": usdc(4), "servers.*": usdc(3), "*.provision": usdc(1) } },
      "servers.provision",
      undefined,
      usdc(1),
      "perAction[*.provision]",
    ],
    [
      "the agent budget below all",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      usdc(1),
      usdc(1),
      "budget",
    ],
    [
      "the agent budget above perAction",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      usdc(4),
      usdc(3),
      "perAction[servers.*]",
    ],
    ["the agent budget above maxPerCall", {}, "servers.provision", usdc(40), usdc(5), "maxPerCall"],
    ["a zero agent budget", {}, "servers.provision", 0n, 0n, "budget"],
  ])("%s", (_name, over, action, budget, ceiling, by) => {
    expect(callCeiling(limits(over), action, budget)).toEqual({ ceiling, by });
  });
});

describe("checkChallenge", () => {
  const NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
  const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
  const WALLET = "Wa11et1111111111111111111111111111111111111";
  const FEE_PAYER = "FeePayer11111111111111111111111111111111111";
  const NOW = Date.parse("2026-01-01T00:00:00Z");
  const priced: PricedIntent = { quoteId: "q_abc", amount: 288_000n, expiresAt: NOW + 60_000, payee: PAYEE };
  const expected = { network: NETWORK, mint: MINT, wallet: WALLET };
  const good = (): PaymentRequirements => ({
    scheme: "exact",
    network: NETWORK,
    amount: "288000",
    asset: MINT,
    payTo: PAYEE,
    maxTimeoutSeconds: 60,
    extra: { memo: "q_abc", feePayer: FEE_PAYER },
  });
  /** A challenge with `field` changed; `undefined` deletes it. */
  const withField = (patch: Record<string, unknown>, extraPatch?: Record<string, unknown>): PaymentRequirements => {
    const r: Record<string, unknown> = { ...good(), ...patch };
    if (extraPatch) r.extra = { ...(r.extra as object), ...extraPatch };
    for (const [k, v] of Object.entries(r)) if (v === undefined) delete r[k];
    for (const [k, v] of Object.entries(r.extra as Record<string, unknown>))
      if (v === undefined) delete (r.extra as Record<string, unknown>)[k];
    return r as PaymentRequirements;
  };

  it("passes a challenge that is exactly what was priced", () => {
    expect(checkChallenge(priced, [good()], expected, NOW)).toEqual({ ok: true, requirements: good() });
  });

  it("picks the exact option on our network among several", () => {
    const other = withField({ network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" });
    expect(checkChallenge(priced, [other, good()], expected, NOW)).toMatchObject({ ok: true, requirements: good() });
  });

  it("passes a challenge without a priced payee (the first challenge fixes it)", () => {
    expect(checkChallenge({ ...priced, payee: undefined }, [withField({ payTo: OTHER_PAYEE })], expected, NOW).ok).toBe(
      true,
    );
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown> | undefined, string]>([
    ["another scheme", { scheme: "upto" }, undefined, "scheme/network"],
    ["another network", { network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }, undefined, "scheme/network"],
    ["a different amount", { amount: "288001" }, undefined, "amount"],
    ["a decimal amount", { amount: "0.288" }, undefined, "amount"],
    ["a float-ish amount", { amount: "288000.0" }, undefined, "amount"],
    ["an exponent amount", { amount: "2.88e5" }, undefined, "amount"],
    ["a negative amount", { amount: "-288000" }, undefined, "amount"],
    ["an amount beyond u64", { amount: "18446744073709551616" }, undefined, "amount"],
    ["a padded amount", { amount: "0288000" }, undefined, "amount"],
    ["a numeric amount", { amount: 288000 }, undefined, "amount"],
    ["another asset", { asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" }, undefined, "asset"],
    ["another payee", { payTo: OTHER_PAYEE }, undefined, "payTo"],
    ["another memo", {}, { memo: "q_other" }, "extra.memo"],
    ["no memo", {}, { memo: undefined }, "extra.memo"],
    ["no fee payer", {}, { feePayer: undefined }, "extra.feePayer"],
    ["an empty fee payer", {}, { feePayer: "" }, "extra.feePayer"],
    ["our own wallet as fee payer", {}, { feePayer: WALLET }, "extra.feePayer"],
    ["a zero maxTimeoutSeconds", { maxTimeoutSeconds: 0 }, undefined, "maxTimeoutSeconds"],
    ["a negative maxTimeoutSeconds", { maxTimeoutSeconds: -5 }, undefined, "maxTimeoutSeconds"],
    ["a NaN maxTimeoutSeconds", { maxTimeoutSeconds: Number.NaN }, undefined, "maxTimeoutSeconds"],
    ["no maxTimeoutSeconds", { maxTimeoutSeconds: undefined }, undefined, "maxTimeoutSeconds"],
  ])("reports %s as a drift in %s", (_name, patch, extraPatch, field) => {
    const check = checkChallenge(priced, [withField(patch, extraPatch)], expected, NOW);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.drifts.map((d) => d.field)).toEqual([field]);
  });

  it("reports no payment option at all", () => {
    const check = checkChallenge(priced, [], expected, NOW);
    expect(check).toEqual({
      ok: false,
      drifts: [{ field: "scheme/network", expected: `exact on ${NETWORK}`, actual: "no payment option" }],
    });
  });

  it.each([
    ["at the expiry instant", 0],
    ["after it", 1],
  ])("reports an expired quote %s", (_name, after) => {
    const check = checkChallenge(priced, [good()], expected, priced.expiresAt + after);
    expect(check.ok ? [] : check.drifts.map((d) => d.field)).toEqual(["expiresAt"]);
  });

  it("passes one millisecond before expiry", () => {
    expect(checkChallenge(priced, [good()], expected, priced.expiresAt - 1).ok).toBe(true);
  });

  it("reports every drift together", () => {
    const bad = withField(
      { amount: "1e6", asset: "Mint", payTo: OTHER_PAYEE, maxTimeoutSeconds: 0 },
      { memo: 7, feePayer: WALLET },
    );
    const check = checkChallenge(priced, [bad], expected, priced.expiresAt);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.drifts.map((d) => d.field).sort()).toEqual([
      "amount",
      "asset",
      "expiresAt",
      "extra.feePayer",
      "extra.memo",
      "maxTimeoutSeconds",
      "payTo",
    ]);
    const text = describeDrifts(check.drifts);
    expect(text).toContain('amount: expected 288000 (0.288 USDC), got "1e6"');
    expect(text).toContain("extra.memo: expected q_abc, got 7");
  });

  it("reports an expired quote with a wrong scheme together", () => {
    const check = checkChallenge(priced, [withField({ scheme: "upto" })], expected, priced.expiresAt + 1);
    expect(check.ok ? [] : check.drifts.map((d) => d.field)).toEqual(["expiresAt", "scheme/network"]);
  });

  it("bounds what it echoes of a hostile value", () => {
    const check = checkChallenge(
      priced,
      [withField({ amount: "9".repeat(10_000), payTo: "x".repeat(10_000) })],
      expected,
      NOW,
    );
    expect(check.ok).toBe(false);
    if (check.ok) return;
    for (const d of check.drifts) expect(d.actual.length).toBeLessThanOrEqual(80);
  });
});

describe("quoteAmount", () => {
  const rows: Array<[unknown, bigint | undefined]> = [
    ["0.288", 288_000n],
    ["12.50", 12_500_000n],
    ["0", 0n],
    ["18446744073709.551615", (1n << 64n) - 1n],
    ["18446744073709.551616", undefined],
    ["0.0000001", undefined],
    ["-1", undefined],
    ["1e3", undefined],
    [" 1", undefined],
    ["", undefined],
    [0.288, undefined],
    [288000n, undefined],
    [null, undefined],
    [undefined, undefined],
    [{ amount: "1" }, undefined],
  ];
  const label = (v: unknown) => (typeof v === "bigint" ? `${v}n` : (JSON.stringify(v) ?? String(v)));
  it.each(rows.map(([text, atomic]) => [label(text), text, atomic] as const))("%s -> %s", (_label, text, atomic) => {
    expect(quoteAmount(text)).toBe(atomic);
  });
});
