/**
 * findByMemo (src/engine/rails/solana/chain.ts) over a scripted chain port: paging the wallet's
 * history back to the signing time for the transfer carrying a quote's memo, fetching only
 * what may carry it, and answering "unknown" — never "absent" — when the node cannot tell.
 */
import { afterEach, describe, expect, it } from "vitest";
import { findByMemo } from "../../src/engine/rails/solana/chain.js";
import {
  entry,
  expectNoSurprises,
  filler,
  first,
  LIMITS,
  MEMO,
  payment,
  scripted,
  SIGNED_AT,
  WALLET_ATA,
} from "./chain.fixtures.js";

afterEach(expectNoSurprises);

describe("findByMemo", () => {
  it("finds the transfer on the first page", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([entry("Other", { memos: ["q_other"] }), entry("Target", { memos: [MEMO], tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("pages back with `before` = the last signature of the previous page", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([
      ...filler("a", 3),
      ...filler("b", 3),
      entry("Target", { memos: [MEMO], tx }),
      ...filler("c", 3),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), first("a2"), first("b2"), "transaction Target"]);
  });

  it("skips a failed entry carrying the memo without fetching it", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([
      entry("FailedTry", { memos: [MEMO], failed: true }),
      entry("Target", { memos: [MEMO], tx }),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("skips entries with no memo (null) and with other memos without fetching them", async () => {
    const chain = scripted([entry("NoMemo1"), entry("Other", { memos: ["q_other"] })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first()]);
  });

  it("fetches an entry whose memo the node did not report (undefined)", async () => {
    const tx = payment({}, "Silent");
    const chain = scripted([entry("Silent", { undefinedMemo: true, tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Silent"]);
  });

  it("fetches an unreported memo and goes on when the transaction does not carry it", async () => {
    const chain = scripted([entry("Silent", { undefinedMemo: true, tx: payment({ memos: ["q_other"] }, "Silent") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), "transaction Silent"]);
  });

  it("fetches a summary that merely contains the memo, and needs the exact memo in the transaction", async () => {
    const chain = scripted([entry("Longer", { memos: [`${MEMO}2`], tx: payment({ memos: [`${MEMO}2`] }, "Longer") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), "transaction Longer"]);
  });

  it("skips a transaction the node reports failed even when the history entry did not", async () => {
    const chain = scripted([entry("Flaky", { memos: [MEMO], tx: payment({ failed: true }, "Flaky") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
  });

  it("is unknown when a listed entry that may carry the memo cannot be read from the node", async () => {
    // The history says a successful transaction carries our memo, but getTransaction answers
    // null (a lagging node behind a load balancer, a pruned ledger): it may be our payment, so
    // the search cannot end "absent" (which proofFate would turn into "never").
    const chain = scripted([entry("Unreadable", { memos: [MEMO], tx: null })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({
      kind: "unknown",
      why: expect.stringContaining("Unreadable"),
    });
  });

  it("is absent when the history ends (a short page)", async () => {
    const chain = scripted(filler("a", 2));
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first()]);
  });

  it("is absent when a full page is followed by an empty one", async () => {
    const chain = scripted(filler("a", 3));
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), first("a2")]);
  });

  it("is absent on an empty history", async () => {
    const chain = scripted([]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
  });

  it("is absent on reaching entries older than sinceMs - skewMs, without looking at them", async () => {
    const skewS = LIMITS.skewMs / 1000;
    const chain = scripted([
      ...filler("a", 3),
      // Just inside the skew window: still looked at.
      entry("JustInside", { secondsAfterSigning: -skewS, memos: ["q_other"] }),
      // Older than the window: the scan stops here, even though this one carries the memo.
      entry("TooOld", { secondsAfterSigning: -skewS - 1, memos: [MEMO] }),
      ...filler("z", 5, -skewS - 100),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), first("a2")]);
  });

  it("does not stop at an entry without a block time", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([entry("NoTime", { blockTime: null }), entry("Target", { memos: [MEMO], tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
  });

  it("is unknown when maxPages is exhausted before the history reaches the signing time", async () => {
    const chain = scripted(filler("a", 3 * LIMITS.maxPages + 1));
    const r = await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS);
    expect(r).toEqual({ kind: "unknown", why: expect.stringContaining("longer than 12 transactions") });
    expect(chain.calls).toEqual([first(), first("a2"), first("a5"), first("a8")]);
  });

  it("is unknown when the RPC does not answer the history", async () => {
    const chain = scripted([entry("Target", { memos: [MEMO], tx: payment({}, "Target") })]);
    chain.down.add("signaturesFor");
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not answer (fetch failed"),
    });
  });

  it("is unknown when the RPC does not answer a transaction", async () => {
    const chain = scripted([entry("Target", { memos: [MEMO], tx: payment({}, "Target") })]);
    chain.down.add("transaction");
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({ kind: "unknown" });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("is unknown when the outage starts on a later page", async () => {
    const chain = scripted(filler("a", 5));
    const original = chain.signaturesFor.bind(chain);
    let pages = 0;
    chain.signaturesFor = async (addr, opts) => {
      if (++pages === 2) chain.down.add("signaturesFor");
      return original(addr, opts);
    };
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({ kind: "unknown" });
  });

  it("uses the default limits when none are given", async () => {
    const chain = scripted([]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([`signaturesFor ${WALLET_ATA} before=- limit=100`]);
  });
});
