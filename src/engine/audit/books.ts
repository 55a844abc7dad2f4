/**
 * What every phase of the audit reads: the input indexed (intents and payments by id, the
 * history oldest first and by signature), the window, and the discrepancies found so far.
 */
import { formatDecimal } from "../../domain/money.js";
import type { ChainTx } from "../chain/chain.js";
import { INTENT_STATES, resting, STATES } from "../model/states.js";
import type { IntentRecord, IntentState, PaymentRecord } from "../model/types.js";
import type { AuditInput, Discrepancy } from "./report.js";

export const usdc = (atomic: bigint) => formatDecimal(atomic);
export const iso = (ms: number) => new Date(ms).toISOString();
export const txTime = (tx: ChainTx) => (tx.blockTime === null ? null : iso(tx.blockTime * 1000));

const statesWhere = (test: (s: IntentState) => boolean): ReadonlySet<IntentState> =>
  new Set(INTENT_STATES.filter(test));
/** Where the journal counts the money as spent, as possibly moving, and as a stop that spent nothing. */
export const SETTLED_STATES = statesWhere((s) => STATES[s].money === "settled");
export const IN_FLIGHT_STATES = statesWhere((s) => STATES[s].money === "in_flight");
export const NOTHING_SPENT_STATES = statesWhere((s) => resting(s) && STATES[s].money === "none");

/** What ties a payment to its transaction on chain: its authorization's nonce on EVM, else its memo (the quote id). */
export const referenceOf = (p: PaymentRecord) => p.nonce ?? p.quoteId;

export interface Books {
  input: AuditInput;
  intents: Map<string, IntentRecord>;
  payments: Map<string, PaymentRecord>;
  /**
   * Payments by what ties each to its transaction on chain (chain/chain.ts `memos`): Solana's
   * memo, the quote id; EVM's authorization nonce.
   */
  byReference: Map<string, PaymentRecord>;
  /** Oldest first; transactions of one slot keep the order they were given in (the node's). */
  txs: ChainTx[];
  bySignature: Map<string, ChainTx>;
  inWindowTx(tx: ChainTx): boolean;
  /** A payment of this wallet, mint and token account (others are not this account's business). */
  ours(p: PaymentRecord): boolean;
  discrepancies: Discrepancy[];
}

export function books(input: AuditInput): Books {
  const { since, wallet, walletAta, mint } = input;
  const txs = [...input.txs].sort((a, b) =>
    a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : (a.blockTime ?? 0) - (b.blockTime ?? 0),
  );
  return {
    input,
    intents: new Map(input.intents.map((i) => [i.intentId, i])),
    payments: new Map(input.payments.map((p) => [p.quoteId, p])),
    byReference: new Map(input.payments.map((p) => [referenceOf(p), p])),
    txs,
    bySignature: new Map(txs.map((t) => [t.signature, t])),
    inWindowTx: (tx) => tx.blockTime === null || tx.blockTime * 1000 >= since,
    ours: (p) =>
      (p.payer === null || p.payer === wallet) &&
      (p.mint === null || p.mint === mint) &&
      (p.source === null || p.source === walletAta),
    discrepancies: [],
  };
}
