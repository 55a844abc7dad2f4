/**
 * The send step (from `signed`, with /payments/confirm): hands the proof to the service and
 * records what it answers — settled, a settlement that does not match the quote, or a
 * refusal the chain must judge. A service without the endpoint gets the proof with the
 * execution request instead (steps/execute.ts).
 */
import { PaidActionError } from "../../errors.js";
import { quoteAmount } from "../../budget/policy.js";
import { serviceApi } from "../../service/api.js";
import type { HeldIntent } from "../held.js";
import { execute } from "./execute.js";
import { proofRefused } from "./establish.js";

/** Hands the proof to the service (it may settle from here on: the money is at risk). */
export async function send(h: HeldIntent): Promise<void> {
  const { c, intent } = h;
  const sentAt = c.now();
  const res = await serviceApi(c.client).confirmPayment(
    { quoteId: intent.quoteId!, paymentProof: intent.proof! },
    { idempotencyKey: intent.idemKey, trace: c.trace(intent) },
  );
  c.step("confirm_sent", intent);
  c.transcript(intent, "confirm", { status: res.status, body: res.ok ? res.body : res.error });
  if (res.ok) {
    const p = res.body;
    if (p.quoteId !== intent.quoteId || quoteAmount(p.amount) !== intent.amount) {
      const e = new PaidActionError(
        "payment_invalid",
        `the service confirmed a payment that does not match the quote (quote ${p.quoteId.slice(0, 64)}, amount ${p.amount.slice(0, 40)}); the budget stays held until a human checks transaction ${p.transaction.slice(0, 100)}`,
        { transaction: p.transaction },
      );
      await h.settle(
        "settlement_mismatch",
        e,
        { payment: p, paymentTx: p.transaction.slice(0, 128), settlement: "claimed" },
        { sentAt },
      );
      return;
    }
    await h.settle(
      "settled",
      null,
      { payment: p, paymentTx: p.transaction, settlement: "claimed" },
      { sentAt, claimedTx: p.transaction },
    );
    c.step("confirm_recorded", h.intent);
    return;
  }
  if (res.status === 404 || res.status === 405 || res.status === 501) return execute(h); // no confirm: the proof settles with the execution request
  if (res.error.code === "idempotency_in_progress")
    throw new PaidActionError(
      "outcome_unknown",
      "the payment is still being settled by the service; the engine will check again",
      {},
      true,
    );
  await proofRefused(h, res.status, res.error, sentAt);
}
