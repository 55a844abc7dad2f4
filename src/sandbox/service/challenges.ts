/**
 * What the service tells a payer: the x402 v2 challenge (PaymentRequired) for a quote, its
 * requirements carrying a fresh blockhash hint, and the two 402 answers that carry it in the
 * body and in the PAYMENT-REQUIRED header — payment_required (unpaid) and payment_invalid
 * (a rejected proof).
 */
import { formatDecimal } from "../../domain/money.js";
import type { PaymentRequirements, PaymentRequired } from "../../domain/wire.js";
import { ApiError } from "../http/errors.js";
import type { Ledger } from "../ledger/ledger.js";
import { acceptsOf, iso, type QuoteRow } from "./records.js";

export interface ChallengeOptions {
  ledger: Ledger;
  /** The public base URL, ending in /v1. */
  baseUrl: () => string;
}

/** The x402 v2 header that repeats a 402's challenge: base64 JSON PaymentRequired. */
const challengeHeader = (challenge: PaymentRequired) => ({
  "PAYMENT-REQUIRED": Buffer.from(JSON.stringify(challenge)).toString("base64"),
});

export class Challenges {
  constructor(private readonly o: ChallengeOptions) {}

  /** The stored requirements with a fresh blockhash hint (not part of the binding). */
  private freshRequirements(quote: QuoteRow): PaymentRequirements {
    const stored = JSON.parse(quote.requirements) as PaymentRequirements;
    const latest = this.o.ledger.latestBlockhash();
    return {
      ...stored,
      extra: {
        ...stored.extra,
        recentBlockhash: latest.blockhash,
        lastValidBlockHeight: latest.lastValidBlockHeight.toString(),
      },
    };
  }

  paymentRequired(quote: QuoteRow, error?: string): PaymentRequired {
    return {
      x402Version: 2,
      ...(error ? { error } : {}),
      resource: {
        url: `${this.o.baseUrl()}/executions`,
        description: `${quote.action} (quote ${quote.quote_id})`,
        mimeType: "application/json",
      },
      accepts: [this.freshRequirements(quote), ...acceptsOf(quote).slice(1)],
    };
  }

  paymentRequiredError(quote: QuoteRow, message: string): ApiError {
    const challenge = this.paymentRequired(quote);
    return new ApiError(
      402,
      "payment_required",
      message,
      {
        quoteId: quote.quote_id,
        amount: formatDecimal(BigInt(quote.amount)),
        currency: "USDC",
        expiresAt: iso(quote.expires_at),
        paymentRequired: challenge,
      },
      challengeHeader(challenge),
    );
  }

  /** A rejected proof: like every 402, it carries the challenge in the body and in PAYMENT-REQUIRED (decisions.md). */
  paymentInvalid(reason: string, message: string, quote?: QuoteRow): ApiError {
    if (!quote) return new ApiError(402, "payment_invalid", message, { reason });
    const challenge = this.paymentRequired(quote, reason);
    return new ApiError(
      402,
      "payment_invalid",
      message,
      { reason, quoteId: quote.quote_id, paymentRequired: challenge },
      challengeHeader(challenge),
    );
  }
}
