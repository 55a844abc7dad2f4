/**
 * The audit: the wallet's USDC token account, as our own RPC shows it, reconciled with the
 * journal. Two parts: `scanWalletHistory` (scan.ts) reads the account's history back to
 * a time through the chain port (paged, bounded, retried), and `reconcile` here — a pure
 * function of the decoded transactions, the journal's payments and intents — says where the
 * two disagree, in phases: the chain's side here, the journal's in journal-side.ts.
 *
 * The chain is the truth about money; the journal is what the engine believes. A discrepancy
 * is money the journal cannot explain (an outflow no payment names, a different amount, a
 * payment the journal thought could never land), or a belief the chain does not bear out
 * (a payment counted as landed that is not there, a refund credited that never came).
 */
import type { ChainTx } from "../chain/chain.js";
import { books, NOTHING_SPENT_STATES, txTime, usdc, type Books } from "./books.js";
import { depositsOf, paymentViews, refundViews } from "./journal-side.js";
import type { AuditInput, AuditReport, OutflowView } from "./report.js";

export type * from "./report.js";

/** Clock skew allowed between this machine and the cluster's block times. */
export const AUDIT_SKEW_MS = 600_000;
/**
 * A settlement the service reported but our RPC does not show yet is "in flight" this long
 * after the proof was sent (a blockhash lives ~60-90 s; our RPC may lag the service's).
 */
export const CLAIM_GRACE_MS = 120_000;

/**
 * What one transaction did to the wallet's token account: money out, or else money in. Out is
 * the larger of the net decrease the node reports (it sees inner instructions the decoder
 * does not) and the top-level transfers from the account (a node may report no balances).
 */
export function walletMovement(tx: ChainTx, walletAta: string, mint: string): { out: bigint; in: bigint } {
  if (tx.failed) return { out: 0n, in: 0n };
  const delta = tx.balanceChanges
    .filter((b) => b.account === walletAta && b.mint === mint)
    .reduce((sum, b) => sum + b.delta, 0n);
  const ofMint = (x: ChainTx["transfers"][number]) => x.mint === null || x.mint === mint;
  const sent = tx.transfers
    .filter((x) => x.source === walletAta && x.destination !== walletAta && ofMint(x))
    .reduce((s, x) => s + x.amount, 0n);
  const received = tx.transfers
    .filter((x) => x.destination === walletAta && x.source !== walletAta && ofMint(x))
    .reduce((s, x) => s + x.amount, 0n);
  const out = -delta > sent ? -delta : sent;
  if (out > 0n) return { out, in: 0n };
  return { out: 0n, in: delta > received ? delta : received };
}

/** The outflows of the history, and what the later phases need of them. */
export interface Outflows {
  outflows: OutflowView[];
  /** Quote id -> the transactions carrying its memo, oldest first. */
  chainFor: Map<string, ChainTx[]>;
  /** Signature -> what it moved out. */
  outAmount: Map<string, bigint>;
  inflows: Array<{ tx: ChainTx; amount: bigint }>;
}

/**
 * Reconciles the wallet token account's history with the journal. Pure: the same inputs give
 * the same report. Transactions before `since` (and payments signed before it) are used only
 * to match what is inside the window, never reported on their own.
 */
export function reconcile(input: AuditInput): AuditReport {
  const { since, wallet, walletAta, mint } = input;
  const b = books(input);
  const otherWallet = input.payments
    .filter((p) => p.signedAt >= since && !b.ours(p))
    .map((p) => ({ quoteId: p.quoteId, payer: p.payer, mint: p.mint }));
  const out = readOutflows(b);
  checkLanded(b, out);
  const { payments, inFlight } = paymentViews(b, out.chainFor, input.claimGraceMs ?? CLAIM_GRACE_MS);
  const refunds = refundViews(b);
  const deposits = depositsOf(b, out.inflows);
  return {
    since: new Date(since).toISOString(),
    wallet,
    walletTokenAccount: walletAta,
    mint,
    outflows: out.outflows,
    payments,
    refunds,
    deposits,
    discrepancies: b.discrepancies,
    inFlight,
    otherWallet,
    ok: b.discrepancies.length === 0,
  };
}

/** The chain's side: every outflow must be a journaled payment, as journaled. */
function readOutflows(b: Books): Outflows {
  const { walletAta, mint } = b.input;
  const { byReference, discrepancies, inWindowTx } = b;
  const outflows: OutflowView[] = [];
  const chainFor = new Map<string, ChainTx[]>(); // quote id -> transactions carrying its reference, oldest first
  const outAmount = new Map<string, bigint>();
  const inflows: Array<{ tx: ChainTx; amount: bigint }> = [];
  for (const tx of b.txs) {
    const moved = walletMovement(tx, walletAta, mint);
    if (moved.in > 0n && inWindowTx(tx)) inflows.push({ tx, amount: moved.in });
    if (moved.out === 0n) continue;
    outAmount.set(tx.signature, moved.out);
    // The payment whose reference (Solana: memo = quote id; EVM: nonce) the transaction carries.
    const p = tx.memos.map((m) => byReference.get(m)).find((x) => x !== undefined);
    const quoteId = p?.quoteId;
    if (quoteId !== undefined) chainFor.set(quoteId, [...(chainFor.get(quoteId) ?? []), tx]);
    if (!inWindowTx(tx)) continue;
    outflows.push({
      transaction: tx.signature,
      at: txTime(tx),
      amount: usdc(moved.out),
      quoteId: quoteId ?? tx.memos[0] ?? null,
      intentId: p?.intentId ?? null,
      matched: p !== undefined,
    });
    if (!p) {
      const memo =
        tx.memos.length > 0
          ? `its memo ${tx.memos.map((m) => JSON.stringify(m.slice(0, 100))).join(", ")} names no payment in the journal`
          : "it carries no memo";
      discrepancies.push({
        kind: "unknown_outflow",
        message: `transaction ${tx.signature} moved ${usdc(moved.out)} USDC out of the wallet and ${memo}`,
        transaction: tx.signature,
        ...(tx.memos[0] !== undefined ? { quoteId: tx.memos[0].slice(0, 200) } : {}),
        chainAmount: usdc(moved.out),
        ...(txTime(tx) ? { at: txTime(tx)! } : {}),
      });
    }
  }

  return { outflows, chainFor, outAmount, inflows };
}

/** Each matched pair (payment, transactions carrying its memo) inside the window is checked. */
function checkLanded(b: Books, { chainFor, outAmount }: Outflows): void {
  const { since, walletAta, mint } = b.input;
  const { payments, intents, discrepancies, inWindowTx } = b;
  for (const [quoteId, landed] of chainFor) {
    const p = payments.get(quoteId)!;
    if (p.signedAt < since && !landed.some(inWindowTx)) continue;
    const intent = intents.get(p.intentId);
    const base = { quoteId, intentId: p.intentId, journalAmount: usdc(p.amount) };
    for (const tx of landed) {
      const moved = outAmount.get(tx.signature)!;
      const at = txTime(tx) ? { at: txTime(tx)! } : {};
      if (moved !== p.amount) {
        discrepancies.push({
          kind: "amount_mismatch",
          message: `quote ${quoteId} was journaled at ${usdc(p.amount)} USDC; transaction ${tx.signature} moved ${usdc(moved)} USDC`,
          transaction: tx.signature,
          chainAmount: usdc(moved),
          ...base,
          ...at,
        });
      }
      const strangers = tx.balanceChanges.filter(
        (b) => b.mint === mint && b.delta > 0n && b.account !== walletAta && b.owner !== null && b.owner !== p.payee,
      );
      if (strangers.length > 0) {
        discrepancies.push({
          kind: "payee_mismatch",
          message: `transaction ${tx.signature} for quote ${quoteId} paid ${strangers.map((b) => `${b.account} (owner ${b.owner})`).join(", ")}, not the journal's payee ${p.payee}`,
          transaction: tx.signature,
          chainAmount: usdc(moved),
          ...base,
          ...at,
        });
      }
    }
    for (const extra of landed.slice(1)) {
      discrepancies.push({
        kind: "duplicate_payment",
        message: `quote ${quoteId} was paid more than once: ${landed.map((t) => t.signature).join(", ")}`,
        transaction: extra.signature,
        chainAmount: usdc(outAmount.get(extra.signature)!),
        ...base,
        ...(txTime(extra) ? { at: txTime(extra)! } : {}),
      });
    }
    const first = landed[0]!;
    if (!intent) {
      discrepancies.push({
        kind: "orphan_payment",
        message: `transaction ${first.signature} paid quote ${quoteId}, whose journal record names intent ${p.intentId}, which the journal does not hold`,
        transaction: first.signature,
        ...base,
      });
    } else if (p.fate === "never" || (intent.quoteId === quoteId && NOTHING_SPENT_STATES.has(intent.state))) {
      const belief =
        p.fate === "never"
          ? "the journal says it can never land"
          : `the journal counts intent ${intent.intentId} as ${intent.state} with nothing spent`;
      discrepancies.push({
        kind: "landed_but_never",
        message: `transaction ${first.signature} paid quote ${quoteId} (${usdc(outAmount.get(first.signature)!)} USDC), but ${belief}`,
        transaction: first.signature,
        chainAmount: usdc(outAmount.get(first.signature)!),
        ...base,
      });
    }
  }
}
