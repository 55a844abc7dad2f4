/** paid_fetch's tool result, as a table: how each kind of body reaches the agent. */
import { describe, expect, it } from "vitest";
import type { FetchOutcome } from "../../src/engine/index.js";
import type { FetchResult } from "../../src/engine/model/types.js";
import { fetchAnswer } from "../../src/mcp/tools/paid-fetch.js";

const result = (o: Partial<FetchResult>): FetchResult => ({
  intentId: "int_abc",
  intentKey: "key-abcdefgh",
  status: 200,
  headers: {},
  contentType: "application/json",
  size: 0,
  payment: {
    amount: "0.01",
    currency: "USDC",
    payTo: "Payee",
    transaction: "tx",
    network: "solana:x",
    settlement: "claimed",
  },
  ...o,
});
const bytes = (s: string | Buffer) => new Uint8Array(Buffer.from(s));
const answer = (o: FetchOutcome) => fetchAnswer(o, "call_x", false).structuredContent as Record<string, unknown>;

describe("paid_fetch's answer", () => {
  const rows: Array<[string, FetchOutcome, Record<string, unknown>, string[]]> = [
    [
      "JSON, parsed",
      { result: result({}), body: bytes('{"a":1}') },
      { body: { a: 1 } },
      ["bodyResource", "bodyTruncated"],
    ],
    [
      "short text, whole",
      { result: result({ contentType: "text/plain" }), body: bytes("hello") },
      { body: "hello" },
      ["bodyResource", "bodyTruncated"],
    ],
    [
      "long text, cut at 64 KiB, the whole kept as the purchase's body",
      { result: result({ contentType: "text/plain" }), body: bytes("x".repeat(70_000)) },
      { bodyTruncated: true, bodyResource: "paid-actions://purchases/int_abc/body" },
      [],
    ],
    [
      "binary, as a resource only",
      { result: result({ contentType: "image/png" }), body: bytes(Buffer.from([0x89, 0x50, 0x4e, 0x47])) },
      { body: null, bodyResource: "paid-actions://purchases/int_abc/body" },
      ["bodyTruncated"],
    ],
    [
      "binary and unpaid: no purchase to keep it, left out",
      { result: result({ contentType: "image/png", intentId: null, payment: null }), body: bytes("\x89PNG") },
      { body: null, bodyOmitted: "binary", payment: null },
      ["bodyResource", "purchase"],
    ],
    ["empty", { result: result({ contentType: null }), body: new Uint8Array() }, { body: null }, ["bodyResource"]],
  ];
  for (const [name, outcome, expected, absent] of rows)
    it(name, () => {
      const a = answer(outcome);
      expect(a).toMatchObject(expected);
      for (const k of absent) expect(a, k).not.toHaveProperty(k);
      if (a.bodyTruncated) expect((a.body as string).length).toBe(64 * 1024);
    });

  it("names the purchase and the transcript", () => {
    expect(answer({ result: result({}), body: bytes("{}") })).toMatchObject({
      purchase: "paid-actions://purchases/int_abc",
      transcript: "paid-actions://transcripts/call_x",
    });
  });
});
