/**
 * The watch on payments the chain showed could never land. Their reservation was released
 * (and their intent may have paid with a fresh proof since), so a transfer that lands after
 * all would be money the caps no longer count. Each is looked at again by the rail it was
 * made on, through our own RPC, until that is beyond doubt (rails/port.ts `watch`: Solana,
 * our finalized height well past its last valid height; EVM, our newest block well past its
 * validBefore with the nonce unused): a late landing moves its intent
 * to spent — counted against the caps — and to a person, with the evidence. It should never
 * happen; the watch is what makes sure it is seen if it does. The loop and what it records
 * are the same on every rail.
 */
import { formatDecimal } from "../../domain/money.js";
import type { ChainTx } from "./chain.js";
import { LEASE_MS, type Ctx } from "../context.js";
import { paidError } from "../errors.js";
import { resting, transition } from "../model/transitions.js";
import type { Intent, IntentPatch, PaymentRecord } from "../model/types.js";

/** Payments looked at in one pass, oldest first. */
const PER_PASS = 50;

export interface WatchPass {
  watched: number;
  /** Late landings recorded in this pass. */
  landed: number;
}

/** One look at every watched payment (at most PER_PASS). `owner` is this process's lease identity. */
export async function watchReleased(c: Ctx, owner: string): Promise<WatchPass> {
  const due = await c.journal.watchedPayments(PER_PASS);
  if (due.length === 0) return { watched: 0, landed: 0 };
  let landed = 0;
  for (const p of due) {
    const rail = await c.rails.forPayment(p).catch((e: unknown) => {
      // A network this configuration no longer pays on: still watched, once it does again.
      c.d.log(`payment for quote ${p.quoteId} cannot be watched: ${(e as Error).message}`);
      return undefined;
    });
    if (!rail) continue;
    const reading = await rail.watch(p);
    if (reading.kind === "landed") {
      if (await lateLanding(c, owner, p, reading.tx, reading.problems)) landed++;
    } else {
      await c.journal.updatePayment(p.quoteId, {
        checkedAt: c.now(),
        ...(reading.kind === "done" ? { watch: false } : {}),
      });
    }
  }
  return { watched: due.length, landed };
}

/**
 * Records a late landing: the payment landed, its intent counts it as spent and a person is
 * told. Waits (returns false, the watch goes on) while a call drives the intent.
 */
async function lateLanding(c: Ctx, owner: string, p: PaymentRecord, tx: ChainTx, problems: string[]): Promise<boolean> {
  const now = c.now();
  const found = { fate: "landed" as const, tx: tx.signature, checkedAt: now, watch: false };
  const known = await c.journal.intent(p.intentId);
  if (!known) {
    // A payment of no intent: the audit reports it (orphan_payment).
    await c.journal.updatePayment(p.quoteId, found);
    c.d.log(
      `payment for quote ${p.quoteId} landed late in ${tx.signature}, and its intent ${p.intentId} is not in the journal`,
    );
    return true;
  }
  if (!resting(known.state) || !(await c.journal.claim(known.intentId, owner, now, LEASE_MS))) return false;
  try {
    const intent = await c.journal.intent(known.intentId);
    if (!intent || !resting(intent.state)) return false;
    const patch = lateLandingPatch(intent, p, tx, problems);
    if (
      !(await c.journal.update(
        intent.intentId,
        patch,
        now,
        { state: intent.state, owner },
        { quoteId: p.quoteId, patch: found },
      ))
    )
      return false;
    c.transcript(intent, "late_landing", {
      quoteId: p.quoteId,
      transaction: tx.signature,
      slot: tx.slot.toString(),
      amount: formatDecimal(p.amount),
      problems,
    });
    c.d.log(`intent ${intent.intentId} needs attention: ${patch.attention}`);
    return true;
  } finally {
    await c.journal.release(known.intentId, owner);
  }
}

/**
 * What a late landing does to its intent (pure): the payment counts as spent on top of what
 * the intent already holds (unless it is that very amount, still held), the intent stops
 * where it is for a person (an executed one keeps being followed), with the evidence.
 */
export function lateLandingPatch(
  intent: Intent,
  p: PaymentRecord,
  tx: ChainTx,
  problems: readonly string[],
): IntentPatch {
  const current = intent.quoteId === p.quoteId;
  const held = intent.budgetState === "reserved" || intent.budgetState === "spent";
  const heldAmount = held ? (intent.budgetAmount ?? 0n) : 0n;
  const evidence =
    `the payment for quote ${p.quoteId} (${formatDecimal(p.amount)} USDC, attempt ${p.attempt}), which the chain had shown could never land, ` +
    `landed in transaction ${tx.signature} (slot ${tx.slot})${problems.length > 0 ? `, not as priced (${problems.join("; ")})` : ""}: it counts as spent` +
    `${current ? "" : `, on top of ${formatDecimal(heldAmount)} USDC held for attempt ${intent.attempt}`}; a person should ask the service for the execution or a refund`;
  const patch: IntentPatch = {
    budgetState: "spent",
    budgetAmount: current && held ? intent.budgetAmount : heldAmount + p.amount,
    budgetAt: intent.budgetAt ?? p.signedAt,
    attention: [intent.attention, evidence].filter(Boolean).join("; "),
  };
  if (current)
    Object.assign(patch, { paymentTx: tx.signature, settlement: problems.length > 0 ? "mismatch" : "verified" });
  patch.state = transition(intent.state, "landed_late").state;
  if (intent.state !== "executed") {
    const error = paidError("payment_failed", {
      problem: "landed",
      quoteId: p.quoteId,
      transaction: tx.signature,
      detail: evidence,
    });
    Object.assign(patch, {
      nextPollAt: null,
      error: { code: error.code, message: error.message, context: error.context, retryable: false },
    });
  }
  return patch;
}
