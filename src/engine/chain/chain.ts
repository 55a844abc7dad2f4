/**
 * A landed transaction as every rail describes it to the engine, and the rules that read
 * money out of one: whether it is the payment that was priced (verifyPayment) and what a
 * refund brought back (refundInflow). Pure; each rail (rails/<rail>/) decodes its chain's
 * transactions into this shape, through the user's own RPC.
 *
 * The shape, per rail:
 * - `signature`: Solana's transaction signature; EVM's transaction hash.
 * - `slot`: Solana's slot; EVM's block number.
 * - `transfers`: Solana's top-level Transfer/TransferChecked instructions, between token
 *   accounts; EVM's USDC `Transfer` logs, between addresses (the authority is the sender:
 *   an EIP-3009 authorization moves the signer's own balance).
 * - `memos`: what ties the transaction to one payment record. Solana: its memo
 *   instructions' texts (a payment's memo is its quote id); EVM: the authorization nonces
 *   it used (`AuthorizationUsed` logs), which the payment record journals.
 * - `balanceChanges`: Solana's pre/post token balances per token account; EVM's net of the
 *   Transfer logs per address (account and owner are both the address).
 */

/** One token movement of a transaction (Solana: a top-level Transfer / TransferChecked; EVM: a Transfer log). */
export interface ChainTransfer {
  source: string;
  destination: string;
  authority: string;
  /** The token moved, when the movement names it (Solana's plain Transfer does not). */
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
  /** Net token balance change of each account the node reports (post - pre). */
  balanceChanges: Array<{ account: string; owner: string | null; mint: string; delta: bigint }>;
}

/** What a payment for one quote must be: the priced transfer from our wallet to the payee. */
export interface ExpectedPayment {
  /** The key that signed it: the transfer's authority. */
  wallet: string;
  /** The account it moves money from (Solana: a token account, the owner's in delegate mode; EVM: the key). */
  walletAta: string;
  /** The account it pays (Solana: the payee's associated token account; EVM: the payee's address). */
  payeeAta: string;
  mint: string;
  amount: bigint;
  /** What ties the transaction to this payment (Solana: the quote id, as the memo; EVM: the authorization's nonce). */
  memo: string;
}

/** Does this transaction carry the payment's reference (its memo)? */
export function carriesMemo(tx: ChainTx, memo: string): boolean {
  return tx.memos.includes(memo);
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
