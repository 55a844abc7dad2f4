/**
 * What the service tells a payer: the x402 v2 challenge (PaymentRequired) for a quote, its
 * requirements carrying a fresh blockhash hint, and the two 402 answers that carry it in the
 * body and in the PAYMENT-REQUIRED header — payment_required (unpaid) and payment_invalid
 * (a rejected proof). And the service's signed word (x402 offer-receipt, by the sandbox's own
 * key: resources/offer-receipt.ts): a signed offer for each way to pay in every challenge and
 * quote, and a signed receipt in every paid answer's PAYMENT-RESPONSE. Additive: a client
 * that ignores `extensions` pays as before.
 */
import { formatDecimal } from "../../domain/money.js";
import type { PaymentRequirements, PaymentRequired } from "../../domain/wire.js";
import { ApiError } from "../http/errors.js";
import type { Ledger } from "../ledger/ledger.js";
import { offerReceiptInfo, signOffers, signReceipt, type SellerSigner } from "../resources/offer-receipt.js";
import { acceptsOf, iso, type PaymentRow, type QuoteRow } from "./records.js";

export interface ChallengeOptions {
  ledger: Ledger;
  /** The public base URL, ending in /v1. */
  baseUrl: () => string;
  /** The sandbox's signing key (published in sandbox.json as sellerKey). */
  signer: SellerSigner;
  /** The Solana network (a payment row names only another one). */
  network: string;
  now: () => number;
}

/** What a quote's or a challenge's offers sign: the paid resource's URL, and the offers themselves. */
export interface SignedChallenge {
  resourceUrl: string;
  extensions: Record<string, unknown>;
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

  /** The resource every payment is for (a challenge's `resource.url`): what offers and receipts sign. */
  private resourceUrl(): string {
    return `${this.o.baseUrl()}/executions`;
  }

  private seconds(): number {
    return Math.floor(this.o.now() / 1000);
  }

  /** A signed offer for each of `accepts`, in order (the offers sign no `extra`: a fresh hint leaves them true). */
  signed(accepts: PaymentRequirements[]): SignedChallenge {
    const offers = signOffers(this.o.signer, this.resourceUrl(), accepts, this.seconds());
    return { resourceUrl: this.resourceUrl(), extensions: offerReceiptInfo({ offers }) };
  }

  /** A paid answer's PAYMENT-RESPONSE (x402 SettleResponse), its extensions the service's signed receipt. */
  settleResponse(p: PaymentRow) {
    const settled = { network: p.network ?? this.o.network, payer: p.payer, transaction: p.transaction_sig };
    if (!p.payer) return { success: true, ...settled };
    const terms = { network: settled.network, url: this.resourceUrl(), payer: p.payer, transaction: p.transaction_sig };
    const receipt = signReceipt(this.o.signer, terms, this.seconds());
    return { success: true, ...settled, extensions: offerReceiptInfo({ receipt }) };
  }

  paymentRequired(quote: QuoteRow, error?: string): PaymentRequired {
    const accepts = [this.freshRequirements(quote), ...acceptsOf(quote).slice(1)];
    return {
      x402Version: 2,
      ...(error ? { error } : {}),
      resource: {
        url: this.resourceUrl(),
        description: `${quote.action} (quote ${quote.quote_id})`,
        mimeType: "application/json",
      },
      accepts,
      extensions: this.signed(accepts).extensions,
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
