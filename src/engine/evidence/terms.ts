/**
 * The canonical terms a person approves with their passkey: what is bought (its kind, the
 * action or the URL, the digest of its input), what it costs (amount, asset, network), whom
 * it pays, until when the price holds, and which approval it is. Their canonical JSON is
 * what a receipt carries; its SHA-256 (base64url) is the WebAuthn challenge, so the person's
 * signature covers exactly these terms and nothing else. Pure: built from the intent the
 * engine is about to sign for, never from what a page sent.
 */
import { createHash } from "node:crypto";
import { formatDecimal } from "../../domain/money.js";
import { canonicalJson, type PaymentRequirements, type Quote } from "../../domain/wire.js";

/** The terms, version 1. Amounts are decimal USDC strings; times are ISO 8601 (UTC). */
export interface Terms {
  v: 1;
  kind: "action" | "fetch";
  /** The catalog action (an action), or null (a fetch). */
  action: string | null;
  /** What a fetch fetches: its method and URL, query values redacted (null for an action). */
  url: string | null;
  /** SHA-256 (hex) of the action and its canonical input, or of the whole request of a fetch (its secrets stay out). */
  inputDigest: string;
  amount: string;
  currency: "USDC";
  /** The token's mint (or contract) the price is in, when the price names it. */
  asset: string | null;
  /** The CAIP-2 network, when the price names it. */
  network: string | null;
  payee: string | null;
  quoteExpiresAt: string;
  approvalId: string;
}

/** What the terms are read from: an intent once priced, and the approval asked for it. */
export interface TermsSource {
  kind: "action" | "fetch";
  action: string;
  input: Record<string, unknown>;
  fingerprint: string;
  amount: bigint;
  payee: string | null;
  quote: Quote | null;
  requirements: PaymentRequirements | null;
  quoteExpiresAt: number;
}

/** The requirement a price names: a fetch's 402 requirement, else the first the quote's challenge accepts. */
function requirementOf(s: TermsSource): Pick<PaymentRequirements, "asset" | "network" | "payTo"> | undefined {
  return s.requirements ?? s.quote?.paymentRequirement.accepts?.[0];
}

function fetchUrl(input: Record<string, unknown>): string {
  const method = typeof input.method === "string" ? input.method : "?";
  return `${method} ${typeof input.url === "string" ? input.url : "?"}`;
}

/** The terms of paying for `s` under approval `approvalId`. */
export function termsOf(s: TermsSource, approvalId: string): Terms {
  const req = requirementOf(s);
  return {
    v: 1,
    kind: s.kind,
    action: s.kind === "action" ? s.action : null,
    url: s.kind === "fetch" ? fetchUrl(s.input) : null,
    inputDigest: s.fingerprint,
    amount: formatDecimal(s.amount),
    currency: "USDC",
    asset: req?.asset ?? null,
    network: req?.network ?? s.quote?.paymentRequirement.network ?? null,
    payee: s.payee ?? req?.payTo ?? null,
    quoteExpiresAt: new Date(s.quoteExpiresAt).toISOString(),
    approvalId,
  };
}

/** The terms as signed: canonical JSON (sorted keys, no spaces). */
export function canonicalTerms(t: Terms): string {
  return canonicalJson(t);
}

/** The WebAuthn challenge for canonical terms: SHA-256 of their UTF-8 bytes, base64url. */
export function termsChallenge(canonical: string): string {
  return createHash("sha256").update(canonical, "utf8").digest("base64url");
}
