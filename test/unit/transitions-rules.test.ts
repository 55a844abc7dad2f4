/**
 * The small rules around the intent state machine (src/engine/model/transitions.ts): what a
 * reservation effect does to the budget, when a fresh attempt may start, which states rest,
 * and when a signed proof still puts money at risk.
 */
import { describe, expect, it } from "vitest";
import {
  budgetAfter,
  proofAtRisk,
  restartable,
  resting,
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
