/**
 * What the service priced against what it then asks to be paid (src/engine/budget/policy.ts):
 * checkChallenge passes only the exact priced payment and names every drift, and quoteAmount
 * reads a quote's decimal amount into atomic units or refuses it.
 */
import { describe, expect, it } from "vitest";
import {
  checkChallenge,
  describeDrifts,
  feePayerDrift,
  quoteAmount,
  type PricedIntent,
} from "../../src/engine/budget/policy.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { OTHER_PAYEE, PAYEE } from "./policy.fixtures.js";

describe("checkChallenge", () => {
  const NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
  const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
  const WALLET = "Wa11et1111111111111111111111111111111111111";
  const FEE_PAYER = "FeePayer11111111111111111111111111111111111";
  const NOW = Date.parse("2026-01-01T00:00:00Z");
  const priced: PricedIntent = { quoteId: "q_abc", amount: 288_000n, expiresAt: NOW + 60_000, payee: PAYEE };
  const OWNER = "Awner111111111111111111111111111111111111111";
  const expected = { network: NETWORK, mint: MINT, wallet: WALLET, owner: OWNER };
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
    ["the wallet's owner as fee payer (delegate mode)", {}, { feePayer: OWNER }, "extra.feePayer"],
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

  it("passes the owner as fee payer when there is no owner (own-account mode)", () => {
    const own = { network: NETWORK, mint: MINT, wallet: WALLET };
    expect(checkChallenge(priced, [withField({}, { feePayer: OWNER })], own, NOW).ok).toBe(true);
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

describe("feePayerDrift: one rule for the fee payer on every path", () => {
  const WALLET = "Wa11et1111111111111111111111111111111111111";
  const OWNER = "Awner111111111111111111111111111111111111111";
  const SELLER = "FeePayer11111111111111111111111111111111111";

  it.each<[string, unknown, { wallet: string; owner?: string }, string | undefined]>([
    ["the seller's own fee payer", SELLER, { wallet: WALLET, owner: OWNER }, undefined],
    ["the seller's own, own-account mode", SELLER, { wallet: WALLET }, undefined],
    ["our wallet", WALLET, { wallet: WALLET, owner: OWNER }, "an address other than our wallet"],
    ["our wallet, own-account mode", WALLET, { wallet: WALLET }, "an address other than our wallet"],
    ["the owner (delegate mode)", OWNER, { wallet: WALLET, owner: OWNER }, "an address other than the wallet's owner"],
    ["an address that is an owner elsewhere, not here", OWNER, { wallet: WALLET }, undefined],
    ["none", undefined, { wallet: WALLET }, "the service's fee payer"],
    ["an empty one", "", { wallet: WALLET }, "the service's fee payer"],
    ["one that is no string", 42, { wallet: WALLET }, "the service's fee payer"],
  ])("%s: %s", (_name, feePayer, ours, expected) => {
    const drift = feePayerDrift(feePayer, ours);
    expect(drift?.expected).toBe(expected);
    if (drift) expect(drift.field).toBe("extra.feePayer");
  });
});
