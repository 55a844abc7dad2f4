/**
 * The note a person reads when a service took a payment and has not answered since
 * (src/engine/intent/steps/unanswered.ts): what it says, that it is found again (told once),
 * and that withdrawing it leaves every other note as it was.
 */
import { describe, expect, it } from "vitest";
import { saysUnanswered, unansweredNote, withoutUnansweredNote } from "../../src/engine/intent/steps/unanswered.js";

const TX = "5".repeat(88);
const LANDED = Date.UTC(2025, 0, 2, 3, 4, 5);
const note = unansweredNote({
  amount: 288_000n,
  payee: "TreasuryAddr",
  tx: TX,
  landedAt: LANDED,
  now: LANDED + 16 * 60_000 + 30_000,
  lastProblem: "HTTP 500 internal; and more",
});

describe("the note about a silent service", () => {
  it("says what the chain shows (amount, payee, transaction, when) and how long the service has been silent", () => {
    expect(note).toContain("0.288 USDC paid to TreasuryAddr");
    expect(note).toContain(`in transaction ${TX}`);
    expect(note).toContain("landed by 2025-01-02T03:04:05.000Z");
    expect(note).toContain("has not created the execution in the 16 min since");
    expect(note).toContain("last attempt: HTTP 500 internal, and more");
  });

  it("is one part of an attention text: it never holds the separator notes are joined with", () => {
    expect(note).not.toContain("; ");
  });

  it.each([
    [null, false],
    ["", false],
    ["the service refused a payment that landed", false],
    [note, true],
    [`the service refused a payment that landed; ${note}`, true],
  ])("is found again in %j: %s", (attention, found) => {
    expect(saysUnanswered(attention)).toBe(found);
  });

  it.each([
    [null, null],
    [note, null],
    ["earlier note", "earlier note"],
    [`earlier note; ${note}`, "earlier note"],
    [`earlier note; ${note}; then execution refused: x`, "earlier note; then execution refused: x"],
  ])("withdrawn from %j leaves %j", (attention, left) => {
    expect(withoutUnansweredNote(attention)).toBe(left);
  });
});
