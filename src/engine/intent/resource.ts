/**
 * A fetch's exchanges with its resource: the request sent (unpaid, or with the proof) through
 * the guarded transport, under the origin's standing in the human's `allowOrigins` — looked
 * at again on every send, so an origin a person removed is not paid — and the answer kept.
 */
import { paidError, type PaidActionError } from "../errors.js";
import type { Ctx } from "../context.js";
import type { IntentIn, IntentRecord, StoredResponse } from "../model/types.js";
import { guardedFetch, type FetchedResponse } from "../x402-http/http.js";
import { originStanding, parseAllowOrigins } from "../x402-http/origins.js";
import { redactUrl } from "../x402-http/request.js";
import { keptHeaders } from "../x402-http/response.js";

/** How `origin` stands in the configuration's allowOrigins. */
export function standingOf(c: Pick<Ctx, "config">, origin: string): "exact" | "public" | "refused" {
  const parsed = parseAllowOrigins(c.config.allowOrigins ?? []);
  return parsed.ok ? originStanding(parsed.rule, origin) : "refused";
}

/** The refusal for an origin the human did not allow: nothing was sent. */
export function originRefused(c: Pick<Ctx, "config">, origin: string): PaidActionError {
  return paidError("origin_not_allowed", { origin, allowOrigins: c.config.allowOrigins ?? [] });
}

/** Sends the intent's request (with the proof in PAYMENT-SIGNATURE when given). */
export async function fetchResource(
  c: Ctx,
  intent: IntentIn<"new" | "signed", "fetch">,
  o: { proof?: string; signal?: AbortSignal },
): Promise<FetchedResponse> {
  const { request } = intent;
  const standing = standingOf(c, request.origin);
  if (standing === "refused") throw originRefused(c, request.origin);
  if (o.proof) c.d.transcripts.addSecret(o.proof, { ephemeral: true });
  return (c.d.resourceTransport ?? guardedFetch)(request, {
    standing,
    ...(o.proof ? { extraHeaders: { "PAYMENT-SIGNATURE": o.proof } } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  });
}

/** Keeps an answer: its body apart (by intent), the rest on the intent (returned, for the caller to commit). */
export async function keepResponse(
  c: Ctx,
  intent: Pick<IntentRecord, "intentId">,
  res: FetchedResponse,
  paid: boolean,
): Promise<StoredResponse> {
  await c.journal.saveResponseBody(intent.intentId, res.body, c.now());
  return {
    status: res.status,
    headers: keptHeaders(res.headers),
    contentType: res.headers["content-type"] ?? null,
    size: res.body.byteLength,
    ...(res.redirectRefused ? { redirectRefused: redactUrl(res.redirectRefused) } : {}),
    paid,
  };
}
