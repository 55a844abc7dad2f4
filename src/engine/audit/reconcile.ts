/**
 * The audit: the wallet's USDC token account, as our own RPC shows it, reconciled with the
 * journal. Two parts: `scanWalletHistory` (scan.ts) reads the account's history back to
 * a time through the chain port (paged, bounded, retried), and `reconcile` here — a pure
 * function of the decoded transactions, the journal's payments and intents — says where the
 * two disagree.
 *
 * The chain is the truth about money; the journal is what the engine believes. A discrepancy
 * is money the journal cannot explain (an outflow no payment names, a different amount, a
 * payment the journal thought could never land), or a belief the chain does not bear out
 * (a payment counted as landed that is not there, a refund credited that never came).
 */
import { formatDecimal } from "../../domain/money.js";
import { refundInflow, type ChainTx } from "../chain/chain.js";
import { INTENT_STATES, resting, STATES } from "../model/states.js";
import type { Intent, IntentState, PaymentFate, PaymentRecord, SettlementCheck } from "../model/types.js";

/** Clock skew allowed between this machine and the cluster's block times. */
export const AUDIT_SKEW_MS = 600_000;
/**
 * A settlement the service reported but our RPC does not show yet is "in flight" this long
 * after the proof was sent (a blockhash lives ~60-90 s; our RPC may lag the service's).
 */
export const CLAIM_GRACE_MS = 120_000;

// ---- The report -----------------------------------------------------------------------

export type DiscrepancyKind =
  /** Money left the wallet's token account and no journaled payment carries its memo. */
  | "unknown_outflow"
  /** A journaled payment landed, moving a different amount than the journal records. */
  | "amount_mismatch"
  /** A journaled payment landed, paying an account not owned by the journal's payee. */
  | "payee_mismatch"
  /** More than one transfer on chain carries the same quote's memo: paid twice. */
  | "duplicate_payment"
  /** A payment the journal says can never land (or whose intent it counts as not spent) is on chain. */
  | "landed_but_never"
  /** A payment on chain whose journal record belongs to no intent. */
  | "orphan_payment"
  /** The journal counts a payment as landed or settled; the chain does not show it. */
  | "claimed_but_absent"
  /** The journal credited a refund the chain does not show coming into the wallet (in full). */
  | "unverified_refund";

export interface Discrepancy {
  kind: DiscrepancyKind;
  /** One plain sentence: what disagrees. */
  message: string;
  transaction?: string;
  quoteId?: string;
  intentId?: string;
  /** Decimal USDC, as the journal has it. */
  journalAmount?: string;
  /** Decimal USDC, as the chain shows it. */
  chainAmount?: string;
  /** Block time (ISO) of the transaction, when there is one. */
  at?: string;
}

export interface OutflowView {
  transaction: string;
  at: string | null;
  amount: string;
  /** The journaled payment it matched (by memo), or the first memo it carries. */
  quoteId: string | null;
  intentId: string | null;
  matched: boolean;
}

export type PaymentStatus =
  /** Found on chain, by its memo. */
  | "on_chain"
  /** Signed and maybe sent, not on chain yet, and the journal does not count it yet. */
  | "in_flight"
  /** The journal counts it as landed or settled, and the chain does not show it. */
  | "absent"
  /** The journal does not count it (never landed, or its intent stopped) and the chain agrees. */
  | "not_landed";

export interface PaymentView {
  quoteId: string;
  intentId: string;
  amount: string;
  signedAt: string;
  fate: PaymentFate;
  intentState: IntentState | null;
  settlement: SettlementCheck | null;
  /** What the journal names: the transaction seen on chain, else the one the service claimed. */
  journalTransaction: string | null;
  /** What the chain shows carrying this quote's memo. */
  chainTransaction: string | null;
  status: PaymentStatus;
}

export type RefundStatus =
  /** Credited, and on chain bringing at least that much from the payee into the wallet. */
  | "verified"
  /** Credited, and the chain does not bear it out (also a discrepancy). */
  | "unverified"
  /** The service reports a refund (or the execution refunded) and nothing is credited: information. */
  | "not_credited";

export interface RefundView {
  intentId: string;
  quoteId: string | null;
  /** The service's claim, as given. */
  claimed: { amount: string; transaction: string } | null;
  credited: string;
  refundTransaction: string | null;
  refundState: string;
  /** What the claimed or credited transaction brought from the payee into the wallet, if it is in the history read. */
  chainAmount: string | null;
  status: RefundStatus;
}

export interface DepositView {
  transaction: string;
  at: string | null;
  amount: string;
}

export interface InFlightView {
  quoteId: string;
  intentId: string;
  amount: string;
  intentState: IntentState | null;
  why: string;
}

export interface AuditReport {
  since: string;
  wallet: string;
  walletTokenAccount: string;
  mint: string;
  outflows: OutflowView[];
  payments: PaymentView[];
  refunds: RefundView[];
  /** Money that came in and is not a refund the journal knows (a human topping up): not a discrepancy. */
  deposits: DepositView[];
  discrepancies: Discrepancy[];
  inFlight: InFlightView[];
  /** Journaled payments of another wallet or mint (the configuration changed): not audited here. */
  otherWallet: Array<{ quoteId: string; payer: string | null; mint: string | null }>;
  ok: boolean;
}

export interface AuditInput {
  /** Start of the audited window (ms). Transactions and payments before it only serve to match. */
  since: number;
  now: number;
  wallet: string;
  walletAta: string;
  mint: string;
  /** The wallet token account's history: read back to at least `since - skew`. */
  txs: readonly ChainTx[];
  /** Journaled payments: those signed from `since - skew` on. */
  payments: readonly PaymentRecord[];
  /** Intents of those payments, and intents created from `since - skew` on. */
  intents: readonly Intent[];
  claimGraceMs?: number;
}

// ---- Reconciliation (pure) ------------------------------------------------------------

const usdc = (atomic: bigint) => formatDecimal(atomic);
const iso = (ms: number) => new Date(ms).toISOString();
const txTime = (tx: ChainTx) => (tx.blockTime === null ? null : iso(tx.blockTime * 1000));
const statesWhere = (test: (s: IntentState) => boolean): ReadonlySet<IntentState> => new Set(INTENT_STATES.filter(test));
/** Where the journal counts the money as spent, as possibly moving, and as a stop that spent nothing. */
const SETTLED_STATES = statesWhere((s) => STATES[s].money === "settled");
const IN_FLIGHT_STATES = statesWhere((s) => STATES[s].money === "in_flight");
const NOTHING_SPENT_STATES = statesWhere((s) => resting(s) && STATES[s].money === "none");

/**
 * What one transaction did to the wallet's token account: money out, or else money in. Out is
 * the larger of the net decrease the node reports (it sees inner instructions the decoder
 * does not) and the top-level transfers from the account (a node may report no balances).
 */
export function walletMovement(tx: ChainTx, walletAta: string, mint: string): { out: bigint; in: bigint } {
  if (tx.failed) return { out: 0n, in: 0n };
  const delta = tx.balanceChanges.filter((b) => b.account === walletAta && b.mint === mint).reduce((sum, b) => sum + b.delta, 0n);
  const ofMint = (x: ChainTx["transfers"][number]) => x.mint === null || x.mint === mint;
  const sent = tx.transfers.filter((x) => x.source === walletAta && x.destination !== walletAta && ofMint(x)).reduce((s, x) => s + x.amount, 0n);
  const received = tx.transfers.filter((x) => x.destination === walletAta && x.source !== walletAta && ofMint(x)).reduce((s, x) => s + x.amount, 0n);
  const out = -delta > sent ? -delta : sent;
  if (out > 0n) return { out, in: 0n };
  return { out: 0n, in: delta > received ? delta : received };
}

/**
 * Reconciles the wallet token account's history with the journal. Pure: the same inputs give
 * the same report. Transactions before `since` (and payments signed before it) are used only
 * to match what is inside the window, never reported on their own.
 */
export function reconcile(input: AuditInput): AuditReport {
  const { since, now, wallet, walletAta, mint } = input;
  const grace = input.claimGraceMs ?? CLAIM_GRACE_MS;
  const discrepancies: Discrepancy[] = [];
  const intents = new Map(input.intents.map((i) => [i.intentId, i]));
  const payments = new Map(input.payments.map((p) => [p.quoteId, p]));
  const inWindowTx = (tx: ChainTx) => tx.blockTime === null || tx.blockTime * 1000 >= since;
  // Oldest first; transactions of one slot keep the order they were given in (the node's).
  const txs = [...input.txs].sort((a, b) => (a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : (a.blockTime ?? 0) - (b.blockTime ?? 0)));
  const bySignature = new Map(txs.map((t) => [t.signature, t]));

  // Payments of another wallet, mint or token account are not this account's business.
  const ours = (p: PaymentRecord) => (p.payer === null || p.payer === wallet) && (p.mint === null || p.mint === mint) && (p.source === null || p.source === walletAta);
  const otherWallet = input.payments.filter((p) => p.signedAt >= since && !ours(p)).map((p) => ({ quoteId: p.quoteId, payer: p.payer, mint: p.mint }));

  // ---- Chain side: every outflow must be a journaled payment, as journaled.
  const outflows: OutflowView[] = [];
  const chainFor = new Map<string, ChainTx[]>(); // quote id -> transactions carrying its memo, oldest first
  const outAmount = new Map<string, bigint>();
  const inflows: Array<{ tx: ChainTx; amount: bigint }> = [];
  for (const tx of txs) {
    const moved = walletMovement(tx, walletAta, mint);
    if (moved.in > 0n && inWindowTx(tx)) inflows.push({ tx, amount: moved.in });
    if (moved.out === 0n) continue;
    outAmount.set(tx.signature, moved.out);
    const quoteId = tx.memos.find((m) => payments.has(m));
    if (quoteId !== undefined) chainFor.set(quoteId, [...(chainFor.get(quoteId) ?? []), tx]);
    if (!inWindowTx(tx)) continue;
    const p = quoteId === undefined ? undefined : payments.get(quoteId);
    outflows.push({ transaction: tx.signature, at: txTime(tx), amount: usdc(moved.out), quoteId: quoteId ?? tx.memos[0] ?? null, intentId: p?.intentId ?? null, matched: p !== undefined });
    if (!p) {
      const memo = tx.memos.length > 0 ? `its memo ${tx.memos.map((m) => JSON.stringify(m.slice(0, 100))).join(", ")} names no payment in the journal` : "it carries no memo";
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

  // Each matched pair (payment, transactions carrying its memo) inside the window is checked.
  for (const [quoteId, landed] of chainFor) {
    const p = payments.get(quoteId)!;
    if (p.signedAt < since && !landed.some(inWindowTx)) continue;
    const intent = intents.get(p.intentId);
    const base = { quoteId, intentId: p.intentId, journalAmount: usdc(p.amount) };
    for (const tx of landed) {
      const moved = outAmount.get(tx.signature)!;
      const at = txTime(tx) ? { at: txTime(tx)! } : {};
      if (moved !== p.amount) {
        discrepancies.push({ kind: "amount_mismatch", message: `quote ${quoteId} was journaled at ${usdc(p.amount)} USDC; transaction ${tx.signature} moved ${usdc(moved)} USDC`, transaction: tx.signature, chainAmount: usdc(moved), ...base, ...at });
      }
      const strangers = tx.balanceChanges.filter((b) => b.mint === mint && b.delta > 0n && b.account !== walletAta && b.owner !== null && b.owner !== p.payee);
      if (strangers.length > 0) {
        discrepancies.push({ kind: "payee_mismatch", message: `transaction ${tx.signature} for quote ${quoteId} paid ${strangers.map((b) => `${b.account} (owner ${b.owner})`).join(", ")}, not the journal's payee ${p.payee}`, transaction: tx.signature, chainAmount: usdc(moved), ...base, ...at });
      }
    }
    for (const extra of landed.slice(1)) {
      discrepancies.push({ kind: "duplicate_payment", message: `quote ${quoteId} was paid more than once: ${landed.map((t) => t.signature).join(", ")}`, transaction: extra.signature, chainAmount: usdc(outAmount.get(extra.signature)!), ...base, ...(txTime(extra) ? { at: txTime(extra)! } : {}) });
    }
    const first = landed[0]!;
    if (!intent) {
      discrepancies.push({ kind: "orphan_payment", message: `transaction ${first.signature} paid quote ${quoteId}, whose journal record names intent ${p.intentId}, which the journal does not hold`, transaction: first.signature, ...base });
    } else if (p.fate === "never" || (intent.quoteId === quoteId && NOTHING_SPENT_STATES.has(intent.state))) {
      const belief = p.fate === "never" ? "the journal says it can never land" : `the journal counts intent ${intent.intentId} as ${intent.state} with nothing spent`;
      discrepancies.push({ kind: "landed_but_never", message: `transaction ${first.signature} paid quote ${quoteId} (${usdc(outAmount.get(first.signature)!)} USDC), but ${belief}`, transaction: first.signature, chainAmount: usdc(outAmount.get(first.signature)!), ...base });
    }
  }

  // ---- Journal side: every payment counted as landed or settled must be on chain.
  const paymentViews: PaymentView[] = [];
  const inFlight: InFlightView[] = [];
  for (const p of input.payments) {
    if (p.signedAt < since || !ours(p)) continue;
    const intent = intents.get(p.intentId);
    const current = intent !== undefined && intent.quoteId === p.quoteId;
    const landed = chainFor.get(p.quoteId);
    const view = (status: PaymentStatus): PaymentView => ({
      quoteId: p.quoteId,
      intentId: p.intentId,
      amount: usdc(p.amount),
      signedAt: iso(p.signedAt),
      fate: p.fate,
      intentState: intent?.state ?? null,
      settlement: current ? intent.settlement : null,
      journalTransaction: p.tx ?? p.claimedTx ?? (current ? intent.paymentTx : null),
      chainTransaction: landed?.[0]?.signature ?? null,
      status,
    });
    if (landed) {
      paymentViews.push(view("on_chain"));
      continue;
    }
    const settled = current && SETTLED_STATES.has(intent.state) && (intent.settlement === "claimed" || intent.settlement === "verified");
    const flight = { quoteId: p.quoteId, intentId: p.intentId, amount: usdc(p.amount), intentState: intent?.state ?? null };
    if (p.fate === "landed" || settled) {
      if (p.fate !== "landed" && intent?.settlement === "claimed" && now - (p.sentAt ?? p.signedAt) < grace) {
        inFlight.push({ ...flight, why: "the service reported it settled moments ago; our RPC does not show it yet" });
        paymentViews.push(view("in_flight"));
        continue;
      }
      const belief = p.fate === "landed" ? "the journal recorded it as landed" : `the journal counts intent ${p.intentId} as ${intent!.state} with the settlement ${intent!.settlement}`;
      const named = p.tx ?? p.claimedTx ?? intent?.paymentTx ?? null;
      discrepancies.push({
        kind: "claimed_but_absent",
        message: `quote ${p.quoteId} (${usdc(p.amount)} USDC): ${belief}${named ? ` in transaction ${named}` : ""}, but no transfer carrying its memo left the wallet's token account`,
        quoteId: p.quoteId,
        intentId: p.intentId,
        journalAmount: usdc(p.amount),
        ...(named ? { transaction: named } : {}),
      });
      paymentViews.push(view("absent"));
    } else if (p.fate === "pending" && current && IN_FLIGHT_STATES.has(intent.state)) {
      inFlight.push({ ...flight, why: intent.state === "signed" ? "signed; the service has not settled it yet" : "the service did not settle it; the engine is establishing its fate from the chain" });
      paymentViews.push(view("in_flight"));
    } else {
      paymentViews.push(view("not_landed"));
    }
  }

  // ---- Refunds: every credit must be on chain; claims without a credit are information.
  const windowSigs = new Set(txs.filter(inWindowTx).map((t) => t.signature));
  const windowPaymentIntents = new Set(input.payments.filter((p) => p.signedAt >= since).map((p) => p.intentId));
  const inScope = (i: Intent) =>
    i.createdAt >= since ||
    windowPaymentIntents.has(i.intentId) ||
    (i.refundTx !== null && windowSigs.has(i.refundTx)) ||
    (i.refund?.transaction !== undefined && windowSigs.has(i.refund.transaction));
  const creditedByTx = new Map<string, bigint>();
  for (const i of input.intents) if (i.refundTx && i.refundCredit > 0n) creditedByTx.set(i.refundTx, (creditedByTx.get(i.refundTx) ?? 0n) + i.refundCredit);
  const refunds: RefundView[] = [];
  for (const i of [...intents.values()].filter(inScope).sort((a, b) => a.createdAt - b.createdAt)) {
    const claimed = i.refund ? { amount: i.refund.amount, transaction: i.refund.transaction } : null;
    if (i.refundCredit <= 0n && i.execStatus !== "refunded" && !claimed) continue;
    const txSig = i.refundTx ?? claimed?.transaction ?? null;
    const tx = txSig ? bySignature.get(txSig) : undefined;
    const inflow = tx ? refundInflow(tx, { walletAta, payee: i.payee ?? "", mint }) : undefined;
    const view = (status: RefundStatus): RefundView => ({
      intentId: i.intentId,
      quoteId: i.quoteId,
      claimed,
      credited: usdc(i.refundCredit),
      refundTransaction: i.refundTx,
      refundState: i.refundState,
      chainAmount: typeof inflow === "bigint" ? usdc(inflow) : null,
      status,
    });
    if (i.refundCredit <= 0n) {
      refunds.push(view("not_credited"));
      continue;
    }
    let problem: string | undefined;
    if (!i.refundTx) problem = "names no refund transaction";
    else if (!tx) problem = `names transaction ${i.refundTx}, which is not in the wallet token account's history`;
    else if (tx.failed) problem = `names transaction ${i.refundTx}, which failed on chain`;
    else if (typeof inflow !== "bigint") problem = `names transaction ${i.refundTx}, which brought nothing from the payee ${i.payee ?? "(unknown)"} into the wallet`;
    else if (inflow < creditedByTx.get(i.refundTx)!) {
      const total = creditedByTx.get(i.refundTx)!;
      problem = `names transaction ${i.refundTx}, which brought ${usdc(inflow)} USDC into the wallet${total !== i.refundCredit ? `, while the journal credits ${usdc(total)} USDC to it across intents` : ""}`;
    }
    if (problem) {
      discrepancies.push({
        kind: "unverified_refund",
        message: `intent ${i.intentId} was credited a refund of ${usdc(i.refundCredit)} USDC, but the journal ${problem}`,
        intentId: i.intentId,
        ...(i.quoteId ? { quoteId: i.quoteId } : {}),
        ...(i.refundTx ? { transaction: i.refundTx } : {}),
        journalAmount: usdc(i.refundCredit),
        ...(typeof inflow === "bigint" ? { chainAmount: usdc(inflow) } : {}),
      });
      refunds.push(view("unverified"));
    } else refunds.push(view("verified"));
  }

  // ---- Inflows that are no refund the journal knows of: deposits.
  const refundSigs = new Set<string>();
  for (const i of input.intents) {
    if (i.refundTx) refundSigs.add(i.refundTx);
    if (i.refund?.transaction) refundSigs.add(i.refund.transaction);
  }
  const deposits = inflows.filter(({ tx }) => !refundSigs.has(tx.signature)).map(({ tx, amount }) => ({ transaction: tx.signature, at: txTime(tx), amount: usdc(amount) }));

  return {
    since: iso(since),
    wallet,
    walletTokenAccount: walletAta,
    mint,
    outflows,
    payments: paymentViews,
    refunds,
    deposits,
    discrepancies,
    inFlight,
    otherWallet,
    ok: discrepancies.length === 0,
  };
}
