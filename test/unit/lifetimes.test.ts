/**
 * The blockhash held for signing (src/engine/rails/solana/lifetimes.ts): a fetch started beside the
 * quote is what the signature takes; the last one fetched stands in, while young, only when
 * that fetch fails; a dropped one (its proof could never land) is never handed out again,
 * even by a fetch begun before the drop.
 */
import { describe, expect, it } from "vitest";
import { LIFETIME_MAX_AGE_MS, Lifetimes, young } from "../../src/engine/rails/solana/lifetimes.js";
import type { Lifetime } from "../../src/engine/rails/solana/chain.js";

describe("young", () => {
  it.each<[number, boolean]>([
    [0, true],
    [9_999, true],
    [10_000, false],
    [60_000, false],
    [-1, false], // a clock that went back: the age is unknown
  ])("at %i ms: %s", (age, ok) => {
    expect(young(age)).toBe(ok);
    expect(LIFETIME_MAX_AGE_MS).toBe(10_000);
  });
});

/** A source of blockhashes (the RPC's place) whose answers the test releases, or fails, one by one. */
function source() {
  let n = 0;
  const waiting: Array<{ ok: () => void; fail: () => void }> = [];
  return {
    asked: () => n,
    latest: (): Promise<Lifetime> => {
      const k = ++n;
      return new Promise((resolve, reject) =>
        waiting.push({
          ok: () => resolve({ blockhash: `bh${k}`, lastValidHeight: BigInt(k) }),
          fail: () => reject(new Error("rpc down")),
        }),
      );
    },
    settle: async (how: "ok" | "fail" = "ok") => {
      while (waiting.length > 0) waiting.shift()![how]();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe("Lifetimes", () => {
  it("the signature takes the fetch its call started beside the quote, one fetch at a time", async () => {
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => 0);
    l.warm();
    l.warm();
    expect(rpc.asked()).toBe(1);
    const taken = l.take(); // joins the fetch under way
    await rpc.settle();
    expect((await taken).blockhash).toBe("bh1");
    l.warm(); // the next call: a fresh fetch again, though the one held is young
    expect(rpc.asked()).toBe(2);
    const next = l.take();
    await rpc.settle();
    expect((await next).blockhash).toBe("bh2");
  });

  it("without a fetch under way, the one held is used while young, else a fetch is awaited", async () => {
    let clock = 0;
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => clock);
    const first = l.take();
    await rpc.settle();
    expect((await first).blockhash).toBe("bh1");
    clock += 9_000;
    expect((await l.take()).blockhash).toBe("bh1");
    expect(rpc.asked()).toBe(1);
    clock += 1_000;
    const late = l.take();
    expect(rpc.asked()).toBe(2);
    await rpc.settle();
    expect((await late).blockhash).toBe("bh2");
  });

  it("a failed fetch: the one held stands in while young; too old, the failure reaches the call", async () => {
    let clock = 0;
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => clock);
    const first = l.take();
    await rpc.settle();
    await first;
    l.warm();
    const standIn = l.take();
    await rpc.settle("fail");
    expect((await standIn).blockhash).toBe("bh1");
    clock += 10_000;
    l.warm();
    const none = expect(l.take()).rejects.toThrow("rpc down");
    await rpc.settle("fail");
    await none;
  });

  it("a dropped one is not handed out again, nor set by a fetch begun before the drop", async () => {
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => 0);
    const first = l.take();
    await rpc.settle();
    await first;
    l.warm(); // begun before the drop: its answer may carry the blockhash that failed
    l.drop();
    const after = l.take();
    expect(rpc.asked()).toBe(3);
    await rpc.settle();
    expect((await after).blockhash).toBe("bh3");
    expect((await l.take()).blockhash).toBe("bh3");
  });
});
