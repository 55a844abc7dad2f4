/**
 * The sandbox's Solana JSON-RPC endpoint is rate-limited per client address, apart from the
 * API key's budget on /v1: past the burst, HTTP 429 with Retry-After and a JSON-RPC error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSolanaRpc } from "@solana/kit";
import { rawRpc, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
describe("the Solana JSON-RPC endpoint is rate-limited per client address", () => {
  let t: TestSandbox;
  const RATE = { perSecond: 2, burst: 4 };
  // The sandbox's clock runs ahead of the wall clock by `skew`: the bucket refills by moving
  // it on, not by waiting.
  let skew = 0;
  beforeAll(async () => {
    t = await startTestSandbox({ rateLimit: RATE, now: () => Date.now() + skew });
  });
  afterAll(() => t?.close());

  it("past the burst: HTTP 429 with Retry-After and a JSON-RPC error; a batch costs one per call; /v1 keeps its own budget; it recovers", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getSlot", params: [] });
    const first = await Promise.all(Array.from({ length: RATE.burst }, () => rawRpc(t.sb.rpcUrl, body)));
    expect(first.map((r) => r.status)).toEqual(Array(RATE.burst).fill(200));
    const res = await fetch(t.sb.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(res.status).toBe(429);
    const wait = Number(res.headers.get("retry-after"));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(await res.json()).toMatchObject({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32005, data: { retryAfter: wait } },
    });
    // A standard client sees the 429 as an error.
    await expect(createSolanaRpc(t.sb.rpcUrl).getSlot().send()).rejects.toThrow();
    // The API key's budget on /v1 is separate.
    expect((await t.call("GET", "/actions")).status).toBe(200);

    skew += (RATE.burst / RATE.perSecond) * 1000 + 100;
    const batch = JSON.stringify(
      Array.from({ length: RATE.burst }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "getSlot", params: [] })),
    );
    const full = await rawRpc(t.sb.rpcUrl, batch);
    expect(full.status).toBe(200);
    expect(full.json).toHaveLength(RATE.burst);
    expect((await rawRpc(t.sb.rpcUrl, body)).status).toBe(429);
  });
});
