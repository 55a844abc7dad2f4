/**
 * proofFate (src/engine/rails/solana/chain.ts) over a scripted chain port: a refused proof is
 * "never" only when our RPC's finalized height, read first, is past its last valid height and
 * the history since signing holds no transfer with its memo; "landed" when it holds one;
 * "unknown" whenever the node cannot tell.
 */
import { afterEach, describe, expect, it } from "vitest";
import { proofFate } from "../../src/engine/rails/solana/chain.js";
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
  type Scripted,
  type ScriptedChain,
} from "./chain.fixtures.js";

afterEach(expectNoSurprises);

describe("proofFate", () => {
  const BH = "Blockhash1";
  const LAST_VALID = 1_000n;
  const PAST = LAST_VALID + 1n;
  const proof = (o: { blockhash?: string | null; lastValidHeight?: bigint | null } = {}) => ({
    walletAta: WALLET_ATA,
    memo: MEMO,
    blockhash: o.blockhash === undefined ? BH : o.blockhash,
    lastValidHeight: o.lastValidHeight === undefined ? LAST_VALID : o.lastValidHeight,
    signedAt: SIGNED_AT,
  });
  const landedHistory = (): Scripted[] => [entry("Target", { memos: [MEMO], tx: payment({}, "Target") })];
  const absentHistory = (): Scripted[] => filler("a", 2);
  const at = (chain: ScriptedChain, height: bigint) => ((chain.height = height), chain);

  it.each<[string, bigint]>([
    ["still valid", LAST_VALID],
    ["past its last valid height", PAST],
  ])("landed when the history holds the transfer, whatever the height (%s)", async (_name, height) => {
    const chain = at(scripted(landedHistory()), height);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({ kind: "landed", tx: payment({}, "Target") });
  });

  it("landed when the height cannot be read but the history holds the transfer", async () => {
    const chain = at(scripted(landedHistory()), PAST);
    chain.down.add("finalizedHeight");
    expect(await proofFate(chain, proof(), LIMITS)).toMatchObject({ kind: "landed" });
  });

  it("never: our finalized height is past the last valid height and the history since signing holds no transfer with the memo", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({ kind: "never" });
  });

  it("reads the finalized height before the history, and asks nothing about the blockhash it vouched for at signing", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    await proofFate(chain, proof(), LIMITS);
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("sees a transfer that landed just before the height passed (the height was read first)", async () => {
    // Read the other way round, the history would be empty and the height past: "never".
    const chain = at(scripted([]), PAST);
    chain.afterHeight = () => chain.history.push(...landedHistory());
    expect(await proofFate(chain, proof(), LIMITS)).toMatchObject({ kind: "landed" });
  });

  it("unknown while the height has not passed the last valid one (at it, the transfer can still land)", async () => {
    const chain = at(scripted(absentHistory()), LAST_VALID);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("may still land"),
    });
  });

  it("unknown, not never, when the height cannot be read", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    chain.down.add("finalizedHeight");
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not say its finalized block height"),
    });
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("unknown when the history cannot be read, even past the last valid height", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    chain.down.add("signaturesFor");
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not answer"),
    });
  });

  it("unknown when the history is too long to read back to the signing, even past the last valid height", async () => {
    const chain = at(scripted(filler("a", 3 * LIMITS.maxPages + 1)), PAST);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("longer than"),
    });
  });

  it("a blockhash our RPC never vouched for is unknown, never never, even when the RPC calls it invalid (it may not be valid yet)", async () => {
    const chain = at(scripted(absentHistory(), { [BH]: false }), PAST * 100n);
    expect(await proofFate(chain, proof({ lastValidHeight: null }), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("never vouched"),
    });
    expect(chain.calls).toEqual([`blockhashValid ${BH}`, "finalizedHeight", first()]);
  });

  it("a blockhash our RPC calls valid now is vouched for: at most a lifetime past the height read after it", async () => {
    const chain = at(scripted(absentHistory(), { [BH]: true }), 500n);
    expect(await proofFate(chain, proof({ lastValidHeight: null }), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("valid up to block height 650"),
      vouched: 650n,
    });
    expect(chain.calls).toEqual([`blockhashValid ${BH}`, "finalizedHeight", first()]);
  });

  it("without a blockhash or a last valid height nothing is asked about it, and an empty history is unknown", async () => {
    const chain = at(scripted([]), PAST);
    expect(await proofFate(chain, proof({ blockhash: null, lastValidHeight: null }), LIMITS)).toMatchObject({
      kind: "unknown",
    });
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("without a blockhash, a transfer in the history still counts as landed", async () => {
    const chain = at(scripted(landedHistory()), PAST);
    expect(await proofFate(chain, proof({ blockhash: null, lastValidHeight: null }), LIMITS)).toMatchObject({
      kind: "landed",
    });
  });
});
