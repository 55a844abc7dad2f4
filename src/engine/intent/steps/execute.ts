/**
 * The execute step (from `paid`, or from `signed` when the proof travels with the request):
 * asks the service to run the paid execution and records it — or adopts the one the quote
 * already funded, or records why a paid intent now needs a human.
 */
import { FINAL_STATUSES, type Execution } from "../../../domain/wire.js";
import { settledTransaction } from "../answers.js";
import { POLL_START_MS } from "../../context.js";
import { PaidActionError } from "../../errors.js";
import { serviceApi } from "../../service/api.js";
import type { HeldIntent } from "../held.js";
import { proofRefused } from "./establish.js";

export async function execute(h: HeldIntent): Promise<void> {
  const { c, intent } = h;
  const sentAt = c.now();
  const res = await serviceApi(c.client).createExecution(
    { action: intent.action, input: intent.input },
    { quoteId: intent.quoteId!, paymentProof: intent.proof, idempotencyKey: intent.idemKey, trace: c.trace(intent) },
  );
  c.step("execution_sent", intent);
  c.transcript(intent, "execution", { status: res.status, body: res.ok ? res.body : res.error });
  if (res.ok) return recordExecution(h, res.body, res.headers["payment-response"], sentAt);
  if (res.error.code === "idempotency_in_progress")
    throw new PaidActionError(
      "outcome_unknown",
      "the execution request is still running at the service; the engine will check again",
      {},
      true,
    );
  if (intent.state === "signed") return proofRefused(h, res.status, res.error, sentAt); // the proof travelled with this request
  if (res.status === 402) {
    await h.settle(
      "refused_after_payment",
      new PaidActionError(
        "payment_loop",
        `the service asked for payment again after quote ${intent.quoteId} was paid${intent.paymentTx ? ` (transaction ${intent.paymentTx})` : ""}; nothing more was paid — a human should check`,
        { quoteId: intent.quoteId, transaction: intent.paymentTx },
      ),
      { attention: "402 after payment" },
    );
    return;
  }
  if (res.error.code === "quote_consumed" && typeof res.error.executionId === "string") {
    // The quote already funded an execution: if it is ours, adopt it.
    const get = await serviceApi(c.client).getExecution(res.error.executionId, { trace: c.trace(intent) });
    if (get.ok && get.body.quoteId === intent.quoteId && get.body.action === intent.action)
      return recordExecution(h, get.body, undefined, sentAt);
  }
  await h.settle(
    "refused_after_payment",
    new PaidActionError(
      "execution_rejected",
      `the payment settled but the service refused the execution (HTTP ${res.status} ${res.error.code}): ${res.error.message}; a human should ask the service for the execution or a refund`,
      { serviceCode: res.error.code, quoteId: intent.quoteId, transaction: intent.paymentTx },
    ),
    { attention: `execution refused: ${res.error.code}` },
  );
}

export async function recordExecution(
  h: HeldIntent,
  e: Execution,
  paymentResponse: string | undefined,
  sentAt: number,
): Promise<void> {
  const { c, intent } = h;
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(e.executionId)) {
    await h.settle(
      "refused_after_payment",
      new PaidActionError("service_error", "the service returned an execution id with characters an id cannot have"),
      { attention: "bad execution id" },
    );
    return;
  }
  if (e.action !== intent.action || (e.quoteId !== undefined && e.quoteId !== intent.quoteId)) {
    await h.settle(
      "refused_after_payment",
      new PaidActionError(
        "service_error",
        `the service returned an execution for ${e.action.slice(0, 60)} / ${String(e.quoteId).slice(0, 64)}, not for this intent`,
      ),
      { attention: "execution mismatch" },
    );
    return;
  }
  const claimed = intent.paymentTx ?? settledTransaction(paymentResponse);
  // With /payments/confirm, the payment record was completed then; without it, now.
  const payment = intent.state === "signed" ? { sentAt, ...(claimed ? { claimedTx: claimed } : {}) } : undefined;
  await h.settle(
    "executed",
    null,
    {
      executionId: e.executionId,
      execution: e,
      execStatus: e.status,
      output: e.output ?? null,
      paymentTx: claimed ?? null,
      settlement: intent.settlement === "none" ? "claimed" : intent.settlement,
      attention: intent.attention,
      // Followed until the execution is final and its settlement is verified on chain.
      nextPollAt: c.now() + POLL_START_MS,
      pollIntervalMs: POLL_START_MS,
      // The lease ends with this commit: one fsync fewer per paid call.
      leaseOwner: null,
      leaseUntil: null,
    },
    payment,
  );
  c.step("execution_recorded", h.intent);
  c.executionChanged(h.intent, null);
  if (!FINAL_STATUSES.has(e.status) || h.intent.settlement !== "verified") c.events.emit("scheduled");
}
