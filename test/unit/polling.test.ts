import { describe, expect, it } from "vitest";
import { nextInterval, nextPassWait, scheduleOnly } from "../../src/engine/model/polling.js";
import type { IntentPatch, IntentRecord } from "../../src/engine/model/types.js";

const B = { minMs: 1_000, maxMs: 30_000 };

describe("the reconciler's backoff", () => {
  it.each<[number | null, boolean, number]>([
    [null, false, 2_000],
    [500, false, 1_000],
    [1_000, false, 2_000],
    [8_000, false, 16_000],
    [16_000, false, 30_000],
    [30_000, false, 30_000],
    [16_000, true, 1_000],
    [null, true, 1_000],
  ])("after %s ms (news: %s) waits %s ms", (last, reset, want) => {
    expect(nextInterval(last, B, reset)).toBe(want);
  });
});

/** The fields of a followed, executed intent that a poll's patch may name. */
const execution = {
  executionId: "exe_1",
  status: "pending" as const,
  action: "servers.provision",
  createdAt: "2026-01-01",
};
const intent = {
  intentId: "int_1",
  execution,
  execStatus: "pending",
  output: null,
  refund: null,
  refundState: "none",
  refundSeenAt: null,
  refundCredit: 0n,
  settlement: "verified",
  attention: null,
  nextPollAt: 1_000,
  pollIntervalMs: 1_000,
} as unknown as IntentRecord;
const schedule = { nextPollAt: 3_000, pollIntervalMs: 2_000 };

describe("a schedule-only patch (committed with its pass)", () => {
  it.each<[string, IntentPatch, boolean]>([
    ["the next poll alone", schedule, true],
    [
      "the same execution record, read again",
      { execution: { ...execution }, execStatus: "pending", output: null, ...schedule },
      true,
    ],
    ["the same refund state and credit", { refundState: "none", refundCredit: 0n, ...schedule }, true],
    [
      "a new status",
      { execution: { ...execution, status: "processing" }, execStatus: "processing", ...schedule },
      false,
    ],
    [
      "the same status, a record that changed",
      { execution: { ...execution, providerMeta: { step: 2 } }, ...schedule },
      false,
    ],
    ["an output", { output: { serverId: "svr_1" }, ...schedule }, false],
    ["a refund claim", { refundState: "pending", refundSeenAt: 2_000, ...schedule }, false],
    ["a credit", { refundCredit: 5n, ...schedule }, false],
    ["a settlement verified", { settlement: "mismatch", ...schedule }, false],
    ["a note for a person", { attention: "look", ...schedule }, false],
    ["the end of following", { nextPollAt: null }, false],
    ["a next poll without its interval", { nextPollAt: 3_000 }, false],
  ])("%s: %s", (_what, patch, only) => {
    expect(scheduleOnly(intent, patch)).toEqual(only ? schedule : undefined);
  });
});

describe("when the reconciler's next pass starts", () => {
  const base = { now: 10_000, maxMs: 30_000, gapMs: 250 };
  it.each<[string, { nextDue: number; at: number; full: boolean }, number]>([
    ["a row due later, the last pass long ago: at the row", { nextDue: 10_400, at: 0, full: false }, 400],
    ["a row due now, the last pass long ago: now", { nextDue: 10_000, at: 0, full: false }, 0],
    ["a row overdue: now", { nextDue: 9_000, at: 0, full: false }, 0],
    [
      "a row due now, a pass began 100 ms ago and took every due row: 150 ms on",
      { nextDue: 10_000, at: 9_900, full: false },
      150,
    ],
    [
      "a row due in 200 ms, a pass began 100 ms ago: 200 ms on (the later of the two)",
      { nextDue: 10_200, at: 9_900, full: false },
      200,
    ],
    ["a row due now, a pass began 100 ms ago and left rows due: now", { nextDue: 10_000, at: 9_900, full: true }, 0],
    ["a row due in an hour: the longest wait, then look again", { nextDue: 3_610_000, at: 0, full: false }, 30_000],
    ["the first pass ever: no gap to keep", { nextDue: 10_000, at: Number.NEGATIVE_INFINITY, full: false }, 0],
  ])("%s", (_name, o, wait) => {
    expect(nextPassWait({ ...base, nextDue: o.nextDue, last: { at: o.at, full: o.full } })).toBe(wait);
  });
});
