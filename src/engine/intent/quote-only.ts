/**
 * Quote only: prices an intent and says whether the limits would let it be paid now. Pays
 * nothing and records nothing in the journal (the call's transcript keeps the answer). It
 * prices while payments are frozen too, and then says they are.
 */
import { formatDecimal } from "../../domain/money.js";
import type { Ctx } from "../context.js";
import { paidError } from "../errors.js";
import { budgetRefusal } from "./failures.js";
import { frozenError } from "./freeze.js";
import { validateRequest } from "./input.js";
import { quoteRefusal } from "./answers.js";
import { callCeiling, evaluateBudget, quoteAmount } from "../budget/policy.js";
import { quotedPayee } from "../rails/choose.js";
import { serviceApi } from "../service/api.js";
import type { PayRequest } from "../model/types.js";

export async function quoteOnly(c: Ctx, req: Omit<PayRequest, "intentKey" | "approvalId">, callId?: string) {
  const { agentBudget } = validateRequest(req);
  const { ceiling } = callCeiling(c.config.limits, req.action, agentBudget);
  const res = await serviceApi(c.client).quote(
    { action: req.action, input: req.input, budget: { amount: formatDecimal(ceiling), currency: "USDC" } },
    { idempotencyKey: c.d.newId("qtk") },
  );
  if (callId) c.d.transcripts.append(callId, "quote", { status: res.status, body: res.ok ? res.body : res.error });
  if (!res.ok) throw quoteRefusal(res.status, res.error);
  const amount = quoteAmount(res.body.amount);
  if (amount === undefined || res.body.currency !== "USDC") {
    throw paidError("quote_drift", {
      problem: "quote",
      detail: `the service quoted an amount that is not a USDC decimal (${JSON.stringify(res.body.amount).slice(0, 40)} ${String(res.body.currency).slice(0, 10)})`,
    });
  }
  const payee = quotedPayee(res.body.paymentRequirement.accepts, c.rails.networks);
  const decision = evaluateBudget(
    c.config.limits,
    await c.journal.usage(c.d.now(), c.config.limits.maxTotal !== undefined),
    { action: req.action, amount, payee, agentBudget },
  );
  const freeze = await c.journal.frozen();
  const stop = freeze ? frozenError(freeze) : decision.ok ? undefined : budgetRefusal(decision);
  return {
    quoteId: res.body.quoteId,
    action: res.body.action,
    amount: formatDecimal(amount),
    currency: "USDC" as const,
    expiresAt: res.body.expiresAt,
    payee: payee ?? null,
    breakdown: (res.body as Record<string, unknown>).breakdown,
    payable: !stop,
    needsApproval: decision.ok ? decision.needsApproval : false,
    refusal: stop ? { code: stop.code, message: stop.message, ...stop.context } : undefined,
  };
}
