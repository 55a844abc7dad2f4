/**
 * The send step (from `signed`): hands the proof to the service. By default it travels with
 * the execution request (steps/execute.ts), which settles it: one request for both. With
 * `confirmPayments` it goes to /payments/confirm first, and what that answers is recorded —
 * settled, a settlement that does not match the quote, or a refusal the chain must judge; a
 * service without the endpoint then gets the proof with the execution request after all.
 */
import type { IntentIn } from "../../model/types.js";
import { serviceApi } from "../../service/api.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { confirmationVerdict } from "../verdicts.js";
import { execute } from "./execute.js";
import { proofRefused } from "./establish.js";

/** Hands the proof to the service (it may settle from here on: the money is at risk). */
export async function send(h: HeldIntent, intent: IntentIn<"signed", "action">): Promise<Move> {
  const { c } = h;
  // The fast path: the proof travels with the execution request, which settles it.
  if (!c.config.confirmPayments) return execute(h, intent);
  const sentAt = c.now();
  const res = await serviceApi(c.client).confirmPayment(
    { quoteId: intent.quoteId, paymentProof: intent.proof },
    { idempotencyKey: intent.idemKey, trace: c.trace(intent) },
  );
  c.step("confirm_sent", intent);
  c.transcript(intent, "confirm", { status: res.status, body: res.ok ? res.body : res.error });
  const verdict = confirmationVerdict(res, intent);
  switch (verdict.kind) {
    case "settled": {
      const p = verdict.payment;
      return {
        outcome: "settled",
        patch: { payment: p, paymentTx: p.transaction, settlement: "claimed" },
        payment: { sentAt, claimedTx: p.transaction },
        boundaries: ["confirm_recorded"],
      };
    }
    case "mismatch": {
      const p = verdict.payment;
      return {
        outcome: "settlement_mismatch",
        error: verdict.error,
        patch: { payment: p, paymentTx: p.transaction.slice(0, 128), settlement: "claimed" },
        payment: { sentAt },
      };
    }
    case "no_endpoint":
      return execute(h, intent); // the proof settles with the execution request
    case "in_progress":
      return refusal(intent.state, verdict.error);
    case "refused":
      return proofRefused(intent, verdict.refusal.status, verdict.refusal.error, sentAt);
  }
}
