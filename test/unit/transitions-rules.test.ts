/**
 * The small rules around the intent state machine (src/engine/model/transitions.ts): what a
 * reservation effect does to the budget, where outcomes taken in one commit lead (and whether
 * the call pauses there), when a fresh attempt may start, which states rest, and when a signed
 * proof still puts money at risk.
 */
import { describe, expect, it } from "vitest";
import {
  budgetAfter,
  passage,
  proofAtRisk,
  restartable,
  resting,
  type Outcome,
  type Passage,
  type ReservationEffect,
} from "../../src/engine/model/transitions.js";
import type { BudgetState, IntentState, PaymentFate } from "../../src/engine/model/types.js";
import { FATES, STATES } from "./transitions.fixtures.js";

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

describe("passage", () => {
  it.each<[IntentState, BudgetState, [Outcome, ...Outcome[]], Omit<Passage, "outcome">]>([
    // The fast path: price, reservation and proof in one commit.
    [
      "new",
      "none",
      ["quote_recorded", "reserve", "sign"],
      { state: "signed", budget: "reserved", reserves: true, follow: false, pause: false, human: false },
    ],
    [
      "quoted",
      "none",
      ["reserve"],
      { state: "reserved", budget: "reserved", reserves: true, follow: false, pause: false, human: false },
    ],
    // A refused proof is followed later, and the call goes on to ask the chain at once.
    [
      "signed",
      "reserved",
      ["proof_refused"],
      { state: "unsettled", budget: "reserved", reserves: false, follow: true, pause: false, human: false },
    ],
    // Nothing known yet: the intent stays where it was, followed later, and the call stops there.
    [
      "signed",
      "reserved",
      ["transient"],
      { state: "signed", budget: "reserved", reserves: false, follow: true, pause: true, human: false },
    ],
    [
      "unsettled",
      "reserved",
      ["fate_unknown"],
      { state: "unsettled", budget: "reserved", reserves: false, follow: true, pause: true, human: false },
    ],
    [
      "unsettled",
      "reserved",
      ["landed"],
      { state: "paid", budget: "spent", reserves: false, follow: false, pause: false, human: true },
    ],
    // A proof that can never land, then a fresh attempt: released, then forgotten by the fresh head.
    [
      "unsettled",
      "reserved",
      ["never_landed", "restart"],
      { state: "new", budget: "released", reserves: false, follow: false, pause: false, human: false },
    ],
  ])("from %s (budget %s) by %j", (state, budget, outcomes, expected) => {
    expect(passage(state, budget, outcomes)).toEqual({ ...expected, outcome: outcomes[outcomes.length - 1] });
  });

  it("throws on an outcome a state has no row for", () => {
    expect(() => passage("new", "none", ["quote_recorded", "sign"])).toThrow(/no transition from quoted on sign/);
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
