/**
 * The chain port: the only way the engine learns about money — through the user's own
 * Solana RPC, never through the service. A few standard reads (the latest blockhash, the
 * finalized block height, blockhash validity, an account's signature history, one
 * transaction) behind a narrow interface, so the rules here are tested with a scripted chain
 * as well as against the sandbox's RPC.
 *
 * The rules: what a landed payment must look like, what a refund credits, how the fate of a
 * proof is decided (it landed, or it can never land, or nobody can tell yet: rules.ts).
 */
import { carriesMemo, type ScanLimits } from "./memo-scan.js";
import { fateRuling, vouchedLastValidHeight, type FateRuling } from "./rules.js";
import { findByMemoResuming, type MemoScans } from "./scan-cursors.js";

export { carriesMemo, DEFAULT_SCAN, findByMemo, type MemoSearch, type ScanLimits } from "./memo-scan.js";

/** One token movement of a transaction's top-level instructions (Transfer / TransferChecked). */
export interface ChainTransfer {
  source: string;
  destination: string;
  authority: string;
  /** TransferChecked names its mint; a plain Transfer does not. */
  mint: string | null;
  amount: bigint;
}

/** A landed transaction as the engine needs it. */
export interface ChainTx {
  signature: string;
  slot: bigint;
  blockTime: number | null;
  /** It failed on chain: it moved nothing. */
  failed: boolean;
  feePayer: string | null;
  transfers: ChainTransfer[];
  memos: string[];
  /** Net token balance change of each token account the node reports (post - pre). */
  balanceChanges: Array<{ account: string; owner: string | null; mint: string; delta: bigint }>;
}

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
}

/** What a payment for one quote must be: the priced transfer from our wallet to the payee. */
export interface ExpectedPayment {
  wallet: string;
  walletAta: string;
  payeeAta: string;
  mint: string;
  amount: bigint;
  /** The quote id, carried as the memo. */
  memo: string;
}

/**
 * Checks a transaction against what was priced: it succeeded, moved exactly the amount of
 * the mint from our wallet's token account (our wallet signing) to the payee's, and carries
 * the quote's memo. Returns every problem, not just the first.
 */
export function verifyPayment(tx: ChainTx, e: ExpectedPayment): string[] {
  const problems: string[] = [];
  if (tx.failed) problems.push(`transaction ${tx.signature} failed on chain`);
  if (!carriesMemo(tx, e.memo)) problems.push(`it carries no memo ${e.memo}`);
  const ours = tx.transfers.filter((x) => x.source === e.walletAta);
  if (ours.length === 0) problems.push(`it moves nothing out of the wallet's token account ${e.walletAta}`);
  for (const x of ours) {
    if (x.destination !== e.payeeAta)
      problems.push(`it pays ${x.destination}, not the payee's token account ${e.payeeAta}`);
    if (x.authority !== e.wallet) problems.push(`its transfer is authorised by ${x.authority}, not our wallet`);
    if (x.mint !== null && x.mint !== e.mint) problems.push(`it moves mint ${x.mint}, not ${e.mint}`);
  }
  const moved = ours.reduce((sum, x) => sum + x.amount, 0n);
  if (ours.length > 0 && moved !== e.amount)
    problems.push(`it moves ${moved} atomic units, not the ${e.amount} priced`);
  const delta = tx.balanceChanges.find((b) => b.account === e.walletAta);
  if (delta && delta.mint !== e.mint)
    problems.push(`the wallet's token account holds mint ${delta.mint}, not ${e.mint}`);
  if (delta && delta.delta !== -e.amount && !tx.failed)
    problems.push(`the wallet's balance changed by ${delta.delta}, not by -${e.amount}`);
  return problems;
}

/**
 * What a refund transaction brought back into the wallet from the payee (atomic units):
 * the wallet's token account gained it and an account of the payee's lost it, same mint.
 */
export function refundInflow(
  tx: ChainTx,
  o: { walletAta: string; payee: string; mint: string },
): bigint | "not_from_payee" {
  if (tx.failed) return "not_from_payee";
  const gained =
    tx.balanceChanges.find((b) => b.account === o.walletAta && b.mint === o.mint && b.delta > 0n)?.delta ?? 0n;
  const lost = tx.balanceChanges
    .filter((b) => b.owner === o.payee && b.mint === o.mint && b.delta < 0n)
    .reduce((sum, b) => sum - b.delta, 0n);
  const inflow = gained < lost ? gained : lost;
  return inflow > 0n ? inflow : "not_from_payee";
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
 * proof can no longer land (scan-cursors.ts); the height judged is then the one read before
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
