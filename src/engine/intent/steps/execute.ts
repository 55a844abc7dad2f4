/**
 * The execute step (from `paid`, or from `signed` when the proof travels with the request):
 * asks the service to run the paid execution and records it — or adopts the one the quote
 * already funded, or records why a paid intent now needs a human.
 */
import { FINAL_STATUSES, type Execution } from "../../../domain/wire.js";
import { settledTransaction } from "../answers.js";
import { POLL_START_MS } from "../../context.js";
import { serviceApi } from "../../service/api.js";
import type { HeldIntent } from "../held.js";
import { executionProblem, executionRefusalVerdict, isOurs, type ForAHuman } from "../verdicts.js";
import { proofRefused } from "./establish.js";

export async function execute(h: HeldIntent): Promise<void> {
  const { c, intent } = h;
  const sentAt = c.now();
  const res = await serviceApi(c.client).createExecution(
    { action: intent.action, input: intent.input },
    { quoteId: intent.quoteId!, paymentProof: intent.proof, idempotencyKey: intent.idemKey, trace: c.trace(intent) },
  );
  // From `signed` the proof travelled with this request: it was handed over, and answered, here.
  if (intent.state === "signed") c.step("confirm_sent", intent);
  c.step("execution_sent", intent);
  c.transcript(intent, "execution", { status: res.status, body: res.ok ? res.body : res.error });
  if (res.ok) return recordExecution(h, res.body, res.headers["payment-response"], sentAt);
  const verdict = executionRefusalVerdict(res, intent);
  switch (verdict.kind) {
    case "in_progress":
      throw verdict.error;
    case "proof_refused":
      return proofRefused(h, res.status, res.error, sentAt); // the proof travelled with this request
    case "maybe_ours": {
      // The quote already funded an execution: if it is ours, adopt it.
      const get = await serviceApi(c.client).getExecution(verdict.executionId, { trace: c.trace(intent) });
      if (get.ok && isOurs(get.body, intent)) return recordExecution(h, get.body, undefined, sentAt);
      return forAHuman(h, verdict.otherwise);
    }
    case "for_a_human":
      return forAHuman(h, verdict);
  }
}

/** A paid intent whose execution the service will not give: recorded for a human. */
async function forAHuman(h: HeldIntent, { error, attention }: ForAHuman): Promise<void> {
  // A note already there (a refused payment that landed, say) is kept: the human reads both.
  const earlier = h.intent.attention;
  await h.settle("refused_after_payment", error, { attention: earlier ? `${earlier}; then ${attention}` : attention });
}

export async function recordExecution(
  h: HeldIntent,
  e: Execution,
  paymentResponse: string | undefined,
  sentAt: number,
): Promise<void> {
  const { c, intent } = h;
  const problem = executionProblem(e, intent);
  if (problem) return forAHuman(h, problem);
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
  if (payment) c.step("confirm_recorded", h.intent); // the proof's settlement, recorded with the execution
  c.step("execution_recorded", h.intent);
  c.executionChanged(h.intent, null);
  if (!FINAL_STATUSES.has(e.status) || h.intent.settlement !== "verified") c.events.emit("scheduled");
}
