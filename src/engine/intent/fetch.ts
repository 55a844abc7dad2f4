/**
 * A paid_fetch call: the agent's request checked (x402-http/request.ts), its origin looked up
 * in the human's allowOrigins before anything is sent, then the request sent without payment.
 * An answer other than 402 is the answer, nothing paid and nothing recorded. A 402 becomes an
 * intent of kind `fetch`, driven like any purchase (intent/drive.ts): priced from its 402,
 * the limits and approvals, the reservation, the proof journaled before it leaves, the paid
 * request, the chain's word on the money. A call with an intentKey (or an approvalId) that
 * names a recorded fetch continues it, and one already delivered is answered from the journal.
 */
import { formatDecimal } from "../../domain/money.js";
import { canonicalJson } from "../../domain/wire.js";
import { evaluateBudget } from "../budget/policy.js";
import { sellerWordOf } from "../evidence/seller-word.js";
import type { Ctx } from "../context.js";
import { paidError } from "../errors.js";
import type { FetchRequest, FetchResult, IntentAt, PayOptions, PayRequest } from "../model/types.js";
import { guardedFetch, type FetchedResponse } from "../x402-http/http.js";
import { readFetchInput, redactUrl, type OutboundRequest } from "../x402-http/request.js";
import { keptHeaders } from "../x402-http/response.js";
import type { Calls } from "./calls.js";
import { agentBudgetOf, checkIntentKey, fingerprint } from "./input.js";
import { findIntent } from "./record.js";
import { originRefused, standingOf } from "./resource.js";

/** The action name fetch purchases are recorded under (their origin tells them apart). */
export const FETCH_ACTION = "paid_fetch";

/** The answer and, apart, its body (the caller shapes it: parsed, cut, or kept as a resource). */
export interface FetchOutcome {
  result: FetchResult;
  body: Uint8Array;
}

export async function payFetch(c: Ctx, calls: Calls, req: FetchRequest, opts: PayOptions): Promise<FetchOutcome> {
  const read = readFetchInput({ url: req.url, method: req.method, headers: req.headers, body: req.body });
  if (!read.ok) throw paidError("invalid_input", { field: read.field, problem: "request", detail: read.message });
  const request: OutboundRequest = read.request;
  const agentBudget = agentBudgetOf(req.budget);
  checkIntentKey(req.intentKey);
  if (opts.signal?.aborted) throw paidError("cancelled", { stage: "fetch_before_start" });
  const standing = standingOf(c, request.origin);
  if (standing === "refused") throw originRefused(c, request.origin);
  const payReq: PayRequest = {
    action: FETCH_ACTION,
    input: publicView(request),
    ...(req.budget ? { budget: req.budget } : {}),
    ...(req.intentKey !== undefined ? { intentKey: req.intentKey } : {}),
    ...(req.approvalId !== undefined ? { approvalId: req.approvalId } : {}),
  };
  const fp = fetchFingerprint(request);
  const early = evaluateBudget(
    c.config.limits,
    { day: 0n, total: 0n },
    { action: FETCH_ACTION, amount: 0n, origin: request.origin },
  );
  let probe: FetchedResponse | undefined;
  if (!(await findIntent(c, payReq, fp))) {
    for (const v of Object.values(request.headers)) c.d.transcripts.addSecret(v, { ephemeral: true });
    probe = await (c.d.resourceTransport ?? guardedFetch)(request, {
      standing,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (opts.callId)
      c.d.transcripts.append(opts.callId, "request", {
        paid: false,
        method: request.method,
        url: redactUrl(request.url),
        status: probe.status,
        headers: keptHeaders(probe.headers),
      });
    if (probe.status !== 402) return unpaid(probe);
  }
  const intent = await calls.run(c, {
    req: payReq,
    fp,
    agentBudget,
    early,
    opts,
    fetch: { origin: request.origin, request, ...(probe ? { probe } : {}) },
  });
  return delivered(c, intent);
}

/** What the journal shows of a fetch's request: no query values, no header values, no body. */
function publicView(r: OutboundRequest): Record<string, unknown> {
  return {
    method: r.method,
    url: redactUrl(r.url),
    origin: r.origin,
    headers: Object.keys(r.headers).sort(),
    bodyBytes: r.body === null ? 0 : Buffer.byteLength(r.body),
  };
}

/** What identifies a fetch's content: the whole request (a retry with the same key must send the same). */
function fetchFingerprint(r: OutboundRequest): string {
  return fingerprint(FETCH_ACTION, canonicalJson(r));
}

function unpaid(res: FetchedResponse): FetchOutcome {
  return {
    result: {
      intentId: null,
      intentKey: null,
      status: res.status,
      headers: keptHeaders(res.headers),
      contentType: res.headers["content-type"] ?? null,
      size: res.body.byteLength,
      payment: null,
      ...(res.redirectRefused ? { redirectRefused: redactUrl(res.redirectRefused) } : {}),
    },
    body: res.body,
  };
}

/** A delivered fetch, from the journal: the same answer on every retry with its key. */
export async function delivered(c: Pick<Ctx, "journal">, intent: IntentAt<"executed">): Promise<FetchOutcome> {
  // A call with a fetch's fingerprint finds (or records) only a fetch.
  if (intent.kind !== "fetch") throw new Error(`intent ${intent.intentId} is not a fetch`);
  const { response } = intent;
  const seller = await sellerWordOf(c.journal, intent.intentId);
  return {
    result: {
      intentId: intent.intentId,
      intentKey: intent.intentKey,
      status: response.status,
      headers: response.headers,
      contentType: response.contentType,
      size: response.size,
      payment: {
        amount: formatDecimal(intent.amount),
        currency: "USDC",
        payTo: intent.payee,
        transaction: intent.paymentTx,
        network: intent.requirements.network,
        settlement: intent.settlement,
        ...(seller ? { seller } : {}),
      },
      ...(intent.attention ? { attention: intent.attention } : {}),
      ...(response.redirectRefused ? { redirectRefused: response.redirectRefused } : {}),
    },
    body: (await c.journal.responseBody(intent.intentId)) ?? new Uint8Array(),
  };
}
