/**
 * The journal's side of the audit: every payment the journal counts as landed or settled
 * must be on chain, every refund credited must have come into the wallet, and money that
 * came in and is no refund the journal knows of is a deposit (information, not a discrepancy).
 */
import { refundInflow, type ChainTx } from "../chain/chain.js";
import type { IntentRecord } from "../model/types.js";
import { IN_FLIGHT_STATES, iso, SETTLED_STATES, txTime, usdc, type Books } from "./books.js";
import type { DepositView, InFlightView, PaymentStatus, PaymentView, RefundStatus, RefundView } from "./report.js";

/** Every payment of the window: on chain, in flight, absent (a discrepancy), or not landed as the journal says. */
export function paymentViews(
  b: Books,
  chainFor: Map<string, ChainTx[]>,
  grace: number,
): { payments: PaymentView[]; inFlight: InFlightView[] } {
  const { since, now } = b.input;
  const { intents, ours, discrepancies } = b;
  const views: PaymentView[] = [];
  const inFlight: InFlightView[] = [];
  for (const p of b.input.payments) {
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
      views.push(view("on_chain"));
      continue;
    }
    const settled =
      current &&
      SETTLED_STATES.has(intent.state) &&
      (intent.settlement === "claimed" || intent.settlement === "verified");
    const flight = {
      quoteId: p.quoteId,
      intentId: p.intentId,
      amount: usdc(p.amount),
      intentState: intent?.state ?? null,
    };
    if (p.fate === "landed" || settled) {
      if (p.fate !== "landed" && intent?.settlement === "claimed" && now - (p.sentAt ?? p.signedAt) < grace) {
        inFlight.push({ ...flight, why: "the service reported it settled moments ago; our RPC does not show it yet" });
        views.push(view("in_flight"));
        continue;
      }
      const belief =
        p.fate === "landed"
          ? "the journal recorded it as landed"
          : `the journal counts intent ${p.intentId} as ${intent!.state} with the settlement ${intent!.settlement}`;
      const named = p.tx ?? p.claimedTx ?? intent?.paymentTx ?? null;
      discrepancies.push({
        kind: "claimed_but_absent",
        message: `quote ${p.quoteId} (${usdc(p.amount)} USDC): ${belief}${named ? ` in transaction ${named}` : ""}, but no transfer carrying its ${p.nonce === undefined ? "memo" : "authorization's nonce"} left the wallet's ${p.nonce === undefined ? "token account" : "key"}`,
        quoteId: p.quoteId,
        intentId: p.intentId,
        journalAmount: usdc(p.amount),
        ...(named ? { transaction: named } : {}),
      });
      views.push(view("absent"));
    } else if (p.fate === "pending" && current && IN_FLIGHT_STATES.has(intent.state)) {
      inFlight.push({
        ...flight,
        why:
          intent.state === "signed"
            ? "signed; the service has not settled it yet"
            : "the service did not settle it; the engine is establishing its fate from the chain",
      });
      views.push(view("in_flight"));
    } else {
      views.push(view("not_landed"));
    }
  }

  return { payments: views, inFlight };
}

/** Refunds: every credit must be on chain; claims without a credit are information. */
export function refundViews(b: Books): RefundView[] {
  const { since, walletAta, mint } = b.input;
  const { intents, bySignature, discrepancies, inWindowTx } = b;
  const input = b.input;
  const windowSigs = new Set(b.txs.filter(inWindowTx).map((t) => t.signature));
  const windowPaymentIntents = new Set(input.payments.filter((p) => p.signedAt >= since).map((p) => p.intentId));
  const inScope = (i: IntentRecord) =>
    i.createdAt >= since ||
    windowPaymentIntents.has(i.intentId) ||
    (i.refundTx !== null && windowSigs.has(i.refundTx)) ||
    (i.refund?.transaction !== undefined && windowSigs.has(i.refund.transaction));
  const creditedByTx = new Map<string, bigint>();
  for (const i of input.intents)
    if (i.refundTx && i.refundCredit > 0n)
      creditedByTx.set(i.refundTx, (creditedByTx.get(i.refundTx) ?? 0n) + i.refundCredit);
  const refunds: RefundView[] = [];
  for (const i of [...intents.values()].filter(inScope).sort((a, b) => a.createdAt - b.createdAt)) {
    const claimed = i.refund ? { amount: i.refund.amount, transaction: i.refund.transaction } : null;
    if (i.refundCredit <= 0n && i.execStatus !== "refunded" && !claimed) continue;
    const txSig = i.refundTx ?? claimed?.transaction ?? null;
    const tx = txSig ? bySignature.get(txSig) : undefined;
    // The payee as the payment's rail recorded it (EVM: checksummed), else as the intent has it.
    const payee = (i.quoteId ? b.payments.get(i.quoteId)?.payee : undefined) ?? i.payee ?? "";
    const inflow = tx ? refundInflow(tx, { walletAta, payee, mint }) : undefined;
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
    else if (typeof inflow !== "bigint")
      problem = `names transaction ${i.refundTx}, which brought nothing from the payee ${i.payee ?? "(unknown)"} into the wallet`;
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
  return refunds;
}

/** Inflows that are no refund the journal knows of: deposits. */
export function depositsOf(b: Books, inflows: Array<{ tx: ChainTx; amount: bigint }>): DepositView[] {
  const refundSigs = new Set<string>();
  for (const i of b.input.intents) {
    if (i.refundTx) refundSigs.add(i.refundTx);
    if (i.refund?.transaction) refundSigs.add(i.refund.transaction);
  }
  return inflows
    .filter(({ tx }) => !refundSigs.has(tx.signature))
    .map(({ tx, amount }) => ({ transaction: tx.signature, at: txTime(tx), amount: usdc(amount) }));
}
