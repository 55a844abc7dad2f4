/**
 * Where a purchase's money is when the engine answers (src/engine/intent/money.ts): the worst
 * of its state's word and every proof's fate, over all its attempts. Pure table.
 */
import { describe, expect, it } from "vitest";
import { purchaseMoney } from "../../src/engine/intent/money.js";
import { INTENT_STATES, STATES } from "../../src/engine/model/states.js";
import type { IntentState, PaymentFate } from "../../src/engine/model/types.js";

describe("purchaseMoney", () => {
  it("is the state's word when no proof was signed", () => {
    for (const state of INTENT_STATES) expect(purchaseMoney(state, [])).toBe(STATES[state].money);
  });

  it.each<[IntentState, PaymentFate[], string]>([
    ["failed", ["never"], "none"],
    ["failed", ["never", "never"], "none"],
    ["refused", ["never"], "none"],
    // A fresh attempt's proof whose fate is not known yet, or the first one, found landed late.
    ["quoted", ["never", "pending"], "in_flight"],
    ["failed", ["never", "landed"], "settled"],
    ["refused", ["landed"], "settled"],
    // The state says more than the fates: a confirmed settlement the chain has not been asked about yet.
    ["attention", ["pending"], "settled"],
    ["paid", ["pending"], "settled"],
    ["executed", ["never", "pending"], "settled"],
    ["signed", ["pending"], "in_flight"],
    ["unsettled", ["pending"], "in_flight"],
    ["signed", ["landed"], "settled"],
  ])("%s with proofs %j: %s", (state, fates, money) => {
    expect(purchaseMoney(state, fates)).toBe(money);
  });

  it("says none only when every proof can never land", () => {
    for (const state of INTENT_STATES.filter((s) => STATES[s].money === "none"))
      for (const fates of [["pending"], ["landed"], ["never", "pending"]] as PaymentFate[][])
        expect(purchaseMoney(state, fates), `${state} ${fates.join(",")}`).not.toBe("none");
  });
});
