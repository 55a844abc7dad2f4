/**
 * The decide step (from `quoted`): everything before anything is signed — the quote still
 * valid, the budget decision, a person's approval when the limits ask for one, the challenge
 * checked against the quote — then the reservation, taken in one journal transaction with
 * the usage it was decided on. The checks are also the fast path's (steps/price-and-sign.ts).
 */
import { formatDecimal } from "../../../domain/money.js";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { ensureApproved } from "../../approvals/records.js";
import { challengeFor } from "../../payment/challenge.js";
import { PaidActionError } from "../../errors.js";
import { evaluateBudget } from "../../budget/policy.js";
import { transition } from "../../model/transitions.js";
import type { IntentPatch, PaymentRecord } from "../../model/types.js";
import type { HeldIntent } from "../held.js";
import { originRefused, standingOf } from "../resource.js";

type Charge = Parameters<typeof evaluateBudget>[2];

/** What the budget said before the reservation: the charge it was asked about, and whether a person must approve. */
export interface Precheck {
  charge: Charge;
  withTotal: boolean;
  needsApproval: boolean;
}

/** The quote still valid, the origin still allowed, the limits not exceeded; throws the refusal. Writes nothing. */
export async function precheck(h: HeldIntent): Promise<Precheck> {
  const { c } = h;
  const intent = h.intent;
  if (c.now() >= intent.quoteExpiresAt!) {
    throw new PaidActionError(
      "quote_expired",
      `quote ${intent.quoteId} expired at ${new Date(intent.quoteExpiresAt!).toISOString()} before it was paid; nothing was signed — call again for a new quote`,
      { quoteId: intent.quoteId },
    );
  }
  const charge = {
    action: intent.action,
    amount: intent.amount!,
    payee: intent.payee ?? undefined,
    agentBudget: intent.agentBudget ?? undefined,
    origin: intent.origin ?? undefined,
  };
  // The human's allowOrigins may have changed since the price was recorded.
  if (intent.kind === "fetch" && standingOf(c, intent.origin!) === "refused") throw originRefused(c, intent.origin!);
  const withTotal = c.config.limits.maxTotal !== undefined;
  const pre = evaluateBudget(c.config.limits, await c.journal.usage(c.now(), withTotal), charge);
  if (!pre.ok) throw new PaidActionError(pre.code, pre.message, { quoteId: intent.quoteId, ...pre.context });
  return { charge, withTotal, needsApproval: pre.needsApproval };
}

/**
 * Reserves the amount under the limits, in one transaction with the usage it is decided on,
 * committing `patch` with it (and the signed proof's payment record, on the fast path).
 * Throws the budget's refusal; writes nothing then.
 */
export async function reserveFor(
  h: HeldIntent,
  pre: Precheck,
  requirements: PaymentRequirements,
  patch: IntentPatch,
  signed?: PaymentRecord,
): Promise<void> {
  const { c } = h;
  const intent = h.intent;
  const payee = intent.payee ?? requirements.payTo;
  const now = c.now();
  const written: IntentPatch = { ...patch, requirements, payee };
  const reserved = await c.journal.reserve(
    intent.intentId,
    intent.amount!,
    now,
    (usage) => evaluateBudget(c.config.limits, usage, { ...pre.charge, payee }),
    written,
    pre.withTotal,
    { state: intent.state, owner: h.owner },
    signed,
  );
  if (!reserved.ok)
    throw new PaidActionError(reserved.code, reserved.message, { quoteId: intent.quoteId, ...reserved.context });
  // What the reservation wrote (port.ts: the patch, the budget's columns and updated_at), as
  // sign.ts keeps its write: no read back, a round trip less on PostgreSQL.
  h.intent = {
    ...intent,
    ...written,
    budgetState: "reserved",
    budgetAmount: intent.amount!,
    budgetAt: now,
    updatedAt: now,
  };
}

/** Budget decision, approval, challenge and drift checks, then the reservation. Signs nothing. */
export async function decide(h: HeldIntent): Promise<void> {
  const { c } = h;
  const pre = await precheck(h);
  if (pre.needsApproval) await ensureApproved(c, h, h.opts);
  c.lifetimes.warm(); // the blockhash to sign with, fetched beside the challenge's requests
  h.checkCancelled("before the payment was reserved");
  // A fetch's challenge is its 402's requirement, read and checked when it was priced (steps/probe.ts).
  const requirements =
    h.intent.kind === "fetch" ? h.intent.requirements! : await challengeFor(c, h.intent, h.opts.signal);
  h.checkCancelled("before the payment was reserved");
  await reserveFor(h, pre, requirements, { state: transition(h.intent.state, "reserve").state });
  c.transcript(h.intent, "reserved", {
    amount: formatDecimal(h.intent.amount!),
    payee: h.intent.payee,
    decision: "within limits",
  });
  c.step("reserved", h.intent);
}
