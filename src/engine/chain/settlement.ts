/**
 * Money truth from the chain, for one intent: the fate of a proof the service did not
 * settle, the check of a settlement the service claims, and the credit of a refund — each
 * read by the rail the payment was made on (rails/port.ts), through the user's own RPC,
 * never taken from the service's word. These functions ask the rail, record what the chain
 * showed on the intent's payment record, and say what it means; the intent's own state is
 * changed by the caller. Rail-neutral: what a rail reads differs (a memo in a token
 * account's history, an authorization's nonce), what it means does not.
 */
import { formatDecimal, parseDecimal } from "../../domain/money.js";
import type { Ctx } from "../context.js";
import { REFUND_PATIENCE_MS, refundVerdict, type RefundVerdict } from "../model/transitions.js";
import type { IntentAt, IntentIn, PaymentRecord } from "../model/types.js";
import type { ClaimReading, JournaledProof, Rail } from "../rails/port.js";
import type { ChainTx } from "./chain.js";

/** An intent whose proof may have moved money: its price and payee are known. */
type Paying = Pick<IntentIn<"unsettled" | "executed">, "quoteId" | "amount" | "payee">;

/**
 * The proof of the intent's current attempt as the journal knows it: its payment record, or
 * (journaled before payment records were) what the intent says, signed at `signedAt`.
 */
function journaledProof(intent: Paying, payment: PaymentRecord | undefined, signedAt: number): JournaledProof {
  return (
    payment ?? {
      quoteId: intent.quoteId,
      amount: intent.amount,
      payee: intent.payee,
      payer: null,
      mint: null,
      source: null,
      blockhash: null,
      lastValidHeight: null,
      signedAt,
    }
  );
}

/** The rail that follows a proof, or why there is none (a network this configuration no longer pays on). */
async function railOf(c: Ctx, p: JournaledProof): Promise<Rail | { why: string }> {
  try {
    return await c.rails.forPayment(p);
  } catch (e) {
    return { why: `no rail can read its network's chain (${(e as Error).message.slice(0, 200)})` };
  }
}

export type FateVerdict =
  | { kind: "landed"; tx: ChainTx; problems: string[] }
  | { kind: "never"; why: string }
  | { kind: "unknown"; why: string };

/**
 * Did the proof of the intent's current attempt land, or can it never land? Asked when the
 * service refused the proof (unsettled), or gave no answer to the request it travelled with (signed).
 */
export async function establishFate(c: Ctx, intent: IntentIn<"signed" | "unsettled">): Promise<FateVerdict> {
  const payment = await c.journal.payment(intent.quoteId);
  const proof = journaledProof(intent, payment, intent.updatedAt);
  const rail = await railOf(c, proof);
  if (!("kind" in rail)) return { kind: "unknown", why: rail.why };
  const fate = await rail.fate(proof);
  const now = c.now();
  const learned = fate.learned ?? {};
  if (fate.kind === "landed") {
    await c.journal.updatePayment(proof.quoteId, { fate: "landed", tx: fate.tx.signature, checkedAt: now, ...learned });
    return { kind: "landed", tx: fate.tx, problems: fate.problems };
  }
  // A payment that can never land is still watched a while (released-watch.ts).
  await c.journal.updatePayment(proof.quoteId, {
    checkedAt: now,
    ...learned,
    ...(fate.kind === "never" ? { fate: "never" as const, watch: true } : {}),
  });
  if (fate.kind === "unknown") return { kind: "unknown", why: fate.why };
  // Its lifetime may be why it could not land: the next proof is signed with a fresh one.
  rail.dropLifetime();
  return { kind: "never", why: fate.why };
}

export type SettlementVerdict =
  | { kind: "verified"; tx: string; note?: string }
  | { kind: "mismatch"; tx?: string; detail: string }
  | { kind: "pending"; why: string };

/** What our RPC read of a claimed settlement, for the proof and transaction it was read for. */
export interface ClaimRead {
  quoteId: string;
  paymentTx: string | null;
  reading: ClaimReading;
}

/**
 * The chain's reading of the settlements several intents' services claimed, by intent id:
 * each rail's read together (rails/port.ts verifySettlements) where one check each took a
 * round trip. Only reads: checkSettlement(intent, read) judges and records each, as alone.
 * Left out: an intent whose rail cannot be had (checkSettlement says why) or reads one at a
 * time. Throws when a batch got no answer (a node that refuses batches).
 */
export async function readClaims(c: Ctx, intents: readonly IntentAt<"executed">[]): Promise<Map<string, ClaimRead>> {
  const byRail = new Map<Rail, { intent: IntentAt<"executed">; proof: JournaledProof }[]>();
  for (const intent of intents) {
    const proof = journaledProof(intent, await c.journal.payment(intent.quoteId), intent.createdAt);
    const rail = await railOf(c, proof);
    // A rail that reads one at a time is left to checkSettlement, at the reconciler's own pace.
    if ("kind" in rail && rail.verifySettlements) byRail.set(rail, [...(byRail.get(rail) ?? []), { intent, proof }]);
  }
  const reads = new Map<string, ClaimRead>();
  for (const [rail, items] of byRail) {
    const readings = await rail.verifySettlements!(
      items.map(({ intent, proof }) => ({ proof, claimedTx: intent.paymentTx })),
    );
    items.forEach(({ intent }, i) =>
      reads.set(intent.intentId, { quoteId: intent.quoteId, paymentTx: intent.paymentTx, reading: readings[i]! }),
    );
  }
  return reads;
}

/**
 * Checks a settlement the service reported (or, when it named no transaction, looks for one)
 * against what was priced. A claim the chain does not bear out is a mismatch once the proof
 * can never land and no transfer of it is on chain. `read`: the chain's reading of this
 * claim taken already (readClaims), used when it was read for this proof and transaction.
 */
export async function checkSettlement(
  c: Ctx,
  intent: IntentAt<"executed">,
  read?: ClaimRead,
): Promise<SettlementVerdict> {
  const payment = await c.journal.payment(intent.quoteId);
  const proof = journaledProof(intent, payment, intent.createdAt);
  const rail = await railOf(c, proof);
  if (!("kind" in rail)) return { kind: "pending", why: rail.why };
  const claim =
    read && read.quoteId === intent.quoteId && read.paymentTx === intent.paymentTx
      ? read.reading
      : await rail.verifySettlement(proof, intent.paymentTx);
  if (claim.kind === "unknown") return { kind: "pending", why: claim.why };
  let landed: { tx: ChainTx; problems: string[] };
  let note: string | undefined;
  if (claim.kind === "ours") landed = claim;
  else {
    const fate = await rail.fate(proof);
    if (fate.learned) await c.journal.updatePayment(proof.quoteId, fate.learned);
    if (fate.kind === "unknown") return { kind: "pending", why: fate.why };
    if (fate.kind === "never") {
      await c.journal.updatePayment(proof.quoteId, { fate: "never", checkedAt: c.now(), watch: true });
      return {
        kind: "mismatch",
        detail: `the service reported the payment settled${intent.paymentTx ? ` in ${intent.paymentTx}` : ""}, but no transfer for quote ${proof.quoteId} is on chain and none can land any more`,
      };
    }
    if (intent.paymentTx && intent.paymentTx !== fate.tx.signature)
      note = `the service named transaction ${intent.paymentTx}; the payment on chain is ${fate.tx.signature}`;
    landed = fate;
  }
  const { tx, problems } = landed;
  await c.journal.updatePayment(proof.quoteId, { fate: "landed", tx: tx.signature, checkedAt: c.now() });
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
      // A refund comes back to the account the payment came from, on the payment's rail.
      const proof = journaledProof(intent, await c.journal.payment(intent.quoteId), intent.createdAt);
      const rail = await railOf(c, proof);
      const inflow = "kind" in rail ? await rail.refundInflow(proof, intent.payee, claim.transaction) : undefined;
      if (inflow === undefined) return { credit: intent.refundCredit, settled: false };
      landed = inflow;
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
