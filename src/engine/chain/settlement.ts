/**
 * Money truth from the chain, for one intent: the fate of a proof the service did not
 * settle, the check of a settlement the service claims, and the credit of a refund — each
 * read through the user's own RPC (the chain port), never taken from the service's word.
 * These functions read the chain and record what it showed on the intent's payment record;
 * the intent's own state is changed by the caller.
 */
import { formatDecimal, parseDecimal } from "../../domain/money.js";
import { proofFate, refundInflow, verifyPayment, type ChainTx, type ExpectedPayment, type ProofLife } from "./chain.js";
import type { Ctx } from "../context.js";
import { REFUND_PATIENCE_MS, refundVerdict, type RefundVerdict } from "../model/transitions.js";
import type { IntentAt, IntentIn, PaymentRecord } from "../model/types.js";

/** An intent whose proof may have moved money: its price and payee are known. */
type Paying = Pick<IntentIn<"unsettled" | "executed">, "quoteId" | "amount" | "payee">;

/**
 * What a payment must look like on chain: signed by the key that signed it, out of the token
 * account it was journaled with (the owner's, in delegate mode) — as journaled, whatever the
 * configuration says now; a payment journaled without them is the configured wallet's.
 */
export async function expectedPayment(
  c: Ctx,
  p: {
    quoteId: string;
    amount: bigint;
    payee: string;
    payer?: string | null;
    source?: string | null;
    mint?: string | null;
  },
): Promise<ExpectedPayment> {
  const { associatedTokenAddress } = await import("../../domain/token.js");
  const mint = p.mint ?? c.config.mint;
  const current = p.payer ? undefined : await c.walletAta();
  const wallet = p.payer ?? current!.wallet;
  // Journaled before sources were (schema 4): a payment out of its payer's own account.
  const walletAta = p.source ?? (p.payer ? await associatedTokenAddress(p.payer, mint) : current!.ata);
  return {
    wallet,
    walletAta,
    payeeAta: await associatedTokenAddress(p.payee, mint),
    mint,
    amount: p.amount,
    memo: p.quoteId,
  };
}

async function expected(c: Ctx, intent: Paying, payment: PaymentRecord | undefined): Promise<ExpectedPayment> {
  return expectedPayment(c, payment ?? { quoteId: intent.quoteId, amount: intent.amount, payee: intent.payee });
}

export type FateVerdict =
  { kind: "landed"; tx: ChainTx; problems: string[] } | { kind: "never" } | { kind: "unknown"; why: string };

/** Did the proof of the intent's current attempt land, or can it never land? */
export async function establishFate(c: Ctx, intent: IntentIn<"unsettled">): Promise<FateVerdict> {
  const payment = await c.journal.payment(intent.quoteId);
  const exp = await expected(c, intent, payment);
  let fate: Awaited<ReturnType<typeof proofFate>>;
  try {
    fate = await proofFate(await c.chain(), proofLife(exp, payment, intent.updatedAt), undefined, c.memoScans);
  } catch (e) {
    fate = {
      kind: "unknown" as const,
      why: `the Solana RPC could not be used (${(e as Error).message.slice(0, 200)})`,
    };
  }
  const now = c.now();
  const vouched = fate.vouched !== undefined ? { lastValidHeight: fate.vouched } : {};
  if (fate.kind === "landed") {
    await c.journal.updatePayment(exp.memo, { fate: "landed", tx: fate.tx.signature, checkedAt: now, ...vouched });
    return { kind: "landed", tx: fate.tx, problems: verifyPayment(fate.tx, exp) };
  }
  // A payment that can never land is still watched a while (released-watch.ts).
  await c.journal.updatePayment(exp.memo, {
    checkedAt: now,
    ...vouched,
    ...(fate.kind === "never" ? { fate: "never" as const, watch: true } : {}),
  });
  return fate.kind === "never" ? { kind: "never" } : { kind: "unknown", why: fate.why };
}

/** What the fate rule needs of a journaled payment (none journaled: nothing vouched for). */
function proofLife(exp: ExpectedPayment, payment: PaymentRecord | undefined, fallbackSignedAt: number): ProofLife {
  return {
    walletAta: exp.walletAta,
    memo: exp.memo,
    blockhash: payment?.blockhash ?? null,
    lastValidHeight: payment?.lastValidHeight ?? null,
    signedAt: payment?.signedAt ?? fallbackSignedAt,
  };
}

export type SettlementVerdict =
  | { kind: "verified"; tx: string; note?: string }
  | { kind: "mismatch"; tx?: string; detail: string }
  | { kind: "pending"; why: string };

/**
 * Checks a settlement the service reported (or, when it named no transaction, looks for one)
 * against what was priced. A claim the chain does not bear out is a mismatch once the
 * proof's blockhash has expired with no transfer carrying its memo.
 */
export async function checkSettlement(c: Ctx, intent: IntentAt<"executed">): Promise<SettlementVerdict> {
  const payment = await c.journal.payment(intent.quoteId);
  const exp = await expected(c, intent, payment);
  const chain = await c.chain();
  let tx: ChainTx | null = null;
  try {
    if (intent.paymentTx) tx = await chain.transaction(intent.paymentTx);
  } catch (e) {
    return { kind: "pending", why: `the Solana RPC did not answer (${(e as Error).message.slice(0, 200)})` };
  }
  let note: string | undefined;
  if (!tx || !tx.memos.includes(exp.memo)) {
    const fate = await proofFate(chain, proofLife(exp, payment, intent.createdAt), undefined, c.memoScans);
    if (fate.vouched !== undefined) await c.journal.updatePayment(exp.memo, { lastValidHeight: fate.vouched });
    if (fate.kind === "unknown") return { kind: "pending", why: fate.why };
    if (fate.kind === "never") {
      await c.journal.updatePayment(exp.memo, { fate: "never", checkedAt: c.now(), watch: true });
      return {
        kind: "mismatch",
        detail: `the service reported the payment settled${intent.paymentTx ? ` in ${intent.paymentTx}` : ""}, but no transfer for quote ${exp.memo} is on chain and none can land any more`,
      };
    }
    if (intent.paymentTx && intent.paymentTx !== fate.tx.signature)
      note = `the service named transaction ${intent.paymentTx}; the payment on chain is ${fate.tx.signature}`;
    tx = fate.tx;
  }
  await c.journal.updatePayment(exp.memo, { fate: "landed", tx: tx.signature, checkedAt: c.now() });
  const problems = verifyPayment(tx, exp);
  if (problems.length > 0)
    return {
      kind: "mismatch",
      tx: tx.signature,
      detail: `transaction ${tx.signature} is not the priced payment: ${problems.join("; ")}`,
    };
  return { kind: "verified", tx: tx.signature, ...(note ? { note } : {}) };
}

/** What the chain says of the service's refund claim, and the credit it earns (a fetch has none: nothing to credit). */
export async function checkRefund(c: Ctx, intent: IntentAt<"executed">): Promise<RefundVerdict & { tx?: string }> {
  const claim = intent.refund;
  const paid = intent.budgetState === "spent" || intent.budgetState === "reserved" ? intent.budgetAmount : 0n;
  const evidence = {
    paid,
    credited: intent.refundCredit,
    status: intent.execStatus ?? "pending",
    ...(claim ? { claim: { amount: parseDecimal(claim.amount), transaction: claim.transaction } } : {}),
  };
  let landed: bigint | "missing" | "elsewhere" | "not_from_payee" | undefined;
  if (claim?.transaction) {
    const owner = await c.journal.refundTxOwner(claim.transaction);
    if (owner && owner !== intent.intentId) landed = "elsewhere";
    else {
      const tx = await (await c.chain()).transaction(claim.transaction).catch(() => undefined);
      if (tx === undefined) return { credit: intent.refundCredit, settled: false };
      if (tx === null) landed = "missing";
      else {
        // A refund comes back to the account the payment came from.
        const exp = await expected(c, intent, await c.journal.payment(intent.quoteId));
        landed = refundInflow(tx, { walletAta: exp.walletAta, payee: intent.payee, mint: exp.mint });
      }
    }
  }
  const verdict = refundVerdict({ ...evidence, ...(landed !== undefined ? { landed } : {}) }, formatDecimal);
  if (!verdict.settled && landed === "missing" && c.now() - (intent.refundSeenAt ?? c.now()) > REFUND_PATIENCE_MS) {
    return {
      ...verdict,
      settled: true,
      attention: `the service's refund transaction ${claim!.transaction} is not on chain an hour after it was reported: nothing is credited`,
    };
  }
  return { ...verdict, ...(typeof landed === "bigint" ? { tx: claim!.transaction } : {}) };
}
