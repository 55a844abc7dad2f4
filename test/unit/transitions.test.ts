/**
 * The intent state machine's pure rules (src/engine/model/transitions.ts), row by row: every
 * state x outcome pair (the defined ones written out here, the rest must throw), the
 * money invariants checked over every row the implementation has, and the small rules
 * around it: budget effects, when a fresh attempt may start, resting states, and what a
 * refund credits back.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { formatDecimal } from "../../src/domain/money.js";
import {
  budgetAfter,
  proofAtRisk,
  refundVerdict,
  restartable,
  resting,
  transition,
  type Outcome,
  type RefundEvidence,
  type ReservationEffect,
  type Transition,
} from "../../src/engine/model/transitions.js";
import type { BudgetState, IntentState, PaymentFate } from "../../src/engine/model/types.js";

const STATES = [
  "new",
  "quoted",
  "awaiting_approval",
  "reserved",
  "signed",
  "unsettled",
  "paid",
  "executed",
  "refused",
  "failed",
  "attention",
] as const;
const OUTCOMES = [
  "quote_recorded",
  "approval_pending",
  "approval_used",
  "reserve",
  "sign",
  "restart",
  "landed_late",
  "refused",
  "transient",
  "cancelled",
  "proof_refused",
  "settled",
  "settlement_mismatch",
  "landed",
  "never_landed",
  "fate_unknown",
  "refused_after_payment",
  "executed",
] as const;
const BUDGETS = ["none", "reserved", "spent", "released"] as const;
const EFFECTS = ["none", "reserve", "hold", "release", "spend"] as const;
const FATES = [undefined, "pending", "landed", "never"] as const;

/** A state that may lead to a new proof being signed (directly or by a fresh attempt). */
const CAN_SIGN_AGAIN: readonly IntentState[] = ["new", "quoted", "awaiting_approval", "reserved", "refused", "failed"];
/** The states in which a proof exists and may have left the process. */
const PROOF_OUT: readonly IntentState[] = ["signed", "unsettled"];
const BEFORE_RESERVATION: readonly IntentState[] = ["new", "quoted", "awaiting_approval"];

type Row = [
  from: IntentState,
  outcome: Outcome,
  to: IntentState,
  reservation: ReservationEffect,
  follow: boolean,
  human: boolean,
];

/** Every defined transition, written out (not derived from the implementation's table). */
const ROWS: Row[] = [
  // The way forward: every state change goes through the table.
  ["new", "quote_recorded", "quoted", "none", false, false],
  ["quoted", "approval_pending", "awaiting_approval", "none", false, false],
  ["awaiting_approval", "approval_pending", "awaiting_approval", "none", false, false],
  ["awaiting_approval", "approval_used", "quoted", "none", false, false],
  ["quoted", "approval_used", "quoted", "none", false, false],
  ["quoted", "reserve", "reserved", "reserve", false, false],
  ["awaiting_approval", "reserve", "reserved", "reserve", false, false],
  ["reserved", "sign", "signed", "hold", false, false],
  // A stop with nothing spent: a call may start a fresh attempt.
  ["refused", "restart", "new", "none", false, false],
  ["failed", "restart", "new", "none", false, false],
  // A payment the chain had shown could never land landed after all: spent, and a human's.
  ["refused", "landed_late", "attention", "spend", false, true],
  ["failed", "landed_late", "attention", "spend", false, true],
  ["attention", "landed_late", "attention", "spend", false, true],
  ["executed", "landed_late", "executed", "spend", false, true],
  // Nothing reserved, nothing signed: a stop costs nothing.
  ["new", "refused", "refused", "none", false, false],
  ["new", "transient", "failed", "none", false, false],
  ["new", "cancelled", "refused", "none", false, false],
  ["quoted", "refused", "refused", "none", false, false],
  ["quoted", "transient", "failed", "none", false, false],
  ["quoted", "cancelled", "refused", "none", false, false],
  ["awaiting_approval", "refused", "refused", "none", false, false],
  ["awaiting_approval", "transient", "failed", "none", false, false],
  ["awaiting_approval", "cancelled", "refused", "none", false, false],
  // Reserved, nothing signed: the reservation goes back.
  ["reserved", "refused", "failed", "release", false, false],
  ["reserved", "transient", "failed", "release", false, false],
  ["reserved", "cancelled", "failed", "release", false, false],
  // Signed: the proof may be out; everything stays held until settled or the chain speaks.
  ["signed", "transient", "signed", "hold", true, false],
  ["signed", "cancelled", "signed", "hold", true, false],
  ["signed", "proof_refused", "unsettled", "hold", true, false],
  ["signed", "settled", "paid", "spend", false, false],
  ["signed", "settlement_mismatch", "attention", "spend", false, true],
  ["signed", "executed", "executed", "spend", false, false],
  // Unsettled: only the chain decides.
  ["unsettled", "transient", "unsettled", "hold", true, false],
  ["unsettled", "cancelled", "unsettled", "hold", true, false],
  ["unsettled", "fate_unknown", "unsettled", "hold", true, false],
  ["unsettled", "landed", "paid", "spend", false, true],
  ["unsettled", "never_landed", "failed", "release", false, false],
  ["unsettled", "settlement_mismatch", "attention", "spend", false, true],
  // Paid: spent; what is left is the execution.
  ["paid", "transient", "paid", "hold", true, false],
  ["paid", "cancelled", "paid", "hold", true, false],
  ["paid", "proof_refused", "attention", "hold", false, true],
  ["paid", "refused_after_payment", "attention", "hold", false, true],
  ["signed", "refused_after_payment", "attention", "hold", false, true],
  ["paid", "settlement_mismatch", "attention", "hold", false, true],
  ["paid", "executed", "executed", "hold", false, false],
];

const key = (s: IntentState, o: Outcome) => `${s} x ${o}`;
const DEFINED = new Map(ROWS.map((r) => [key(r[0], r[1]), r]));
const ALL_PAIRS = STATES.flatMap((s) => OUTCOMES.map((o) => [s, o] as [IntentState, Outcome]));
const UNDEFINED_PAIRS = ALL_PAIRS.filter(([s, o]) => !DEFINED.has(key(s, o)));

/** What the implementation answers for every pair it accepts. */
function actualRows(): Array<{ from: IntentState; outcome: Outcome; t: Transition }> {
  const rows: Array<{ from: IntentState; outcome: Outcome; t: Transition }> = [];
  for (const [from, outcome] of ALL_PAIRS) {
    let t: Transition | undefined;
    try {
      t = transition(from, outcome);
    } catch {
      continue;
    }
    rows.push({ from, outcome, t });
  }
  return rows;
}

describe("the test's own vocabulary", () => {
  it("lists every state, outcome, budget state, effect and fate the types have", () => {
    expectTypeOf<(typeof STATES)[number]>().toEqualTypeOf<IntentState>();
    expectTypeOf<(typeof OUTCOMES)[number]>().toEqualTypeOf<Outcome>();
    expectTypeOf<(typeof BUDGETS)[number]>().toEqualTypeOf<BudgetState>();
    expectTypeOf<(typeof EFFECTS)[number]>().toEqualTypeOf<ReservationEffect>();
    expectTypeOf<Exclude<(typeof FATES)[number], undefined>>().toEqualTypeOf<PaymentFate>();
    expect(new Set(STATES).size).toBe(STATES.length);
    expect(new Set(OUTCOMES).size).toBe(OUTCOMES.length);
    expect(DEFINED.size).toBe(ROWS.length); // no pair written twice
  });
});

describe("transition: the table", () => {
  it.each(ROWS)(
    "%s x %s -> %s, reservation %s, follow %s, human %s",
    (from, outcome, state, reservation, follow, human) => {
      expect(transition(from, outcome)).toEqual({ state, reservation, follow, human });
    },
  );

  it.each(UNDEFINED_PAIRS)("%s x %s is impossible: throws", (from, outcome) => {
    expect(() => transition(from, outcome)).toThrow(`no transition from ${from} on ${outcome}`);
  });

  it.each(["refused", "failed", "executed", "attention"] as const)(
    "the resting state %s accepts only a late landing, and a stop with nothing spent a fresh attempt",
    (from) => {
      const accepted = from === "refused" || from === "failed" ? ["restart", "landed_late"] : ["landed_late"];
      for (const outcome of OUTCOMES)
        if (!accepted.includes(outcome)) expect(() => transition(from, outcome)).toThrow();
    },
  );

  it("accepts exactly the rows written here", () => {
    expect(
      actualRows()
        .map((r) => key(r.from, r.outcome))
        .sort(),
    ).toEqual([...DEFINED.keys()].sort());
  });
});

describe("transition: invariants over every row", () => {
  it("once a proof may have left, only never_landed releases the reservation", () => {
    for (const { from, outcome, t } of actualRows()) {
      if (!PROOF_OUT.includes(from)) continue;
      if (outcome === "never_landed") expect(t.reservation, key(from, outcome)).toBe("release");
      else expect(t.reservation, key(from, outcome)).not.toBe("release");
    }
  });

  it("once a proof may have left, nothing but never_landed leads (in any number of steps) to a state that could sign again", () => {
    // Every state reachable from signed/unsettled without the chain saying never_landed.
    const reached = new Set<IntentState>(PROOF_OUT);
    const path = new Map<IntentState, string>(PROOF_OUT.map((s) => [s, s]));
    for (let grew = true; grew;) {
      grew = false;
      for (const { from, outcome, t } of actualRows()) {
        if (!reached.has(from) || outcome === "never_landed" || reached.has(t.state)) continue;
        reached.add(t.state);
        path.set(t.state, `${path.get(from)} -${outcome}-> ${t.state}`);
        grew = true;
      }
    }
    for (const s of reached) expect(CAN_SIGN_AGAIN.includes(s), path.get(s)).toBe(false);
    // ...and nothing reached that way ever releases the reservation either.
    for (const { from, outcome, t } of actualRows()) {
      if (reached.has(from) && outcome !== "never_landed")
        expect(t.reservation, key(from, outcome)).not.toBe("release");
    }
  });

  it("landed always spends", () => {
    const landed = actualRows().filter((r) => r.outcome === "landed");
    expect(landed.length).toBeGreaterThan(0);
    for (const { from, t } of landed) expect(t.reservation, from).toBe("spend");
  });

  it("fate_unknown and transient after signing always hold and follow", () => {
    const after = actualRows().filter(
      (r) =>
        ["signed", "unsettled", "paid"].includes(r.from) && (r.outcome === "fate_unknown" || r.outcome === "transient"),
    );
    expect(after.length).toBeGreaterThanOrEqual(4);
    for (const { from, outcome, t } of after)
      expect({ reservation: t.reservation, follow: t.follow }, key(from, outcome)).toEqual({
        reservation: "hold",
        follow: true,
      });
  });

  it("a cancel after signing cannot stop a proof that left: it holds and follows", () => {
    for (const { from, outcome, t } of actualRows()) {
      if (outcome === "cancelled" && ["signed", "unsettled", "paid"].includes(from)) {
        expect({ state: t.state, reservation: t.reservation, follow: t.follow }, from).toEqual({
          state: from,
          reservation: "hold",
          follow: true,
        });
      }
    }
  });

  it("before anything is reserved, no outcome spends or holds a reservation; only `reserve` takes one", () => {
    for (const { from, outcome, t } of actualRows()) {
      if (BEFORE_RESERVATION.includes(from))
        expect(t.reservation, key(from, outcome)).toBe(outcome === "reserve" ? "reserve" : "none");
    }
  });

  it("while something is reserved, every row says what happens to it (never 'none')", () => {
    for (const { from, outcome, t } of actualRows()) {
      if (BEFORE_RESERVATION.includes(from) || resting(from)) continue;
      expect(t.reservation, key(from, outcome)).not.toBe("none");
    }
  });

  it("only `reserve` takes a reservation", () => {
    for (const { from, outcome, t } of actualRows())
      expect(t.reservation === "reserve", key(from, outcome)).toBe(outcome === "reserve");
  });

  it("a followed row never lands in a resting state; a resting state is never followed", () => {
    for (const { from, outcome, t } of actualRows())
      expect(t.follow && resting(t.state), key(from, outcome)).toBe(false);
  });

  it("every row into attention asks for a human", () => {
    for (const { from, outcome, t } of actualRows())
      if (t.state === "attention") expect(t.human, key(from, outcome)).toBe(true);
  });
});

describe("budgetAfter", () => {
  it.each<[BudgetState, ReservationEffect, BudgetState]>([
    ["none", "none", "none"],
    ["none", "hold", "none"],
    ["none", "release", "none"],
    // Nothing was reserved: nothing to spend from (unreachable through the table; see the report).
    ["none", "spend", "none"],
    ["reserved", "none", "reserved"],
    ["reserved", "hold", "reserved"],
    ["reserved", "release", "released"],
    ["reserved", "spend", "spent"],
    ["spent", "none", "spent"],
    ["spent", "hold", "spent"],
    // Spent money never comes back by a release: only a refund seen on chain credits it.
    ["spent", "release", "spent"],
    ["spent", "spend", "spent"],
    ["released", "none", "released"],
    ["released", "hold", "released"],
    ["released", "release", "released"],
    // Unreachable through the table (a released intent rests); kept as it is today.
    ["released", "spend", "released"],
    // A reservation is taken afresh (the table takes one only before anything was reserved).
    ["none", "reserve", "reserved"],
    ["released", "reserve", "reserved"],
    ["reserved", "reserve", "reserved"],
    ["spent", "reserve", "reserved"],
  ])("%s after %s -> %s", (current, effect, next) => {
    expect(budgetAfter(current, effect)).toBe(next);
  });
});

describe("restartable", () => {
  type R = [IntentState, string | null, PaymentFate | undefined, boolean];
  const rows: R[] = [];
  for (const state of ["refused", "failed"] as const) {
    // Nothing was ever signed.
    rows.push([state, null, undefined, true]);
    // A proof whose fate nobody knows, that is pending, or that landed: money may be (or is) out.
    rows.push([state, "proof", undefined, false]);
    rows.push([state, "proof", "pending", false]);
    rows.push([state, "proof", "landed", false]);
    // The chain said the proof can never land.
    rows.push([state, "proof", "never", true]);
  }
  for (const state of STATES) {
    if (state === "refused" || state === "failed") continue;
    for (const proof of [null, "proof"]) for (const fate of FATES) rows.push([state, proof, fate, false]);
  }

  it.each(rows)("%s with proof %s and fate %s -> %s", (state, proof, fate, yes) => {
    expect(restartable(state, proof, fate)).toBe(yes);
  });
});

describe("resting", () => {
  it.each<[IntentState, boolean]>([
    ["new", false],
    ["quoted", false],
    ["awaiting_approval", false],
    ["reserved", false],
    ["signed", false],
    ["unsettled", false],
    ["paid", false],
    ["executed", true],
    ["refused", true],
    ["failed", true],
    ["attention", true],
  ])("%s -> %s", (state, yes) => {
    expect(resting(state)).toBe(yes);
  });
});

describe("proofAtRisk", () => {
  it.each<[string | null, PaymentFate | undefined, boolean]>([
    [null, undefined, false],
    [null, "pending", false],
    [null, "landed", false],
    [null, "never", false],
    ["proof", undefined, true],
    ["proof", "pending", true],
    ["proof", "landed", true],
    ["proof", "never", false],
  ])("proof %s, fate %s -> %s", (proof, fate, yes) => {
    expect(proofAtRisk(proof, fate)).toBe(yes);
  });
});

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
