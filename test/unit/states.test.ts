/**
 * The per-state table (src/engine/model/states.ts): one row for every state — checked by the
 * compiler and here — and every list of states the engine uses derived from it, agreeing
 * with the transitions table.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  INTENT_STATES,
  resting,
  STATES,
  UNFINISHED_STATES,
  type DrivenBy,
  type DrivenState,
  type DriveStep,
  type IntentState,
  type StateRow,
} from "../../src/engine/model/states.js";
import { transition } from "../../src/engine/model/transitions.js";

describe("the per-state table", () => {
  it("has exactly one row per state (a state added without a row does not compile, nor pass here)", () => {
    expectTypeOf<keyof typeof STATES>().toEqualTypeOf<IntentState>();
    expect(Object.keys(STATES).sort()).toEqual([...INTENT_STATES].sort());
    expect(new Set(INTENT_STATES).size).toBe(INTENT_STATES.length);
    // The mechanism the table relies on: a Record over one state more wants its row.
    // @ts-expect-error a state without a row is a compile error
    const incomplete: Record<IntentState | "paused", StateRow> = STATES;
    expect(incomplete).toBe(STATES);
  });

  it.each<[IntentState, DriveStep | null, boolean]>([
    ["new", "quote", true],
    ["quoted", "decide", true],
    ["awaiting_approval", "decide", false],
    ["reserved", "sign", true],
    ["signed", "send", true],
    ["unsettled", "establish", true],
    ["paid", "execute", true],
    ["executed", null, false],
    ["refused", null, false],
    ["failed", null, false],
    ["attention", null, false],
  ])("%s: driven on by %s, resumed when nobody drives it: %s", (state, step, unfinished) => {
    expect(STATES[state].step).toBe(step);
    expect(STATES[state].unfinished).toBe(unfinished);
    expect(resting(state)).toBe(step === null);
  });

  it("keeps each row's step in its type, so a step's intent type follows the table (intent/drive.ts)", () => {
    expectTypeOf<DrivenBy<"quote">>().toEqualTypeOf<"new">();
    expectTypeOf<DrivenBy<"decide">>().toEqualTypeOf<"quoted" | "awaiting_approval">();
    expectTypeOf<DrivenBy<"sign">>().toEqualTypeOf<"reserved">();
    expectTypeOf<DrivenBy<"send">>().toEqualTypeOf<"signed">();
    expectTypeOf<DrivenBy<"establish">>().toEqualTypeOf<"unsettled">();
    expectTypeOf<DrivenBy<"execute">>().toEqualTypeOf<"paid">();
    expectTypeOf<DrivenState>().toEqualTypeOf<
      "new" | "quoted" | "awaiting_approval" | "reserved" | "signed" | "unsettled" | "paid"
    >();
    expectTypeOf(STATES.executed.step).toEqualTypeOf<null>();
    expect(INTENT_STATES.filter((s) => STATES[s].step === "decide")).toEqual(["quoted", "awaiting_approval"]);
  });

  it("derives the unfinished states the journal's queries use", () => {
    expect(UNFINISHED_STATES).toEqual(["new", "quoted", "reserved", "signed", "unsettled", "paid"]);
  });

  it("agrees with the transitions table: each driven state has a row for its failures, a retry and a cancel", () => {
    for (const state of INTENT_STATES) {
      const row = STATES[state];
      if (row.step === null) {
        expect(row.onFailure, state).toBeNull();
        continue;
      }
      for (const outcome of [row.onFailure!, "transient", "cancelled"] as const)
        expect(() => transition(state, outcome), `${state} x ${outcome}`).not.toThrow();
    }
  });

  it("says where the money is, as the transitions table treats it", () => {
    const money = (m: StateRow["money"]) => INTENT_STATES.filter((s) => STATES[s].money === m);
    expect(money("in_flight")).toEqual(["signed", "unsettled"]);
    expect(money("settled")).toEqual(["paid", "executed", "attention"]);
    // Only a stop with nothing spent may start afresh.
    expect(INTENT_STATES.filter((s) => STATES[s].restartable)).toEqual(["refused", "failed"]);
    for (const s of INTENT_STATES) if (STATES[s].restartable) expect(() => transition(s, "restart"), s).not.toThrow();
  });
});
