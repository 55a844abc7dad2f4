/**
 * The landed / never / unknown rule and the watch on payments found unable to land
 * (src/engine/rails/solana/rules.ts), as tables over every combination of the facts our own RPC
 * can establish. Pure: no chain, no clock.
 */
import { describe, expect, it } from "vitest";
import {
  BLOCKHASH_LIFETIME_BLOCKS,
  fateRuling,
  UNVOUCHED_WATCH_MS,
  vouchedLastValidHeight,
  WATCH_MARGIN_BLOCKS,
  watchRuling,
  type FateFacts,
  type MemoSeen,
} from "../../src/engine/rails/solana/rules.js";

const LAST_VALID = 1_000n;

/** Our RPC's finalized height relative to the recorded last valid height. */
type Height = "below" | "at" | "past" | "unknown";
const HEIGHTS: Record<Height, bigint | undefined> = {
  below: LAST_VALID - 1n,
  at: LAST_VALID,
  past: LAST_VALID + 1n,
  unknown: undefined,
};
const MEMOS: MemoSeen[] = ["found", "absent", "unknown"];

/**
 * Every row: (blockhash vouched for by our RPC at signing?, finalized height vs last valid
 * height, memo in the history since signing) -> the fate.
 */
const FATE_TABLE: Array<[vouched: boolean, height: Height, memo: MemoSeen, fate: "landed" | "never" | "unknown"]> = [
  [true, "below", "found", "landed"],
  [true, "below", "absent", "unknown"],
  [true, "below", "unknown", "unknown"],
  [true, "at", "found", "landed"],
  [true, "at", "absent", "unknown"],
  [true, "at", "unknown", "unknown"],
  [true, "past", "found", "landed"],
  [true, "past", "absent", "never"],
  [true, "past", "unknown", "unknown"],
  [true, "unknown", "found", "landed"],
  [true, "unknown", "absent", "unknown"],
  [true, "unknown", "unknown", "unknown"],
  // Not vouched for: a blockhash a service named may not be valid *yet*. Never "never".
  [false, "below", "found", "landed"],
  [false, "below", "absent", "unknown"],
  [false, "below", "unknown", "unknown"],
  [false, "at", "found", "landed"],
  [false, "at", "absent", "unknown"],
  [false, "at", "unknown", "unknown"],
  [false, "past", "found", "landed"],
  [false, "past", "absent", "unknown"],
  [false, "past", "unknown", "unknown"],
  [false, "unknown", "found", "landed"],
  [false, "unknown", "absent", "unknown"],
  [false, "unknown", "unknown", "unknown"],
];

const facts = (vouched: boolean, height: Height, memo: MemoSeen): FateFacts => ({
  lastValidHeight: vouched ? LAST_VALID : null,
  finalizedHeight: HEIGHTS[height],
  memo,
});

describe("the fate rule: landed, never, or unknown", () => {
  it("the table covers every combination once", () => {
    const keys = new Set(FATE_TABLE.map(([v, h, m]) => `${v}/${h}/${m}`));
    expect(keys.size).toBe(2 * Object.keys(HEIGHTS).length * MEMOS.length);
    expect(FATE_TABLE).toHaveLength(keys.size);
  });

  it.each(FATE_TABLE)("vouched %s, height %s the last valid one, memo %s: %s", (vouched, height, memo, fate) => {
    expect(fateRuling(facts(vouched, height, memo)).kind).toBe(fate);
  });

  it("says why it cannot tell, in words a person can act on", () => {
    expect(fateRuling(facts(false, "past", "absent"))).toEqual({
      kind: "unknown",
      why: expect.stringContaining("never vouched for the blockhash"),
    });
    expect(fateRuling(facts(true, "unknown", "absent"))).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not say its finalized block height"),
    });
    expect(fateRuling(facts(true, "at", "absent"))).toEqual({
      kind: "unknown",
      why: expect.stringContaining("valid up to block height 1000 and our Solana RPC is at 1000"),
    });
    expect(fateRuling({ ...facts(true, "past", "unknown"), memoWhy: "the Solana RPC did not answer (boom)" })).toEqual({
      kind: "unknown",
      why: "the Solana RPC did not answer (boom)",
    });
  });
});

describe("a blockhash our RPC calls valid now vouches for a last valid height", () => {
  it.each<[boolean | undefined, bigint | undefined, bigint | null]>([
    [true, 500n, 500n + BLOCKHASH_LIFETIME_BLOCKS],
    [true, undefined, null],
    [false, 500n, null],
    [false, undefined, null],
    [undefined, 500n, null],
    [undefined, undefined, null],
  ])("valid %s, height read after %s: %s", (valid, height, bound) => {
    expect(vouchedLastValidHeight(valid, height)).toBe(bound);
  });
});

describe("the watch on a payment found unable to land", () => {
  const SIGNED = 1_000_000;
  const DONE_AT = LAST_VALID + WATCH_MARGIN_BLOCKS;
  /** Finalized heights around the end of the watch. */
  const WATCH_HEIGHTS = { "within the margin": DONE_AT, "past the margin": DONE_AT + 1n, unknown: undefined } as Record<
    string,
    bigint | undefined
  >;

  type Age = "fresh" | "a day old";
  const TABLE: Array<
    [
      vouched: boolean,
      height: keyof typeof WATCH_HEIGHTS,
      memo: MemoSeen,
      age: Age,
      ruling: "landed" | "watch" | "done",
    ]
  > = [
    [true, "within the margin", "found", "fresh", "landed"],
    [true, "within the margin", "found", "a day old", "landed"],
    [true, "within the margin", "absent", "fresh", "watch"],
    [true, "within the margin", "absent", "a day old", "watch"],
    [true, "within the margin", "unknown", "fresh", "watch"],
    [true, "within the margin", "unknown", "a day old", "watch"],
    [true, "past the margin", "found", "fresh", "landed"],
    [true, "past the margin", "found", "a day old", "landed"],
    [true, "past the margin", "absent", "fresh", "done"],
    [true, "past the margin", "absent", "a day old", "done"],
    [true, "past the margin", "unknown", "fresh", "watch"],
    [true, "past the margin", "unknown", "a day old", "watch"],
    [true, "unknown", "found", "fresh", "landed"],
    [true, "unknown", "found", "a day old", "landed"],
    [true, "unknown", "absent", "fresh", "watch"],
    [true, "unknown", "absent", "a day old", "watch"],
    [true, "unknown", "unknown", "fresh", "watch"],
    [true, "unknown", "unknown", "a day old", "watch"],
    // Not vouched for (journaled before heights were recorded): watched for a day after signing.
    [false, "within the margin", "found", "fresh", "landed"],
    [false, "within the margin", "found", "a day old", "landed"],
    [false, "within the margin", "absent", "fresh", "watch"],
    [false, "within the margin", "absent", "a day old", "done"],
    [false, "within the margin", "unknown", "fresh", "watch"],
    [false, "within the margin", "unknown", "a day old", "done"],
    [false, "past the margin", "found", "fresh", "landed"],
    [false, "past the margin", "found", "a day old", "landed"],
    [false, "past the margin", "absent", "fresh", "watch"],
    [false, "past the margin", "absent", "a day old", "done"],
    [false, "past the margin", "unknown", "fresh", "watch"],
    [false, "past the margin", "unknown", "a day old", "done"],
    [false, "unknown", "found", "fresh", "landed"],
    [false, "unknown", "found", "a day old", "landed"],
    [false, "unknown", "absent", "fresh", "watch"],
    [false, "unknown", "absent", "a day old", "done"],
    [false, "unknown", "unknown", "fresh", "watch"],
    [false, "unknown", "unknown", "a day old", "done"],
  ];

  it("covers every combination once", () => {
    expect(new Set(TABLE.map(([v, h, m, a]) => `${v}/${h}/${m}/${a}`)).size).toBe(2 * 3 * 3 * 2);
    expect(TABLE).toHaveLength(2 * 3 * 3 * 2);
  });

  it.each(TABLE)("vouched %s, height %s, memo %s, signed %s ago: %s", (vouched, height, memo, age, ruling) => {
    const now = SIGNED + (age === "fresh" ? 60_000 : UNVOUCHED_WATCH_MS + 1);
    expect(
      watchRuling({
        lastValidHeight: vouched ? LAST_VALID : null,
        finalizedHeight: WATCH_HEIGHTS[height],
        memo,
        signedAt: SIGNED,
        now,
      }),
    ).toBe(ruling);
  });
});
