import { describe, expect, it } from "vitest";
import { nextInterval, scheduleOnly } from "../../src/engine/model/polling.js";
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
