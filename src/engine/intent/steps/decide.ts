/**
 * The decide step (from `quoted`): everything before anything is signed — the quote still
 * valid, the budget decision, a person's approval when the limits ask for one, the challenge
 * checked against the quote — then the reservation, taken in one journal transaction with
 * the usage it was decided on.
 */
import { formatDecimal } from "../../../domain/money.js";
import { ensureApproved } from "../../approvals/records.js";
import { challengeFor } from "../../payment/challenge.js";
import { PaidActionError } from "../../errors.js";
import { evaluateBudget } from "../../budget/policy.js";
import { transition } from "../../model/transitions.js";
import type { HeldIntent } from "../held.js";
import { originRefused, standingOf } from "../resource.js";

/** Budget decision, approval, challenge and drift checks, then the reservation. Signs nothing. */
export async function decide(h: HeldIntent): Promise<void> {
  const { c } = h;
  const intent = h.intent;
  const amount = intent.amount!;
  if (c.now() >= intent.quoteExpiresAt!) {
    throw new PaidActionError(
      "quote_expired",
      `quote ${intent.quoteId} expired at ${new Date(intent.quoteExpiresAt!).toISOString()} before it was paid; nothing was signed — call again for a new quote`,
      { quoteId: intent.quoteId },
    );
  }
  const charge = {
    action: intent.action,
    amount,
    payee: intent.payee ?? undefined,
    agentBudget: intent.agentBudget ?? undefined,
    origin: intent.origin ?? undefined,
  };
  // The human's allowOrigins may have changed since the price was recorded.
  if (intent.kind === "fetch" && standingOf(c, intent.origin!) === "refused") throw originRefused(c, intent.origin!);
  const withTotal = c.config.limits.maxTotal !== undefined;
  const pre = evaluateBudget(c.config.limits, await c.journal.usage(c.now(), withTotal), charge);
  if (!pre.ok) throw new PaidActionError(pre.code, pre.message, { quoteId: intent.quoteId, ...pre.context });
  if (pre.needsApproval) await ensureApproved(c, h, h.opts);
  h.checkCancelled("before the payment was reserved");
  // A fetch's challenge is its 402's requirement, read and checked when it was priced (steps/probe.ts).
  const requirements = intent.kind === "fetch" ? intent.requirements! : await challengeFor(c, h.intent, h.opts.signal);
  h.checkCancelled("before the payment was reserved");
  const payee = h.intent.payee ?? requirements.payTo;
  const reserved = await c.journal.reserve(
    intent.intentId,
    amount,
    c.now(),
    (usage) => evaluateBudget(c.config.limits, usage, { ...charge, payee }),
    { state: transition(h.intent.state, "reserve").state, requirements, payee },
    withTotal,
    { state: h.intent.state, owner: h.owner },
  );
  if (!reserved.ok)
    throw new PaidActionError(reserved.code, reserved.message, { quoteId: intent.quoteId, ...reserved.context });
  h.intent = (await c.journal.intent(intent.intentId))!;
  c.transcript(h.intent, "reserved", { amount: formatDecimal(amount), payee, decision: "within limits" });
  c.step("reserved", h.intent);
}
