/**
 * The intent state machine's table (src/engine/model/transitions.ts), row by row: every
 * state x outcome pair (the defined ones written out in transitions.fixtures.ts, the rest must
 * throw), and the money invariants checked over every row the implementation has.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { resting, transition, type Outcome, type ReservationEffect } from "../../src/engine/model/transitions.js";
import type { BudgetState, IntentState, PaymentFate } from "../../src/engine/model/types.js";
import {
  actualRows,
  BEFORE_RESERVATION,
  BUDGETS,
  CAN_SIGN_AGAIN,
  DEFINED,
  EFFECTS,
  FATES,
  key,
  OUTCOMES,
  PROOF_OUT,
  ROWS,
  STATES,
  UNDEFINED_PAIRS,
} from "./transitions.fixtures.js";

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
