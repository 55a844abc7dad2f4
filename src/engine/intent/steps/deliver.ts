/**
 * A fetch's steps after signing. `deliver` (from `signed`): the request sent again with the
 * proof in `PAYMENT-SIGNATURE`; an answer below 400 is the resource, delivered — kept, with
 * the settlement `PAYMENT-RESPONSE` claims, for the reconciler to verify on chain. Anything
 * else after the proof left (an error, another 402, no answer) may still have been settled:
 * the chain decides (steps/establish.ts), and nothing is signed again meanwhile.
 * `undelivered` (from `paid`): the chain shows the payment landed but the resource was not
 * delivered — a person looks; it is never paid twice.
 */
import { paidError } from "../../errors.js";
import { keepReceipt } from "../../evidence/seller-word.js";
import { POLL_START_MS } from "../../context.js";
import type { IntentIn } from "../../model/types.js";
import { asError } from "../failures.js";
import { readPaymentResponse } from "../../x402-http/challenge.js";
import type { FetchedResponse } from "../../x402-http/http.js";
import { keptHeaders } from "../../x402-http/response.js";
import { fetchResource, keepResponse } from "../resource.js";
import type { HeldIntent } from "../held.js";
import type { Move } from "../moves.js";
import { proofRefused } from "./establish.js";

export async function deliver(h: HeldIntent, intent: IntentIn<"signed", "fetch">): Promise<Move> {
  const { c } = h;
  const sentAt = c.now();
  let res: FetchedResponse;
  try {
    res = await fetchResource(c, intent, { proof: intent.proof });
  } catch (e) {
    // No answer: the proof may have reached the resource, and the resource may have settled it.
    c.step("confirm_sent", intent);
    const error = asError(e);
    return proofRefused(intent, 0, { code: error.code, message: error.message }, sentAt);
  }
  c.step("confirm_sent", intent);
  const settlement = readPaymentResponse(res.headers["payment-response"]);
  // The seller's extensions (a signed receipt naming the URL asked for) stay out of the transcript: kept apart, checked.
  const { extensions, ...settled } = settlement ?? {};
  c.transcript(intent, "request", {
    paid: true,
    status: res.status,
    headers: keptHeaders(res.headers),
    settlement: settlement ? settled : null,
  });
  if (res.status >= 400) {
    // The resource may have settled and still answered an error, or asked again: never paid twice.
    const response = await keepResponse(c, intent, res, false);
    const code = res.status === 402 ? "payment_required_again" : `http_${res.status}`;
    const message =
      res.status === 402
        ? "the resource answered 402 again to the paid request"
        : `the resource answered HTTP ${res.status} to the paid request`;
    return proofRefused(intent, res.status, { code, message, reason: settlement?.errorReason }, sentAt, { response });
  }
  const response = await keepResponse(c, intent, res, true);
  const claimed = settlement?.success && settlement.transaction ? settlement.transaction.slice(0, 128) : null;
  const { intentId, quoteId, request, requirements } = intent;
  const word = { intentId, quoteId, url: request.url, network: requirements.network, extensions, transaction: claimed };
  const sellerReceipt = await keepReceipt(c.journal, word, c.now());
  if (sellerReceipt) c.transcript(intent, "seller", { receipt: sellerReceipt.state });
  return {
    outcome: "executed",
    patch: {
      response,
      execStatus: "completed",
      paymentTx: claimed,
      settlement: "claimed",
      // Followed until its settlement is verified on chain.
      nextPollAt: c.now() + POLL_START_MS,
      pollIntervalMs: POLL_START_MS,
      leaseOwner: null,
      leaseUntil: null,
    },
    payment: { sentAt, ...(claimed ? { claimedTx: claimed } : {}) },
    boundaries: ["execution_recorded"],
  };
}

/** The payment landed, but the resource did not deliver: a person looks; nothing is paid again. */
export async function undelivered(_h: HeldIntent, intent: IntentIn<"paid", "fetch">): Promise<Move> {
  const error = paidError("execution_rejected", {
    problem: "undelivered",
    origin: intent.origin,
    answered: intent.response?.status ?? null,
    transaction: intent.paymentTx,
  });
  return { outcome: "refused_after_payment", error, patch: { attention: error.message } };
}
