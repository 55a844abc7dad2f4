/** rails/solana/rpc-transport.ts: what a request's params become on the wire. */
import { describe, expect, it } from "vitest";
import { jsonOfParams } from "../../src/engine/rails/solana/rpc-transport.js";

describe("jsonOfParams", () => {
  it.each<[string, unknown, string]>([
    [
      "a request without bigints, as JSON.stringify lays it out",
      { method: "getBlockHeight", params: [{ commitment: "finalized" }] },
      '{"method":"getBlockHeight","params":[{"commitment":"finalized"}]}',
    ],
    ["a safe bigint as a JSON number", { params: [{ minContextSlot: 123n }] }, '{"params":[{"minContextSlot":123}]}'],
    ["the largest safe integer exactly", { n: BigInt(Number.MAX_SAFE_INTEGER) }, `{"n":${Number.MAX_SAFE_INTEGER}}`],
    ["the smallest safe integer exactly", { n: BigInt(Number.MIN_SAFE_INTEGER) }, `{"n":${Number.MIN_SAFE_INTEGER}}`],
  ])("%s", (_name, payload, json) => {
    expect(jsonOfParams(payload)).toBe(json);
  });

  it.each([BigInt(Number.MAX_SAFE_INTEGER) + 1n, BigInt(Number.MIN_SAFE_INTEGER) - 1n, 2n ** 64n - 1n])(
    "%s, past what a JSON number holds exactly, is refused rather than rounded",
    (n) => {
      expect(() => jsonOfParams({ params: [n] })).toThrow(/past what a JSON number holds exactly/);
    },
  );
});
