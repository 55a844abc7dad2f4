/**
 * Where the x402 challenge comes from, and why it can be trusted: the quote's own while it
 * is fresh, else a fresh one from /payments/prepare, else the one a preflight 402 carries —
 * and whatever its source, it is checked against what the quote fixed before anything is
 * signed. The preflight also shows the quote is for this input; a quote that echoes the
 * input itself is not preflighted. The service's signed offer for the requirement paid (x402
 * offer-receipt), when its challenge carries one, is checked and kept here too — reported,
 * never trusted, and never a reason to refuse a payment the quote's checks allow. Nothing here
 * signs or pays.
 */
import { PaymentRequired, type PaymentRequirements, type Quote } from "../../domain/wire.js";
import type { Ctx } from "../context.js";
import { paidError } from "../errors.js";
import { keepOffer } from "../evidence/seller-word.js";
import { paidResourceUrl, serviceApi } from "../service/api.js";
import { selfProvingChallenge } from "../intent/answers.js";
import type { ServiceResponse } from "../service/client.js";
import type { IntentIn, StoredOffer } from "../model/types.js";

/** An action with its quote recorded, before anything is reserved: its challenge is looked for and checked. */
type Quoted = IntentIn<"quoted" | "awaiting_approval", "action">;

/** A challenge as one source gave it: its requirements, the resource it names, the service's signed offers. */
export interface ServiceChallenge {
  accepts: PaymentRequirements[] | undefined;
  /** Where it came from: the quote, /payments/prepare, or a preflight 402. */
  source: string;
  /** The paid resource's URL as the challenge names it (see resourceUrlOf). */
  resourceUrl: string;
  /** Its x402 extensions (the signed offers are in `offer-receipt`). */
  extensions: Record<string, unknown> | undefined;
}

/** A challenge checked against the quote: the requirement to pay, and the resource it pays for (kept on the intent). */
export interface CheckedChallenge {
  requirements: PaymentRequirements;
  /** An action's: the paid resource its challenge named, what the service's offer and receipt are checked against. */
  offer?: StoredOffer;
}

const recordOf = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/**
 * The URL the service's signed offer and receipt must name: the paid resource as the
 * service's own challenge names it (a 402's or prepare's `resource.url`, a quote's
 * `resourceUrl`) — not the base URL we call. The service knows its public URL and we may
 * reach it by another (a gateway, a proxy: our tests' proxies do exactly that), and the
 * embedded sandbox gives no configured base URL at all until it has started. What the check
 * ties together is the offer, the challenge paid and, later, the receipt: all three must be
 * for the same resource of the same service. The money is checked apart, against the quote.
 * A challenge that names no absolute URL (v1's quote names a path) is taken as the path under
 * the base URL we call, as the proof names it (service/api.ts paidResourceUrl).
 */
export function resourceUrlOf(c: Pick<Ctx, "client">, named: unknown, path?: unknown): string {
  if (typeof named === "string" && /^https?:\/\//.test(named) && named.length <= 8192) return named;
  const base = c.client.baseUrl;
  return typeof path === "string" && path.startsWith("/") ? `${base}${path}` : paidResourceUrl(base);
}

/** A PaymentRequired (a 402's, or /payments/prepare's) as a challenge from `source`. */
function fromPaymentRequired(c: Ctx, p: PaymentRequired, source: string): ServiceChallenge {
  return {
    accepts: p.accepts,
    source,
    resourceUrl: resourceUrlOf(c, p.resource?.url),
    extensions: recordOf(p.extensions),
  };
}

/** The quote's own challenge: its requirement's accepts, with the resource and signed offers it names. */
export function quoteChallenge(c: Pick<Ctx, "client">, quote: Quote): ServiceChallenge {
  const r = quote.paymentRequirement;
  return {
    accepts: r.accepts,
    source: "quote",
    resourceUrl: resourceUrlOf(c, r.resourceUrl, r.resource),
    extensions: recordOf(r.extensions),
  };
}

/** The challenge a 402 carries, in its body or its PAYMENT-REQUIRED header. */
export function readChallenge(res: Extract<ServiceResponse<unknown>, { ok: false }>): PaymentRequired | undefined {
  const fromBody = PaymentRequired.safeParse(res.error.paymentRequired);
  if (fromBody.success) return fromBody.data;
  const header = res.headers["payment-required"];
  if (header && header.length < 65_536) {
    try {
      const decoded = PaymentRequired.safeParse(JSON.parse(Buffer.from(header, "base64").toString("utf8")));
      if (decoded.success) return decoded.data;
    } catch {
      // not a challenge
    }
  }
  return undefined;
}

/**
 * Before anything is signed, asks the service to run this exact intent with this quote and
 * no payment. An honest service answers 402 — which proves the quote is for this action and
 * input (a quote for another intent is 409 quote_mismatch) and carries a fresh challenge.
 */
async function preflight(c: Ctx, intent: Quoted, signal?: AbortSignal): Promise<PaymentRequired | undefined> {
  const res = await serviceApi(c.client).createExecution(
    { action: intent.action, input: intent.input },
    { quoteId: intent.quoteId, idempotencyKey: intent.idemKey, trace: c.trace(intent), signal },
  );
  c.transcript(intent, "preflight", { status: res.status, body: res.ok ? res.body : res.error });
  if (res.ok) {
    throw paidError("payment_loop", { executionId: res.body.executionId });
  }
  if (res.status === 402) return readChallenge(res);
  const { code, message } = res.error;
  if (code === "quote_mismatch" || code === "quote_consumed") {
    throw paidError("quote_drift", {
      problem: "other_intent",
      quoteId: intent.quoteId,
      serviceCode: code,
      detail: message,
    });
  }
  if (res.status === 410 || code === "quote_expired")
    throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "service" });
  throw paidError("quote_rejected", { problem: "preflight", serviceCode: code, status: res.status, detail: message });
}

/** Whether a quote's own challenge, received at `quotedAt`, is young enough to sign (else /payments/prepare is asked). */
export function challengeFresh(c: Ctx, quotedAt: number): boolean {
  return c.now() - quotedAt < (c.d.challengeMaxAgeMs ?? 15_000);
}

/** The challenge to sign, checked against the quote; throws quote_drift / quote_expired / quote_rejected. */
export async function challengeFor(c: Ctx, intent: Quoted, signal?: AbortSignal): Promise<CheckedChallenge> {
  // A quote that carries its challenge and echoes this very input needs no preflight to show
  // it is ours (intent/answers.ts); without a challenge, the 402 may be where it comes from.
  const bound = selfProvingChallenge(intent.quote, intent.input) !== undefined;
  const from402 = bound ? undefined : await preflight(c, intent, signal);
  const challenge = await pickChallenge(c, intent, from402 && fromPaymentRequired(c, from402, "402"), signal);
  if (!challenge.accepts || challenge.accepts.length === 0) {
    throw paidError("quote_rejected", { problem: "no_challenge" });
  }
  return checkAgainstQuote(c, intent, challenge);
}

/**
 * Which challenge to check: the quote's own while it is fresh, else /payments/prepare's, else
 * (no prepare endpoint) the preflight 402's, else the quote's own after all.
 */
async function pickChallenge(
  c: Ctx,
  intent: Quoted,
  from402: ServiceChallenge | undefined,
  signal?: AbortSignal,
): Promise<ServiceChallenge> {
  const own = quoteChallenge(c, intent.quote);
  const fresh = challengeFresh(c, intent.quotedAt);
  if (!own.accepts || own.accepts.length === 0 || !fresh) {
    const res = await serviceApi(c.client).preparePayment(intent.quoteId, {
      idempotencyKey: intent.idemKey,
      trace: c.trace(intent),
      signal,
    });
    c.transcript(intent, "prepare", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) {
      if (res.body.quoteId !== intent.quoteId) {
        const preparedFor = res.body.quoteId;
        throw paidError("quote_drift", { problem: "prepared_other", quoteId: intent.quoteId, preparedFor });
      }
      return fromPaymentRequired(c, res.body.paymentRequired, "prepare");
    } else if (res.status === 404 || res.status === 405 || res.status === 501) {
      // No prepare endpoint: the preflight's challenge, else the quote's own.
      if (from402?.accepts && from402.accepts.length > 0) return from402;
    } else if (res.status === 410) {
      throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "service" });
    } else {
      const { code, message } = res.error;
      throw paidError("quote_rejected", { problem: "prepare", serviceCode: code, status: res.status, detail: message });
    }
  }
  return own;
}

/**
 * The challenge's requirement that matches what the quote fixed, by the rules of the rail
 * that pays it (on the first of our networks it offers: rails/choose.ts), recorded in the
 * transcript; and the service's signed offer for it, checked and kept (seller-word.ts).
 */
export async function checkAgainstQuote(
  c: Ctx,
  intent: Quoted,
  challenge: ServiceChallenge,
): Promise<CheckedChallenge> {
  const { source, resourceUrl: url, extensions } = challenge;
  const accepts = challenge.accepts ?? [];
  const rail = await c.rails.forChallenge(accepts);
  const check = await rail.check(
    {
      quoteId: intent.quoteId,
      amount: intent.amount,
      expiresAt: intent.quoteExpiresAt,
      payee: intent.payee ?? undefined,
    },
    accepts,
    c.now(),
  );
  if (!check.ok) {
    c.transcript(intent, "challenge", { source, decision: "drift", drifts: check.drifts });
    if (check.drifts.every((d) => d.field === "expiresAt")) {
      throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "challenge" });
    }
    throw paidError("quote_drift", { problem: "challenge", quoteId: intent.quoteId, drifts: check.drifts });
  }
  const requirement = check.requirements;
  // The service's signed offer for this requirement: kept with our check of it, whatever it says.
  const index = accepts.indexOf(requirement);
  const signed = await keepOffer(c.journal, intent.intentId, { extensions, requirement, index, url }, c.now());
  c.transcript(intent, "challenge", {
    source,
    decision: "matches the quote",
    drifts: [],
    ...(signed ? { sellerOffer: signed.state } : {}),
  });
  return { requirements: requirement, offer: { resource: { url } } };
}
