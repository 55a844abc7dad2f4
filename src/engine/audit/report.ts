/**
 * The audit's report and what it is made from: the discrepancies (each kind says what the
 * journal and the chain disagree on), the views of outflows, payments, refunds, deposits and
 * payments still in flight, and the input `reconcile` takes.
 */
import type { ChainTx } from "../chain/chain.js";
import type { IntentRecord, IntentState, PaymentFate, PaymentRecord, SettlementCheck } from "../model/types.js";

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
  intents: readonly IntentRecord[];
  claimGraceMs?: number;
}
