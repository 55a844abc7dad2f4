/**
 * A memo search over a history longer than one pass (src/engine/rails/solana/memo-resume.ts),
 * through proofFate and findByMemoResuming over a scripted chain port: it goes on over
 * passes only once our finalized height, read first, is past the proof's last valid height;
 * it ends "never" or "landed" within ⌈length / 2,000⌉ passes; it carries what makes
 * "absent" impossible; and it forgets the cursor once decided.
 */
import { afterEach, describe, expect, it } from "vitest";
import { proofFate } from "../../src/engine/rails/solana/chain.js";
import { mayResumeScan } from "../../src/engine/rails/solana/rules.js";
import { findByMemoResuming, MemoScans, scanKey, type SavedScan } from "../../src/engine/rails/solana/memo-resume.js";
import {
  entry,
  expectNoSurprises,
  filler,
  MEMO,
  payment,
  scripted,
  SIGNED_AT,
  SIGNED_S,
  WALLET_ATA,
  type Scripted,
  type ScriptedChain,
} from "./chain.fixtures.js";

afterEach(expectNoSurprises);

const LAST_VALID = 1_000n;
const PAST = LAST_VALID + 1n;
const PER_PASS = 2_000; // DEFAULT_SCAN: 20 pages of 100
const page = (before = "-") => `signaturesFor ${WALLET_ATA} before=${before} limit=100`;
const proof = (lastValidHeight: bigint | null = LAST_VALID) => ({
  walletAta: WALLET_ATA,
  memo: MEMO,
  blockhash: "Blockhash1",
  lastValidHeight,
  signedAt: SIGNED_AT,
});
const FATE = scanKey("fate", WALLET_ATA, MEMO);

/** `n` unrelated entries since signing, then the entries from before it (where every search stops). */
function busy(n: number, at: Record<number, Scripted> = {}): Scripted[] {
  const since = filler("a", n).map((h, i) => at[i] ?? h);
  return [...since, ...filler("old", 3, -3_600)];
}

/** A pass as the reconciler makes it: our height is `height`, then proofFate. */
async function pass(chain: ScriptedChain, scans: MemoScans, height: bigint | undefined) {
  chain.height = height;
  chain.calls.length = 0;
  if (height === undefined) chain.down.add("finalizedHeight");
  else chain.down.delete("finalizedHeight");
  return proofFate(chain, proof(), undefined, scans);
}

describe("a memo search over passes", () => {
  it("4,500 entries since signing, past the last valid height: never, within 3 passes, each going on from the last", async () => {
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    expect(await pass(chain, scans, PAST)).toEqual({
      kind: "unknown",
      why: expect.stringMatching(/being read over several passes: 2000 transactions read in 1 pass, back to 2026-/),
    });
    expect(chain.calls[1]).toBe(page());
    expect(await pass(chain, scans, PAST + 5n)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("4000 transactions read in 2 passes"),
    });
    expect(chain.calls.slice(0, 2)).toEqual(["finalizedHeight", page(`a${PER_PASS - 1}`)]);
    expect(await pass(chain, scans, PAST + 10n)).toEqual({ kind: "never" });
    expect(chain.calls.slice(0, 2)).toEqual(["finalizedHeight", page(`a${2 * PER_PASS - 1}`)]);
    expect(scans.size).toBe(0);
  });

  it("the transfer at entry 4,200 is found on the third pass: landed", async () => {
    const tx = payment({}, "Target");
    const chain = scripted(busy(4_500, { 4_200: entry("Target", { memos: [MEMO], tx }) }));
    const scans = new MemoScans();
    expect(await pass(chain, scans, PAST)).toMatchObject({ kind: "unknown" });
    expect(await pass(chain, scans, PAST)).toMatchObject({ kind: "unknown" });
    expect(await pass(chain, scans, PAST)).toEqual({ kind: "landed", tx });
    expect(chain.calls.at(-1)).toBe("transaction Target");
    expect(scans.size).toBe(0);
  });

  it("without a pass made after the expiry, the same history is unknown every time, as before", async () => {
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    for (let i = 0; i < 4; i++) {
      expect(await pass(chain, scans, LAST_VALID)).toEqual({
        kind: "unknown",
        why: expect.stringMatching(/longer than 2000 transactions; it is read over several passes once .* past 1000/),
      });
      expect(chain.calls[1]).toBe(page());
    }
    expect(scans.size).toBe(0);
  });

  it("a pass made before the expiry saves no cursor: a landing newer than its top is still found", async () => {
    const tx = payment({}, "Late");
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    expect(await pass(chain, scans, LAST_VALID)).toMatchObject({ kind: "unknown" });
    expect(scans.size).toBe(0);
    // It lands at the last valid height, newer than everything the first pass read.
    chain.history.unshift(entry("Late", { memos: [MEMO], tx }));
    expect(await pass(chain, scans, PAST)).toEqual({ kind: "landed", tx });
    expect(chain.calls).toEqual(["finalizedHeight", page(), "transaction Late"]);
  });

  it("a pass whose height cannot be read starts from the newest entry, saves nothing and keeps the saved cursor", async () => {
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    await pass(chain, scans, PAST);
    const saved = scans.get(FATE);
    expect(saved).toMatchObject({ before: `a${PER_PASS - 1}`, read: PER_PASS, startHeight: PAST, passes: 1 });
    expect(await pass(chain, scans, undefined)).toMatchObject({ kind: "unknown" });
    expect(chain.calls[1]).toBe(page());
    expect(scans.get(FATE)).toEqual(saved);
    await pass(chain, scans, PAST);
    expect(chain.calls[1]).toBe(page(`a${PER_PASS - 1}`));
  });

  it("an unreadable candidate seen in pass 1 keeps pass 3 from saying absent; then the search starts again from the top", async () => {
    const chain = scripted(busy(4_500, { 50: entry("Unreadable", { memos: [MEMO], tx: null }) }));
    const scans = new MemoScans();
    await pass(chain, scans, PAST);
    expect(scans.get(FATE)?.unreadable).toBe("Unreadable");
    await pass(chain, scans, PAST);
    expect(chain.calls).not.toContain("transaction Unreadable");
    expect(await pass(chain, scans, PAST)).toEqual({ kind: "unknown", why: expect.stringContaining("Unreadable") });
    expect(scans.size).toBe(0);
    await pass(chain, scans, PAST);
    expect(chain.calls.slice(1, 2)).toEqual([page()]);
    expect(chain.calls).toContain("transaction Unreadable");
  });

  it("an RPC failure keeps the pages read before it: the next pass goes on from the last whole page", async () => {
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    await pass(chain, scans, PAST);
    const original = chain.signaturesFor.bind(chain);
    let pages = 0;
    chain.signaturesFor = async (addr, opts) => {
      if (++pages === 3) throw new Error("fetch failed: socket hang up");
      return original(addr, opts);
    };
    expect(await pass(chain, scans, PAST)).toEqual({
      kind: "unknown",
      why: expect.stringMatching(
        /did not answer \(fetch failed: socket hang up\); .*2200 transactions read in 2 passes/,
      ),
    });
    chain.signaturesFor = original;
    await pass(chain, scans, PAST);
    expect(chain.calls[1]).toBe(page("a2199"));
  });

  describe("when the history ends exactly where a pass stopped (an empty page after the cursor)", () => {
    // 2,000 entries: the first pass reads them all, stops at its limit and saves a2000-1.
    const exact = (cursorTx: Scripted["tx"]) =>
      scripted(busy(PER_PASS, { [PER_PASS - 1]: { ...entry(`a${PER_PASS - 1}`), tx: cursorTx } }).slice(0, PER_PASS));

    it("absent when our RPC still has the cursor's transaction: never", async () => {
      const chain = exact(payment({ memos: [] }, `a${PER_PASS - 1}`));
      const scans = new MemoScans();
      expect(await pass(chain, scans, PAST)).toMatchObject({ kind: "unknown" });
      expect(await pass(chain, scans, PAST)).toEqual({ kind: "never" });
      expect(chain.calls).toEqual(["finalizedHeight", page(`a${PER_PASS - 1}`), `transaction a${PER_PASS - 1}`]);
    });

    it("unknown when our RPC no longer has it (rolled back with its fork), and the next pass starts from the top", async () => {
      const chain = exact(null);
      const scans = new MemoScans();
      await pass(chain, scans, PAST);
      expect(await pass(chain, scans, PAST)).toEqual({
        kind: "unknown",
        why: expect.stringContaining(`no longer lists a${PER_PASS - 1}`),
      });
      expect(scans.size).toBe(0);
      await pass(chain, scans, PAST);
      expect(chain.calls[1]).toBe(page());
    });
  });

  it("a proof our RPC never vouched for is never read over passes", async () => {
    const chain = scripted(busy(4_500), { Blockhash1: false });
    const scans = new MemoScans();
    chain.height = PAST;
    for (let i = 0; i < 3; i++) {
      chain.calls.length = 0;
      expect(await proofFate(chain, proof(null), undefined, scans)).toMatchObject({ kind: "unknown" });
      expect(chain.calls[2]).toBe(page());
    }
    expect(scans.size).toBe(0);
  });
});

describe("findByMemoResuming", () => {
  const request = (finalizedHeight: bigint, scope: "fate" | "watch" = "watch") => ({
    scope,
    walletAta: WALLET_ATA,
    memo: MEMO,
    sinceMs: SIGNED_AT,
    lastValidHeight: LAST_VALID,
    finalizedHeight,
  });

  it("a finished search reports the height read before its first pass (the watch judges its margin by it)", async () => {
    const chain = scripted(busy(2_500));
    const scans = new MemoScans();
    expect((await findByMemoResuming(chain, scans, request(PAST))).finalizedHeight).toBe(PAST);
    expect(await findByMemoResuming(chain, scans, request(PAST + 500n))).toEqual({
      search: { kind: "absent" },
      finalizedHeight: PAST,
    });
  });

  it("the watch and a proof's fate each keep their own search", async () => {
    const chain = scripted(busy(4_500));
    const scans = new MemoScans();
    await findByMemoResuming(chain, scans, request(PAST, "fate"));
    chain.calls.length = 0;
    await findByMemoResuming(chain, scans, request(PAST, "watch"));
    expect(chain.calls[0]).toBe(page());
    expect(scans.size).toBe(2);
  });

  it("says where it is, in terms a person can check", async () => {
    const chain = scripted(busy(4_500));
    const r = await findByMemoResuming(chain, new MemoScans(), request(PAST));
    const reached = new Date((SIGNED_S + 30) * 1000).toISOString();
    const target = new Date(SIGNED_AT - 600_000).toISOString();
    expect(r.search).toEqual({
      kind: "unknown",
      why: `the wallet's history since signing is long and is being read over several passes: 2000 transactions read in 1 pass, back to ${reached}, of the history back to ${target}; the next pass goes on from there`,
    });
  });
});

describe("mayResumeScan", () => {
  it.each<[bigint | null, bigint | undefined, boolean]>([
    [LAST_VALID, PAST, true],
    [LAST_VALID, LAST_VALID, false],
    [LAST_VALID, LAST_VALID - 1n, false],
    [LAST_VALID, undefined, false],
    [null, PAST * 100n, false],
  ])("last valid %s, finalized height read first %s: %s", (lastValid, height, may) => {
    expect(mayResumeScan(lastValid, height)).toBe(may);
  });
});

describe("MemoScans", () => {
  const scan = (before: string): SavedScan => ({
    before,
    read: 1,
    oldestBlockTime: null,
    unreadable: undefined,
    startHeight: PAST,
    passes: 1,
  });

  it("forgets the oldest saved search past its capacity (which costs passes, not soundness)", () => {
    const scans = new MemoScans(2);
    scans.save("a", scan("1"));
    scans.save("b", scan("2"));
    scans.save("a", scan("3"));
    scans.save("c", scan("4"));
    expect([scans.get("a")?.before, scans.get("b"), scans.get("c")?.before]).toEqual(["3", undefined, "4"]);
  });
});
