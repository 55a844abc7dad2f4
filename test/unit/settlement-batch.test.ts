/**
 * The Solana rail's settlement checks read together (verifySettlements): each claim read out
 * of one batch answers exactly as verifySettlement alone would; a node that refuses the batch
 * is reported (the reconciler then reads each alone), and a read the batch answered with an
 * error is asked alone. The chain
 * is scripted: no network.
 */
import { describe, expect, it } from "vitest";
import { associatedTokenAddress } from "../../src/domain/token.js";
import type { ChainPort, ChainTx } from "../../src/engine/rails/solana/chain.js";
import { createSolanaRail } from "../../src/engine/rails/solana/rail.js";
import type { JournaledProof, SettlementClaim } from "../../src/engine/rails/port.js";

// Real addresses (the ATAs are derived from them): the devnet USDC mint, and two program ids as owners.
const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
const PAYER = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const PAYEE = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
const SOURCE = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";

const proof = (quoteId: string, amount = 5_000n): JournaledProof => ({
  quoteId,
  amount,
  payee: PAYEE,
  payer: PAYER,
  mint: MINT,
  source: SOURCE,
  blockhash: null,
  lastValidHeight: null,
  signedAt: 0,
});

async function paymentOf(quoteId: string, signature: string, amount = 5_000n): Promise<ChainTx> {
  const payeeAta = await associatedTokenAddress(PAYEE, MINT);
  return {
    signature,
    slot: 10n,
    blockTime: 1,
    failed: false,
    feePayer: PAYER,
    transfers: [{ source: SOURCE, destination: payeeAta, authority: PAYER, mint: MINT, amount }],
    memos: [quoteId],
    balanceChanges: [],
  };
}

/** A chain that answers getTransaction alone and in batches as told, and counts both. */
function chainOf(txs: Map<string, ChainTx>, batch: "answers" | "refuses" | { failing: string }) {
  const seen = { single: [] as string[], batches: 0 };
  const chain = {
    async transaction(sig: string) {
      seen.single.push(sig);
      return txs.get(sig) ?? null;
    },
    async transactions(sigs: readonly string[]) {
      seen.batches++;
      if (batch === "refuses") throw new Error("batch requests are not allowed");
      return sigs.map((s) =>
        typeof batch === "object" && s === batch.failing ? new Error("rate limited") : (txs.get(s) ?? null),
      );
    },
  } as unknown as ChainPort;
  const rail = createSolanaRail({
    network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    mint: MINT,
    walletPath: () => undefined,
    rpcUrl: () => undefined,
    now: () => 0,
    chain: async () => chain,
  });
  return { rail, seen };
}

describe("settlements verified together on Solana", async () => {
  const txs = new Map<string, ChainTx>([
    ["sigA", await paymentOf("q_a", "sigA")],
    ["sigB", await paymentOf("q_b", "sigB", 4_000n)], // short of the price
    ["sigC", await paymentOf("q_c", "sigC")],
  ]);
  const claims: SettlementClaim[] = [
    { proof: proof("q_a"), claimedTx: "sigA" },
    { proof: proof("q_b"), claimedTx: "sigB" },
    { proof: proof("q_x"), claimedTx: "sigC" }, // another quote's transfer
    { proof: proof("q_d"), claimedTx: "sigMissing" },
    { proof: proof("q_e"), claimedTx: null },
  ];
  const alone = async () => {
    const { rail } = chainOf(txs, "answers");
    return Promise.all(claims.map((c) => rail.verifySettlement(c.proof, c.claimedTx)));
  };

  it("reads every named transaction in one batch, each answered as alone", async () => {
    const { rail, seen } = chainOf(txs, "answers");
    const together = await rail.verifySettlements!(claims);
    expect(together).toEqual(await alone());
    expect(together.map((r) => r.kind)).toEqual(["ours", "ours", "not_ours", "not_ours", "not_ours"]);
    expect(together[1]).toMatchObject({ kind: "ours", problems: [expect.stringMatching(/amount|4000|5000/)] });
    expect(seen).toEqual({ single: [], batches: 1 });
  });

  it("a node that refuses batches: thrown, for the caller to read them alone at its own pace", async () => {
    const { rail, seen } = chainOf(txs, "refuses");
    await expect(rail.verifySettlements!(claims)).rejects.toThrow("batch requests are not allowed");
    expect(seen).toEqual({ single: [], batches: 1 });
  });

  it("a read the batch answered with an error is asked alone", async () => {
    const { rail, seen } = chainOf(txs, { failing: "sigB" });
    expect(await rail.verifySettlements!(claims)).toEqual(await alone());
    expect(seen).toEqual({ single: ["sigB"], batches: 1 });
  });
});
