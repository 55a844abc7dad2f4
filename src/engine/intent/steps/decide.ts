/**
 * The decide step (from `quoted`, or `awaiting_approval` when a call comes back with the
 * approvalId): everything before anything is signed — the quote still valid, the budget
 * decision, a person's approval when the limits ask for one, the challenge checked against
 * the quote — then the reservation, taken in one journal transaction with the usage it is
 * decided on. The checks are also the fast path's (steps/price-and-sign.ts).
 */
import { formatDecimal } from "../../../domain/money.js";
import { ensureApproved } from "../../approvals/records.js";
import type { Ctx } from "../../context.js";
import { challengeFor, type CheckedChallenge } from "../../payment/challenge.js";
import { paidError } from "../../errors.js";
import { evaluateBudget } from "../../budget/policy.js";
import type { IntentIn } from "../../model/types.js";
import type { HeldIntent } from "../held.js";
import type { Move, Reservation, StepResult } from "../moves.js";
import { budgetRefusal } from "../failures.js";
import { originRefused, standingOf } from "../resource.js";

type Charge = Parameters<typeof evaluateBudget>[2];

/** An intent with its price recorded, not yet reserved. */
export type Priced = IntentIn<"quoted" | "awaiting_approval">;

/** What the budget said before the reservation: the charge it was asked about, and whether a person must approve. */
export interface Precheck {
  charge: Charge;
  withTotal: boolean;
  needsApproval: boolean;
}

/** The quote still valid, the origin still allowed, the limits not exceeded; throws the refusal. Writes nothing. */
export async function precheck(c: Ctx, intent: Priced): Promise<Precheck> {
  if (c.now() >= intent.quoteExpiresAt) {
    throw paidError("quote_expired", {
      quoteId: intent.quoteId,
      stage: "decide",
      expiredAt: new Date(intent.quoteExpiresAt).toISOString(),
    });
  }
  const charge = {
    action: intent.action,
    amount: intent.amount,
    payee: intent.payee ?? undefined,
    agentBudget: intent.agentBudget ?? undefined,
    origin: intent.kind === "fetch" ? intent.origin : undefined,
  };
  // The human's allowOrigins may have changed since the price was recorded.
  if (intent.kind === "fetch" && standingOf(c, intent.origin) === "refused") throw originRefused(c, intent.origin);
  const withTotal = c.config.limits.maxTotal !== undefined;
  const pre = evaluateBudget(c.config.limits, await c.journal.usage(c.now(), withTotal), charge);
  if (!pre.ok) throw budgetRefusal(pre, { quoteId: intent.quoteId });
  return { charge, withTotal, needsApproval: pre.needsApproval };
}

/**
 * The move that reserves the amount under the limits — decided again in the journal's
 * transaction, over the usage it is taken with — and records the checked requirements (and,
 * for an action, the resource its challenge named).
 */
export function reservation(
  c: Ctx,
  intent: Priced,
  pre: Precheck,
  { requirements, offer }: CheckedChallenge,
): Move & Required<Pick<Move, "patch">> & { reserve: Reservation } {
  const payee = intent.payee ?? requirements.payTo;
  return {
    outcome: "reserve",
    patch: { requirements, payee, ...(offer ? { offer } : {}) },
    reserve: {
      amount: intent.amount,
      decide: (usage) => evaluateBudget(c.config.limits, usage, { ...pre.charge, payee }),
      withTotal: pre.withTotal,
    },
    note: { step: "reserved", data: { amount: formatDecimal(intent.amount), payee, decision: "within limits" } },
    boundaries: ["reserved"],
  };
}

/** Budget decision, approval, challenge and drift checks, then the reservation. Signs nothing. */
export async function decide(h: HeldIntent, intent: Priced): Promise<StepResult> {
  h.checkCancelled(intent.kind === "fetch" ? "after_price" : "after_quote");
  const { c } = h;
  const pre = await precheck(c, intent);
  if (pre.needsApproval) {
    // A person's answer is its own move (recorded, then this step runs again with it).
    const asked = await ensureApproved(c, intent, h.opts);
    if (asked) return asked;
  }
  c.rails.warm(); // the lifetime to sign with (Solana: a blockhash), fetched beside the challenge's requests
  h.checkCancelled("before_reserve");
  // A fetch's challenge is its 402's requirement, read and checked when it was priced (steps/probe.ts).
  const checked =
    intent.kind === "fetch" ? { requirements: intent.requirements } : await challengeFor(c, intent, h.opts.signal);
  h.checkCancelled("before_reserve");
  return reservation(c, intent, pre, checked);
}
