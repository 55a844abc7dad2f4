/**
 * The Solana rail's chain port: how it learns about money — through the user's own Solana
 * RPC, never through the service. A few standard reads (the latest blockhash, the
 * finalized block height, blockhash validity, an account's signature history, one
 * transaction) behind a narrow interface, so the rules are tested with a scripted chain as
 * well as against the sandbox's RPC (rpc.ts is the real one).
 *
 * Here too, the fate of a proof: it landed, it can never land, or nobody can tell yet
 * (rules.ts), read in the order that makes "never" sound.
 */
import type { ChainTx } from "../../chain/chain.js";
import { findByMemoResuming, type MemoScans } from "./memo-resume.js";
import type { ScanLimits } from "./memo-scan.js";
import { fateRuling, vouchedLastValidHeight, type FateRuling } from "./rules.js";

export type { ChainTransfer, ChainTx, ExpectedPayment } from "../../chain/chain.js";
export { refundInflow, verifyPayment } from "../../chain/chain.js";
export { DEFAULT_SCAN, findByMemo, type MemoSearch, type ScanLimits } from "./memo-scan.js";

/** One entry of an address's history (getSignaturesForAddress), newest first. */
export interface SignatureEntry {
  signature: string;
  slot: bigint;
  blockTime: number | null;
  failed: boolean;
  /** The node's memo summary ("[n] text; …"); null: no memo; undefined: the node did not say. */
  memo: string | null | undefined;
}

/** The lifetime a payment is signed with: a blockhash our RPC gave, and the last block height at which it can land. */
export interface Lifetime {
  blockhash: string;
  lastValidHeight: bigint;
}

/** An SPL Token account as the chain shows it: whose, how much, and who may spend how much of it. */
export interface TokenAccountState {
  owner: string;
  mint: string;
  amount: bigint;
  /** The account's delegate, if it has one. */
  delegate: string | null;
  /** What the delegate may still move (0 without a delegate). */
  delegatedAmount: bigint;
}

export interface ChainPort {
  /** The blockhash to sign with now, at `finalized`, with its last valid block height. Throws when the RPC does not answer. */
  latestBlockhash(): Promise<Lifetime>;
  /** The finalized block height. Throws when the RPC does not answer. */
  finalizedHeight(): Promise<bigint>;
  /** A token account (jsonParsed, at `confirmed`); null when there is none. Throws when the RPC does not answer. */
  tokenAccount(address: string): Promise<TokenAccountState | null>;
  /** Whether a transaction signed against this blockhash could land now (at `finalized`); undefined when the RPC did not say. */
  blockhashValid(blockhash: string): Promise<boolean | undefined>;
  /** The address's history, newest first. Throws when the RPC does not answer. */
  signaturesFor(address: string, opts: { before?: string; until?: string; limit: number }): Promise<SignatureEntry[]>;
  /** A transaction by signature; null when the node does not have it. Throws when the RPC does not answer. */
  transaction(signature: string): Promise<ChainTx | null>;
  /**
   * Several transactions in one round trip (a JSON-RPC batch), in order: each one, null when
   * the node does not have it, or the Error it answered for that one. Throws when the batch
   * got no usable answer (a node that refuses batches): read them one by one then.
   */
  transactions?(signatures: readonly string[]): Promise<(ChainTx | null | Error)[]>;
  /**
   * A transaction with its wire bytes (base64) and its signature status, for a receipt; null
   * when the node does not have it. Throws when the RPC does not answer. (A scripted chain
   * may leave it out: a receipt then says the chain could not be read.)
   */
  transactionEvidence?(signature: string): Promise<RawEvidence | null>;
}

/** A landed transaction as a receipt carries it: decoded, its wire bytes, and how final it is. */
export interface RawEvidence {
  tx: ChainTx;
  /** The wire transaction (signatures and message), base64, as getTransaction gave it. */
  wire: string;
  /** getSignatureStatuses' confirmationStatus (processed, confirmed, finalized); null: not said. */
  finality: string | null;
}

export type Fate = { kind: "landed"; tx: ChainTx } | { kind: "never" } | { kind: "unknown"; why: string };

export interface ProofLife {
  walletAta: string;
  memo: string;
  blockhash: string | null;
  /** As journaled when the proof was signed (null: our RPC never vouched for its blockhash). */
  lastValidHeight: bigint | null;
  signedAt: number;
}

/**
 * The fate of a proof that left the process, by the rule in rules.ts. Our finalized
 * block height is read first: once it is past the proof's last valid height nothing signed
 * with its blockhash can land, so a history read afterwards that holds no transfer with the
 * memo proves it never will. Read the other way round, a transfer could land between the
 * two reads. A proof journaled without a last valid height gets one when our RPC calls its
 * blockhash valid now (`vouched`, for the caller to record); until then its fate is unknown.
 * With `scans`, a history too long for one pass is read on over later passes once the
 * proof can no longer land (memo-resume.ts); the height judged is then the one read before
 * the first of them.
 */
export async function proofFate(
  chain: ChainPort,
  p: ProofLife,
  limits?: ScanLimits,
  scans?: MemoScans,
): Promise<Fate & { vouched?: bigint }> {
  const height = () => chain.finalizedHeight().catch(() => undefined);
  let lastValidHeight = p.lastValidHeight;
  let vouched: bigint | undefined;
  let finalizedHeight: bigint | undefined;
  if (lastValidHeight === null && p.blockhash) {
    const valid = await chain.blockhashValid(p.blockhash).catch(() => undefined);
    if (valid) {
      finalizedHeight = await height();
      lastValidHeight = vouchedLastValidHeight(valid, finalizedHeight);
      if (lastValidHeight !== null) vouched = lastValidHeight;
    }
  }
  finalizedHeight ??= await height();
  const { search, finalizedHeight: heightBefore } = await findByMemoResuming(
    chain,
    scans,
    { scope: "fate", walletAta: p.walletAta, memo: p.memo, sinceMs: p.signedAt, lastValidHeight, finalizedHeight },
    limits,
  );
  const ruling = fateRuling({
    lastValidHeight,
    finalizedHeight: heightBefore,
    memo: search.kind,
    ...(search.kind === "unknown" ? { memoWhy: search.why } : {}),
  });
  // The ruling is "landed" exactly when the memo was found.
  const fate: Fate =
    search.kind === "found" ? { kind: "landed", tx: search.tx } : (ruling as Exclude<FateRuling, { kind: "landed" }>);
  return vouched === undefined ? fate : { ...fate, vouched };
}
