/**
 * Where the x402 challenge comes from, and why it can be trusted: the quote's own while it
 * is fresh, else a fresh one from /payments/prepare, else the one a preflight 402 carries —
 * and whatever its source, it is checked against what the quote fixed before anything is
 * signed. The preflight also shows the quote is for this input; a quote that echoes the
 * input itself is not preflighted. Nothing here signs or pays.
 */
import { PaymentRequired, type PaymentRequirements } from "../../domain/wire.js";
import type { Ctx } from "../context.js";
import { paidError } from "../errors.js";
import { checkChallenge } from "../budget/policy.js";
import { serviceApi } from "../service/api.js";
import { selfProvingChallenge } from "../intent/answers.js";
import type { ServiceResponse } from "../service/client.js";
import type { IntentIn } from "../model/types.js";

/** An action with its quote recorded, before anything is reserved: its challenge is looked for and checked. */
type Quoted = IntentIn<"quoted" | "awaiting_approval", "action">;

/** The challenge a 402 carries, in its body or its PAYMENT-REQUIRED header. */
export function readChallenge(
  res: Extract<ServiceResponse<unknown>, { ok: false }>,
): PaymentRequirements[] | undefined {
  const fromBody = PaymentRequired.safeParse(res.error.paymentRequired);
  if (fromBody.success) return fromBody.data.accepts;
  const header = res.headers["payment-required"];
  if (header && header.length < 65_536) {
    try {
      const decoded = PaymentRequired.safeParse(JSON.parse(Buffer.from(header, "base64").toString("utf8")));
      if (decoded.success) return decoded.data.accepts;
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
async function preflight(c: Ctx, intent: Quoted, signal?: AbortSignal): Promise<PaymentRequirements[] | undefined> {
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
export async function challengeFor(c: Ctx, intent: Quoted, signal?: AbortSignal): Promise<PaymentRequirements> {
  // A quote that carries its challenge and echoes this very input needs no preflight to show
  // it is ours (intent/answers.ts); without a challenge, the 402 may be where it comes from.
  const bound = selfProvingChallenge(intent.quote, intent.input) !== undefined;
  const from402 = bound ? undefined : await preflight(c, intent, signal);
  const { accepts, source } = await pickChallenge(c, intent, from402, signal);
  if (!accepts || accepts.length === 0) {
    throw paidError("quote_rejected", { problem: "no_challenge" });
  }
  return checkAgainstQuote(c, intent, accepts, source);
}

/**
 * Which challenge to check: the quote's own while it is fresh, else /payments/prepare's, else
 * (no prepare endpoint) the preflight 402's, else the quote's own after all.
 */
async function pickChallenge(
  c: Ctx,
  intent: Quoted,
  from402: PaymentRequirements[] | undefined,
  signal?: AbortSignal,
): Promise<{ accepts: PaymentRequirements[] | undefined; source: string }> {
  let accepts = intent.quote.paymentRequirement.accepts;
  let source = "quote";
  const fresh = challengeFresh(c, intent.quotedAt);
  if (!accepts || accepts.length === 0 || !fresh) {
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
      accepts = res.body.paymentRequired.accepts;
      source = "prepare";
    } else if (res.status === 404 || res.status === 405 || res.status === 501) {
      // No prepare endpoint: the preflight's challenge, else the quote's own.
      if (from402 && from402.length > 0) {
        accepts = from402;
        source = "402";
      }
    } else if (res.status === 410) {
      throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "service" });
    } else {
      const { code, message } = res.error;
      throw paidError("quote_rejected", { problem: "prepare", serviceCode: code, status: res.status, detail: message });
    }
  }
  return { accepts, source };
}

/** The challenge's requirement that matches what the quote fixed (budget/policy.ts checks), recorded in the transcript. */
export async function checkAgainstQuote(
  c: Ctx,
  intent: Quoted,
  accepts: PaymentRequirements[],
  source: string,
): Promise<PaymentRequirements> {
  const payer = await c.payer();
  const check = checkChallenge(
    {
      quoteId: intent.quoteId,
      amount: intent.amount,
      expiresAt: intent.quoteExpiresAt,
      payee: intent.payee ?? undefined,
    },
    accepts,
    { network: c.config.network, mint: c.config.mint, wallet: payer.address, owner: payer.owner },
    c.now(),
  );
  c.transcript(intent, "challenge", {
    source,
    decision: check.ok ? "matches the quote" : "drift",
    drifts: check.ok ? [] : check.drifts,
  });
  if (!check.ok) {
    if (check.drifts.every((d) => d.field === "expiresAt")) {
      throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "challenge" });
    }
    throw paidError("quote_drift", { problem: "challenge", quoteId: intent.quoteId, drifts: check.drifts });
  }
  return check.requirements;
}
