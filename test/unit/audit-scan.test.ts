/**
 * The audit's scan of the wallet's token account (src/engine/rails/solana/history.ts) over a scripted
 * chain port: paging back to a time, retrying a flaky node, and refusing a history it cannot
 * read whole. No network.
 */
import { describe, expect, it } from "vitest";
import { ChainScanError, scanWalletHistory } from "../../src/engine/rails/solana/history.js";
import type { ChainPort, SignatureEntry } from "../../src/engine/rails/solana/chain.js";
import { ATA, MIN, payTx, sec, T0 } from "./audit.fixtures.js";

/** A history of `n` entries, newest first, one per minute back from `newest`. */
function history(n: number, newest: number, failedEvery = 0): SignatureEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    signature: `sig${i}`,
    slot: BigInt(10_000 - i),
    blockTime: sec(newest - i * MIN),
    failed: failedEvery > 0 && i % failedEvery === failedEvery - 1,
    memo: null,
  }));
}

/** A scripted chain port: pages `entries` as a node would; records each call; throws on what it was not told to expect. */
function scripted(
  entries: SignatureEntry[],
  o: { failSignatures?: number; nullTimes?: number; repeatPage?: boolean } = {},
) {
  const calls: string[] = [];
  let failures = o.failSignatures ?? 0;
  const nulls = new Map<string, number>();
  const port: ChainPort = {
    latestBlockhash: () => {
      throw new Error("unexpected latestBlockhash");
    },
    finalizedHeight: () => {
      throw new Error("unexpected finalizedHeight");
    },
    tokenAccount: () => {
      throw new Error("unexpected tokenAccount");
    },
    blockhashValid: () => {
      throw new Error("unexpected blockhashValid");
    },
    signaturesFor: async (address, { before, until, limit }) => {
      calls.push(`sigs ${before ?? "-"} ${limit}`);
      if (address !== ATA) throw new Error(`unexpected address ${address}`);
      if (until) throw new Error("unexpected until");
      if (failures > 0) {
        failures--;
        throw new Error("HTTP 503");
      }
      const start = before && !o.repeatPage ? entries.findIndex((e) => e.signature === before) + 1 : 0;
      return entries.slice(start, start + limit);
    },
    transaction: async (sig) => {
      calls.push(`tx ${sig}`);
      const entry = entries.find((e) => e.signature === sig);
      if (!entry) throw new Error(`unexpected transaction ${sig}`);
      const seen = nulls.get(sig) ?? 0;
      if (seen < (o.nullTimes ?? 0)) {
        nulls.set(sig, seen + 1);
        return null;
      }
      return { ...payTx(sig, null, 1n), slot: entry.slot, blockTime: entry.blockTime };
    },
  };
  return { port, calls };
}

const noSleep = async () => undefined;

describe("scanWalletHistory: the token account's history back to a time", () => {
  it("pages with `before` until it reaches an entry older than `from`, and reads each successful transaction", async () => {
    const entries = history(300, T0, 10); // every 10th failed
    const from = T0 - 249.5 * MIN; // entries 0..249 are inside
    const { port, calls } = scripted(entries);
    const scan = await scanWalletHistory(port, ATA, from, { pageSize: 100, concurrency: 3, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toEqual(["sigs - 100", "sigs sig99 100", "sigs sig199 100"]);
    expect(scan.signatures).toBe(250);
    expect(scan.failed).toBe(25);
    expect(scan.transactionsRead).toBe(225);
    expect(scan.pages).toBe(3);
    expect(calls.filter((c) => c.startsWith("tx"))).toHaveLength(225);
    expect(calls).not.toContain("tx sig9"); // failed on chain: moved nothing, not fetched
    expect(scan.txs.map((t) => t.slot)).toEqual([...scan.txs.map((t) => t.slot)].sort((a, b) => (a < b ? -1 : 1))); // oldest first
  });

  it("returns the history oldest first, keeping the node's order within one slot", async () => {
    const entries = history(4, T0).map((e) => ({ ...e, slot: 7n }));
    const scan = await scanWalletHistory(scripted(entries).port, ATA, 0, { sleep: noSleep });
    expect(scan.txs.map((t) => t.signature)).toEqual(["sig3", "sig2", "sig1", "sig0"]);
  });

  it("stops at the end of a short history without asking for another page", async () => {
    const { port, calls } = scripted(history(42, T0));
    const scan = await scanWalletHistory(port, ATA, 0, { pageSize: 100, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toHaveLength(1);
    expect(scan.txs).toHaveLength(42);
  });

  it("an exactly full last page is followed by one more (empty) page", async () => {
    const { port, calls } = scripted(history(200, T0));
    const scan = await scanWalletHistory(port, ATA, 0, { pageSize: 100, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toEqual(["sigs - 100", "sigs sig99 100", "sigs sig199 100"]);
    expect(scan.signatures).toBe(200);
  });

  it("retries an RPC that fails once, and gives up with rpc_unavailable when it keeps failing", async () => {
    const once = scripted(history(5, T0), { failSignatures: 1 });
    expect((await scanWalletHistory(once.port, ATA, 0, { sleep: noSleep })).signatures).toBe(5);
    const down = scripted(history(5, T0), { failSignatures: 99 });
    const err = await scanWalletHistory(down.port, ATA, 0, { attempts: 3, sleep: noSleep }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainScanError);
    expect((err as ChainScanError).reason).toBe("rpc_unavailable");
    expect(down.calls).toHaveLength(3);
  });

  it("asks again for a transaction the node lists but does not serve yet; one never served is transaction_missing", async () => {
    const lagging = scripted(history(3, T0), { nullTimes: 1 });
    expect((await scanWalletHistory(lagging.port, ATA, 0, { sleep: noSleep })).txs).toHaveLength(3);
    const pruned = scripted(history(3, T0), { nullTimes: 99 });
    await expect(scanWalletHistory(pruned.port, ATA, 0, { attempts: 2, sleep: noSleep })).rejects.toMatchObject({
      reason: "transaction_missing",
    });
  });

  it("refuses a history longer than its bound, and a node that repeats a page", async () => {
    await expect(
      scanWalletHistory(scripted(history(500, T0)).port, ATA, 0, { pageSize: 100, maxSignatures: 250, sleep: noSleep }),
    ).rejects.toMatchObject({ reason: "history_too_long" });
    await expect(
      scanWalletHistory(scripted(history(500, T0), { repeatPage: true }).port, ATA, 0, {
        pageSize: 100,
        sleep: noSleep,
      }),
    ).rejects.toMatchObject({ reason: "rpc_unavailable" });
  });
});
