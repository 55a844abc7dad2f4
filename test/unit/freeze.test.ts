/**
 * The freeze's pure rules as tables: which purchases a freeze stops, what the refusal says
 * to the person and the agent (never a command line the agent could run), how a freeze reads
 * for a person, and which reasons are kept.
 */
import { describe, expect, it } from "vitest";
import { describeFreeze, MAX_REASON, reasonProblem } from "../../src/commands/freeze.js";
import { ERROR_CODES } from "../../src/engine/errors.js";
import { freezeView, frozenError, stoppedByFreeze } from "../../src/engine/intent/freeze.js";
import type { Freeze } from "../../src/engine/journal/port.js";
import { hintFor } from "../../src/mcp/hints.js";

const SINCE = Date.parse("2026-11-26T10:00:00.000Z");
const WITH_REASON: Freeze = { reason: "card stolen", since: SINCE, by: "terminal" };
const WITHOUT: Freeze = { reason: null, since: SINCE, by: "build-7/4242" };

describe("which purchases a freeze stops", () => {
  it.each([
    ["a new purchase (none recorded yet)", undefined, true],
    ["one that signed nothing yet (new, quoted, reserved, refused before signing)", { proof: null }, true],
    ["one whose proof was signed (it may have left: it is followed)", { proof: "PROOF" }, false],
  ] as const)("%s", (_what, intent, stopped) => {
    expect(stoppedByFreeze(intent)).toBe(stopped);
  });
});

describe("the refusal while frozen", () => {
  it("is a public error code", () => {
    expect(ERROR_CODES).toContain("frozen");
  });

  it.each([
    [
      "with a reason",
      WITH_REASON,
      `payments are frozen by a person (reason: "card stolen", since 2026-11-26T10:00:00.000Z)`,
    ],
    ["without one", WITHOUT, "payments are frozen by a person (since 2026-11-26T10:00:00.000Z)"],
  ] as const)("addresses the person, %s, and carries when and who", (_what, f, opening) => {
    const e = frozenError(f);
    expect(e.code).toBe("frozen");
    expect(e.retryable).toBe(false);
    expect(e.message.startsWith(opening)).toBe(true);
    expect(e.message).toContain("nothing new was signed or reserved");
    expect(e.message).toContain("A person must unfreeze payments at a terminal");
    expect(e.context).toEqual({ reason: f.reason, since: "2026-11-26T10:00:00.000Z", frozenBy: f.by });
  });

  it.each([
    ["the message", frozenError(WITH_REASON).message],
    ["what the agent is told to do", hintFor(frozenError(WITH_REASON))],
  ])("%s hands the agent no command line that would lift it", (_what, text) => {
    expect(text).not.toMatch(/paid-actions-mcp|unfreeze`|`/);
  });

  it("tells the agent not to retry until the person says so, and that quotes still work", () => {
    const hint = hintFor(frozenError(WITHOUT));
    expect(hint).toContain("only a person can unfreeze them, at a terminal");
    expect(hint).toContain("Do not call paid tools again until the user says payments are unfrozen");
    expect(hint).toContain("quote_action still prices actions");
  });
});

describe("a freeze as people read it", () => {
  it.each([
    [WITH_REASON, `since 2026-11-26T10:00:00.000Z, by terminal, reason: "card stolen"`],
    [WITHOUT, "since 2026-11-26T10:00:00.000Z, by build-7/4242, no reason given"],
    // A reason anyone could have written (an agent may freeze too) cannot redraw a terminal.
    [
      { ...WITH_REASON, reason: "stop\u001b[2Jnow" },
      `since 2026-11-26T10:00:00.000Z, by terminal, reason: "stop\\u001b[2Jnow"`,
    ],
  ] as const)("%o reads %s", (f, text) => {
    expect(describeFreeze(f)).toBe(text);
  });

  it("the console's view: ISO time, or null when not frozen", () => {
    expect(freezeView(WITH_REASON)).toEqual({
      reason: "card stolen",
      since: "2026-11-26T10:00:00.000Z",
      by: "terminal",
    });
    expect(freezeView(undefined)).toBeNull();
  });
});

describe("which reasons are kept", () => {
  it.each([
    ["card stolen", undefined],
    ["Überweisung prüfen — 🛑", undefined],
    ["x".repeat(MAX_REASON), undefined],
    ["x".repeat(MAX_REASON + 1), `--reason must be at most ${MAX_REASON} characters`],
    ["   ", "--reason must say something (or leave it out)"],
    ["two\nlines", "--reason must be one line without control characters"],
    ["bell\u0007", "--reason must be one line without control characters"],
    ["csi\u009b", "--reason must be one line without control characters"],
  ] as const)("%j: %s", (reason, problem) => {
    expect(reasonProblem(reason)).toBe(problem);
  });
});
