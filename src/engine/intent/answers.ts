/**
 * What the service's answers mean, as pure functions: a quote the engine may act on (or the
 * drift that refuses it), a refusal to quote, the settlement a PAYMENT-RESPONSE header
 * names. Nothing here sends or records anything; table-tested.
 */
import { canonicalJson, SettleResponse, type PaymentRequirements, type Quote } from "../../domain/wire.js";
import { paidError, type PaidActionError } from "../errors.js";
import { quoteAmount } from "../budget/policy.js";

/** A quote's price and expiry, once it is checked to be a positive USDC price for this action; throws quote_drift. */
export function checkQuote(quote: Quote, action: string): { amount: bigint; expiresAt: number } {
  const amount = quoteAmount(quote.amount);
  if (amount === undefined || amount === 0n || quote.currency !== "USDC") {
    throw paidError("quote_drift", {
      problem: "quote",
      quoteId: quote.quoteId,
      detail: `the quote's amount ${JSON.stringify(quote.amount).slice(0, 40)} ${String(quote.currency).slice(0, 10)} is not a positive USDC decimal`,
    });
  }
  if (quote.action !== action)
    throw paidError("quote_drift", {
      problem: "quote",
      quoteId: quote.quoteId,
      detail: `the service quoted ${String(quote.action).slice(0, 60)} for a request to ${action}`,
    });
  const expiresAt = Date.parse(quote.expiresAt);
  if (Number.isNaN(expiresAt))
    throw paidError("quote_drift", {
      problem: "quote",
      quoteId: quote.quoteId,
      detail: "the quote's expiresAt is not a timestamp",
    });
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(quote.quoteId))
    // The id is not one to repeat: the context names no quote.
    throw paidError("quote_drift", { problem: "quote", detail: "the quote id has characters a quote id cannot have" });
  return { amount, expiresAt };
}

/**
 * Whether the quote says itself that it prices exactly this input: it echoes the input it
 * priced (`input`, an extension the reference service makes; v1 leaves it unsaid), equal to
 * ours as POST /executions compares them. Then no preflight is needed to learn that the quote
 * is ours. Without an echo, or with another input, the preflight asks the service.
 */
export function quoteBindsInput(quote: Quote, input: unknown): boolean {
  const echoed = (quote as { input?: unknown }).input;
  if (echoed === undefined || echoed === null || typeof echoed !== "object") return false;
  try {
    return canonicalJson(echoed, 64) === canonicalJson(input, 64);
  } catch {
    return false; // nested beyond reason: not an echo we can compare
  }
}

/**
 * The quote's own challenge when the quote carries one and echoes this very input: a quote
 * that needs no preflight to show it is ours. Undefined otherwise.
 */
export function selfProvingChallenge(quote: Quote, input: unknown): PaymentRequirements[] | undefined {
  const accepts = quote.paymentRequirement.accepts;
  return accepts && accepts.length > 0 && quoteBindsInput(quote, input) ? accepts : undefined;
}

/** The transaction a successful PAYMENT-RESPONSE header names, if it names one that looks like one (Solana's or EVM's). */
export function settledTransaction(header: string | undefined): string | undefined {
  if (!header || header.length > 8192) return undefined;
  try {
    const parsed = SettleResponse.safeParse(JSON.parse(Buffer.from(header, "base64").toString("utf8")));
    return parsed.success &&
      parsed.data.success &&
      /^(?:[1-9A-HJ-NP-Za-km-z]{64,90}|0x[0-9a-fA-F]{64})$/.test(parsed.data.transaction)
      ? parsed.data.transaction
      : undefined;
  } catch {
    return undefined;
  }
}

/** The engine's error for a service's refusal to quote. */
export function quoteRefusal(
  status: number,
  error: { code: string; message: string; issues?: unknown },
): PaidActionError {
  if (status === 404) return paidError("action_unknown", { serviceCode: error.code, detail: error.message });
  if (status === 400) {
    return paidError("invalid_input", {
      problem: "service",
      serviceCode: error.code,
      detail: error.message,
      ...(Array.isArray(error.issues) ? { issues: error.issues.slice(0, 20) } : {}),
    });
  }
  return paidError("quote_rejected", { problem: "quote", serviceCode: error.code, status, detail: error.message });
}
