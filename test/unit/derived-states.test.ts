/**
 * The lists of intent states kept outside the states table (src/engine/model/states.ts) are
 * derived from it, and say what they said when they were written by hand: the hint after a
 * service stopped answering (src/mcp/hints.ts) and the states the console tells as a stop
 * (src/console/timeline.ts).
 */
import { describe, expect, it } from "vitest";
import { STOPPED_STATES } from "../../src/console/timeline.js";
import { fromStored } from "../../src/engine/errors.js";
import { INTENT_STATES, STATES } from "../../src/engine/model/states.js";
import { hintFor } from "../../src/mcp/hints.js";

const unavailable = (state?: string) =>
  hintFor(fromStored("service_unavailable", "the service did not answer", state ? { state } : {}));

describe("state lists derived from the states table", () => {
  it("service_unavailable: once a proof was signed (money in flight or spent), the hint says not to pay again", () => {
    const afterSigning = INTENT_STATES.filter((s) => /do not pay again/.test(unavailable(s)));
    expect(afterSigning).toEqual(["signed", "unsettled", "paid", "executed", "attention"]);
    expect(afterSigning).toEqual(INTENT_STATES.filter((s) => STATES[s].money !== "none"));
    for (const s of INTENT_STATES.filter((x) => !afterSigning.includes(x)))
      expect(unavailable(s), s).toMatch(/nothing was paid/);
  });

  it("service_unavailable without a state, or with one the table does not know, says nothing was paid", () => {
    expect(unavailable()).toMatch(/nothing was paid/);
    expect(unavailable("no_such_state")).toMatch(/nothing was paid/);
  });

  it("the console tells a purchase as stopped in every resting state but executed", () => {
    expect(INTENT_STATES.filter((s) => STOPPED_STATES.has(s))).toEqual(["refused", "failed", "attention"]);
    for (const s of STOPPED_STATES) expect(STATES[s].step, s).toBeNull();
  });
});
