/**
 * The execute step (from `paid`, or from `signed` when the proof travels with the request):
 * asks the service to run the paid execution and records it — or adopts the one the quote
 * already funded, or records why a paid intent now needs a human. The service's signed
 * receipt in the answer's PAYMENT-RESPONSE (x402 offer-receipt) is checked and kept. A
 * request that gets no answer at all, on a resume, is for the chain to judge (unanswered.ts).
 */
import type { Execution } from "../../../domain/wire.js";
import type { Ctx } from "../../context.js";
import type { IntentIn } from "../../model/types.js";
import { settledTransaction } from "../answers.js";
import { keepReceipt } from "../../evidence/seller-word.js";
import { resourceUrlOf } from "../../payment/challenge.js";
import { readPaymentResponse } from "../../x402-http/challenge.js";
import { POLL_START_MS } from "../../context.js";
import { isCode } from "../../errors.js";
import { serviceApi, type ServiceApi } from "../../service/api.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { executionProblem, executionRefusalVerdict, isOurs, type ForAHuman } from "../verdicts.js";
import { proofRefused } from "./establish.js";
import { unanswered, withoutUnansweredNote } from "./unanswered.js";

/** An action whose proof has left: paid, or signed with the proof travelling with the execution request. */
type Executing = IntentIn<"paid" | "signed", "action">;

export async function execute(h: HeldIntent, intent: Executing): Promise<Move> {
  const { c } = h;
  const sentAt = c.now();
  let res: Awaited<ReturnType<ServiceApi["createExecution"]>>;
  try {
    res = await serviceApi(c.client).createExecution(
      { action: intent.action, input: intent.input },
      { quoteId: intent.quoteId, paymentProof: intent.proof, idempotencyKey: intent.idemKey, trace: c.trace(intent) },
    );
  } catch (e) {
    // No answer at all: a caller is answered at once (the money in flight); a resume asks the chain.
    if (h.resuming && isCode(e, "service_unavailable")) return unanswered(h, intent, e);
    throw e;
  }
  // From `signed` the proof travelled with this request: it was handed over, and answered, here.
  if (intent.state === "signed") c.step("confirm_sent", intent);
  c.step("execution_sent", intent);
  c.transcript(intent, "execution", { status: res.status, body: res.ok ? res.body : res.error });
  if (res.ok) {
    await keepServiceReceipt(c, intent, res.headers["payment-response"]);
    return recordExecution(c, intent, res.body, res.headers["payment-response"], sentAt);
  }
  const verdict = executionRefusalVerdict(res, intent);
  switch (verdict.kind) {
    case "in_progress":
      return refusal(intent.state, verdict.error);
    case "proof_refused":
      return proofRefused(intent, res.status, res.error, sentAt); // the proof travelled with this request
    case "maybe_ours": {
      // The quote already funded an execution: if it is ours, adopt it.
      const get = await serviceApi(c.client).getExecution(verdict.executionId, { trace: c.trace(intent) });
      if (get.ok && isOurs(get.body, intent)) return recordExecution(c, intent, get.body, undefined, sentAt);
      return forAHuman(intent, verdict.otherwise);
    }
    case "for_a_human":
      return forAHuman(intent, verdict);
  }
}

/**
 * The service's signed receipt, when its paid answer's PAYMENT-RESPONSE carries one: checked
 * against the offer kept, the payment, and the resource the challenge named — and kept, with
 * the check, whatever it says. It decides nothing: the execution is recorded either way.
 */
async function keepServiceReceipt(c: Ctx, intent: Executing, header: string | undefined): Promise<void> {
  const extensions = readPaymentResponse(header)?.extensions;
  if (!extensions) return;
  const answer = {
    intentId: intent.intentId,
    quoteId: intent.quoteId,
    url: resourceUrlOf(c, intent.offer?.resource?.url),
    network: intent.requirements.network,
    extensions,
    transaction: intent.paymentTx ?? settledTransaction(header) ?? null,
  };
  const kept = await keepReceipt(c.journal, answer, c.now());
  if (kept) c.transcript(intent, "seller", { receipt: kept.state });
}

/** A paid intent whose execution the service will not give: recorded for a human. */
function forAHuman(intent: Executing, { error, attention }: ForAHuman): Move {
  // A note already there (a refused payment that landed, say) is kept: the human reads both.
  const earlier = intent.attention;
  return {
    outcome: "refused_after_payment",
    error,
    patch: { attention: earlier ? `${earlier}; then ${attention}` : attention },
  };
}

/** The execution the service created for the intent, recorded — or, when it is not this intent's, a human's case. */
export function recordExecution(
  c: Ctx,
  intent: Executing,
  e: Execution,
  paymentResponse: string | undefined,
  sentAt: number,
): Move {
  const problem = executionProblem(e, intent);
  if (problem) return forAHuman(intent, problem);
  const claimed = intent.paymentTx ?? settledTransaction(paymentResponse);
  // With /payments/confirm, the payment record was completed then; without it, now.
  const payment = intent.state === "signed" ? { sentAt, ...(claimed ? { claimedTx: claimed } : {}) } : undefined;
  return {
    outcome: "executed",
    patch: {
      executionId: e.executionId,
      execution: e,
      execStatus: e.status,
      output: e.output ?? null,
      paymentTx: claimed ?? null,
      settlement: intent.settlement === "none" ? "claimed" : intent.settlement,
      // The service answered after all: a note about its silence is withdrawn (the transcript keeps it).
      attention: withoutUnansweredNote(intent.attention),
      // Followed until the execution is final and its settlement is verified on chain.
      nextPollAt: c.now() + POLL_START_MS,
      pollIntervalMs: POLL_START_MS,
      // The lease ends with this commit: one fsync fewer per paid call.
      leaseOwner: null,
      leaseUntil: null,
    },
    ...(payment ? { payment } : {}),
    // The proof's settlement, when it travelled with the request, is recorded with the execution.
    boundaries: payment ? ["confirm_recorded", "execution_recorded"] : ["execution_recorded"],
  };
}
