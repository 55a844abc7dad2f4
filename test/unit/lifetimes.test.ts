/**
 * The blockhash held for signing (src/engine/chain/lifetimes.ts): when the one held is used,
 * when a fresh one is fetched behind it, when a call must wait for one; and that a dropped
 * one (its proof could never land) is never handed out again, even by a fetch begun before.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_LIFETIME_TIMING, lifetimeUse, Lifetimes } from "../../src/engine/chain/lifetimes.js";
import type { Lifetime } from "../../src/engine/chain/chain.js";

describe("lifetimeUse", () => {
  it.each<[number, ReturnType<typeof lifetimeUse>]>([
    [0, "use"],
    [1_999, "use"],
    [2_000, "use-and-refresh"],
    [9_999, "use-and-refresh"],
    [10_000, "fetch"],
    [60_000, "fetch"],
    [-1, "fetch"], // a clock that went back: the age is unknown
  ])("at %i ms: %s", (age, use) => {
    expect(lifetimeUse(age, DEFAULT_LIFETIME_TIMING)).toBe(use);
  });
});

/** A source of blockhashes (the RPC's place) whose answers the test releases one by one. */
function source() {
  let n = 0;
  const waiting: Array<() => void> = [];
  return {
    asked: () => n,
    latest: (): Promise<Lifetime> => {
      const k = ++n;
      return new Promise((resolve) => waiting.push(() => resolve({ blockhash: `bh${k}`, lastValidHeight: BigInt(k) })));
    },
    answerAll: async () => {
      while (waiting.length > 0) waiting.shift()!();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe("Lifetimes", () => {
  it("a call waits for the first one; the next calls reuse it while young, fetching behind it once it ages", async () => {
    let clock = 1_000_000;
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => clock);
    const first = l.take();
    await rpc.answerAll();
    expect((await first).blockhash).toBe("bh1");
    clock += 1_000;
    expect((await l.take()).blockhash).toBe("bh1");
    expect(rpc.asked()).toBe(1);
    clock += 1_500; // 2.5 s old: used, and a fresh one fetched behind it
    expect((await l.take()).blockhash).toBe("bh1");
    expect(rpc.asked()).toBe(2);
    await rpc.answerAll();
    expect((await l.take()).blockhash).toBe("bh2");
    clock += 10_000; // too old to sign with: the call waits for a fresh one
    const late = l.take();
    expect(rpc.asked()).toBe(3);
    await rpc.answerAll();
    expect((await late).blockhash).toBe("bh3");
  });

  it("warm() fetches ahead unless the one held is fresh, one fetch at a time", async () => {
    let clock = 0;
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => clock);
    l.warm();
    l.warm();
    expect(rpc.asked()).toBe(1);
    const taken = l.take(); // joins the fetch under way
    expect(rpc.asked()).toBe(1);
    await rpc.answerAll();
    expect((await taken).blockhash).toBe("bh1");
    l.warm();
    expect(rpc.asked()).toBe(1);
    clock += 3_000;
    l.warm();
    expect(rpc.asked()).toBe(2);
  });

  it("a dropped one is not handed out again, nor set by a fetch begun before the drop", async () => {
    const rpc = source();
    const l = new Lifetimes(rpc.latest, () => 0);
    const first = l.take();
    await rpc.answerAll();
    await first;
    l.prefetch(); // begun before the drop: its answer may carry the blockhash that failed
    l.drop();
    const after = l.take();
    expect(rpc.asked()).toBe(3);
    await rpc.answerAll();
    expect((await after).blockhash).toBe("bh3");
    expect((await l.take()).blockhash).toBe("bh3");
  });

  it("a failed fetch reaches the call that waits for it, and the next call asks again", async () => {
    let fail = true;
    const l = new Lifetimes(
      async () => {
        if (fail) throw new Error("rpc down");
        return { blockhash: "ok", lastValidHeight: 1n };
      },
      () => 0,
    );
    await expect(l.take()).rejects.toThrow("rpc down");
    fail = false;
    expect((await l.take()).blockhash).toBe("ok");
  });
});
