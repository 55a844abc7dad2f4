/**
 * What the audit tests build their worlds from: the wallet, the payee and a stranger, and
 * hand-made chain transactions (a payment out, money in), payment records and intents as the
 * journal holds them. Shared by audit-reconcile.test.ts and audit-scan.test.ts.
 */
import type { ChainTx } from "../../src/engine/chain/chain.js";
import type { IntentRecord, PaymentRecord } from "../../src/engine/model/types.js";

export const WALLET = "Wa11et1111111111111111111111111111111111111";
export const ATA = "Wa11etAta11111111111111111111111111111111111";
export const MINT = "Mint111111111111111111111111111111111111111";
export const PAYEE = "Payee11111111111111111111111111111111111111";
export const PAYEE_ATA = "PayeeAta1111111111111111111111111111111111";
export const STRANGER = "Stranger111111111111111111111111111111111111";
export const STRANGER_ATA = "StrangerAta11111111111111111111111111111111";

export const T0 = Date.parse("2026-11-01T12:00:00Z");
export const MIN = 60_000;
export const sec = (ms: number) => Math.floor(ms / 1000);
export const usdc = (n: number) => BigInt(Math.round(n * 1_000_000));
/** The next transaction's slot: transactions are ordered as they are built. */
let slot = 100n;

/** A payment transfer from the wallet to `to`, carrying `memo`, at `at` (ms). */
export function payTx(
  sig: string,
  memo: string | null,
  amount: bigint,
  at = T0 + MIN,
  o: { to?: string; toOwner?: string; noBalances?: boolean; failed?: boolean } = {},
): ChainTx {
  const to = o.to ?? PAYEE_ATA;
  return {
    signature: sig,
    slot: slot++,
    blockTime: sec(at),
    failed: o.failed ?? false,
    feePayer: PAYEE,
    transfers: [{ source: ATA, destination: to, authority: WALLET, mint: MINT, amount }],
    memos: memo === null ? [] : [memo],
    balanceChanges: o.noBalances
      ? []
      : [
          { account: ATA, owner: WALLET, mint: MINT, delta: -amount },
          { account: to, owner: o.toOwner ?? PAYEE, mint: MINT, delta: amount },
        ],
  };
}

/** Money into the wallet from `fromOwner`'s account. */
export function inTx(sig: string, amount: bigint, at = T0 + 2 * MIN, fromOwner = PAYEE): ChainTx {
  const from = fromOwner === PAYEE ? PAYEE_ATA : STRANGER_ATA;
  return {
    signature: sig,
    slot: slot++,
    blockTime: sec(at),
    failed: false,
    feePayer: fromOwner,
    transfers: [{ source: from, destination: ATA, authority: fromOwner, mint: MINT, amount }],
    memos: [],
    balanceChanges: [
      { account: from, owner: fromOwner, mint: MINT, delta: -amount },
      { account: ATA, owner: WALLET, mint: MINT, delta: amount },
    ],
  };
}

export function payment(
  quoteId: string,
  intentId: string,
  amount: bigint,
  fate: PaymentRecord["fate"],
  o: Partial<PaymentRecord> = {},
): PaymentRecord {
  return {
    quoteId,
    intentId,
    attempt: 1,
    amount,
    payee: PAYEE,
    payer: WALLET,
    mint: MINT,
    source: ATA,
    blockhash: "bh",
    lastValidHeight: 1_150n,
    signedAt: T0,
    sentAt: T0,
    fate,
    tx: null,
    claimedTx: null,
    checkedAt: null,
    watch: false,
    ...o,
  };
}

export function intent(intentId: string, o: Partial<IntentRecord> = {}): IntentRecord {
  return {
    intentId,
    kind: "action",
    origin: null,
    request: null,
    offer: null,
    response: null,
    intentKey: `k-${intentId}`,
    attempt: 1,
    idemKey: `k-${intentId}`,
    service: "svc",
    action: "servers.provision",
    input: {},
    fingerprint: "f",
    agentBudget: null,
    state: "executed",
    quoteId: null,
    quote: null,
    amount: null,
    payee: PAYEE,
    quoteExpiresAt: null,
    quotedAt: null,
    requirements: null,
    proof: null,
    payment: null,
    paymentTx: null,
    settlement: "verified",
    executionId: null,
    execution: null,
    execStatus: "completed",
    output: null,
    refund: null,
    refundState: "none",
    refundCredit: 0n,
    refundTx: null,
    refundSeenAt: null,
    budgetState: "spent",
    budgetAmount: null,
    budgetAt: null,
    approvalId: null,
    error: null,
    attention: null,
    callId: null,
    leaseOwner: null,
    leaseUntil: null,
    nextPollAt: null,
    pollIntervalMs: null,
    createdAt: T0 - 1000,
    updatedAt: T0,
    ...o,
  };
}

/** An intent that paid `quoteId` (`amount`) and executed, its settlement verified. */
export const paid = (intentId: string, quoteId: string, amount: bigint, o: Partial<IntentRecord> = {}) =>
  intent(intentId, { quoteId, amount, budgetAmount: amount, paymentTx: `tx-${quoteId}`, ...o });
