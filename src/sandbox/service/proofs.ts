/**
 * Reading a payment proof: decoding it (base64 JSON of an x402 v2 PaymentPayload whose
 * transaction decodes), the quote its memo names, and its binding to a quote — every field
 * of `accepted` that decisions.md binds must equal what the quote requires. A proof that
 * fails is refused with the error `reject` builds (402 payment_invalid, with the challenge).
 */
import { PaymentPayload, type PaymentRequirements } from "../../domain/wire.js";
import type { ApiError } from "../http/errors.js";
import { blockhashOf, decodeWireTransaction, messageHashOf } from "../ledger/tx-wire.js";
import { keyName, readWireBase64, wireMessageHash } from "../../domain/solana-wire.js";
import type { QuoteRow } from "./records.js";

/** The fields of x402 `accepted` that bind a proof to its quote (decisions.md). */
const BINDING_FIELDS = ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"] as const;
const BINDING_EXTRA = ["feePayer", "memo"] as const;

/** Builds the refusal of a proof: a reason code and a message. */
export type RejectProof = (reason: string, message: string) => ApiError;

export interface DecodedProof {
  payload: PaymentPayload;
  messageHash: string;
  blockhash: string;
}

/** Decodes a proof header/body value: base64(JSON(x402 v2 PaymentPayload)). */
export function decodeProof(proof: string, reject: RejectProof): DecodedProof {
  if (typeof proof !== "string" || proof.length === 0 || proof.length > 16_384) {
    throw reject("invalid_payload", "the payment proof is empty or too large");
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
  } catch {
    throw reject("invalid_payload", "the payment proof is not base64-encoded JSON");
  }
  const parsed = PaymentPayload.safeParse(json);
  if (!parsed.success || parsed.data.x402Version !== 2) {
    throw reject(
      "invalid_payload",
      "the payment proof is not an x402 v2 PaymentPayload {x402Version: 2, accepted, payload: {transaction}}",
    );
  }
  // Read from its bytes when it is in a shape kit decodes the same way (domain/solana-wire.ts).
  const wire = readWireBase64(parsed.data.payload.transaction);
  if (wire) return { payload: parsed.data, messageHash: wireMessageHash(wire), blockhash: keyName(wire.blockhash) };
  try {
    const tx = decodeWireTransaction(parsed.data.payload.transaction);
    return { payload: parsed.data, messageHash: messageHashOf(tx), blockhash: blockhashOf(tx) };
  } catch {
    throw reject(
      "invalid_exact_svm_payload_transaction_could_not_be_decoded",
      "the proof's transaction cannot be decoded",
    );
  }
}

/** The quote a bare proof names through its memo (for stock x402 clients without X-Quote-Id). */
export function quoteIdFromProof(proof: string): string | undefined {
  try {
    const memo = (
      JSON.parse(Buffer.from(proof, "base64").toString("utf8")) as { accepted?: { extra?: { memo?: unknown } } }
    ).accepted?.extra?.memo;
    return typeof memo === "string" && /^qt_[A-Za-z0-9]{1,64}$/.test(memo) ? memo : undefined;
  } catch {
    return undefined;
  }
}

/** The quote's stored requirements, once every bound field of the proof's `accepted` matches them. */
export function checkBinding(quote: QuoteRow, payload: PaymentPayload, reject: RejectProof): PaymentRequirements {
  const stored = JSON.parse(quote.requirements) as PaymentRequirements;
  for (const field of BINDING_FIELDS) {
    if (payload.accepted[field] !== stored[field]) {
      throw reject(
        `${field.toLowerCase()}_mismatch`,
        `the proof's accepted.${field} does not match what quote ${quote.quote_id} requires`,
      );
    }
  }
  for (const field of BINDING_EXTRA) {
    if (payload.accepted.extra[field] !== stored.extra[field]) {
      throw reject(
        `${field.toLowerCase()}_mismatch`,
        `the proof's accepted.extra.${field} does not match what quote ${quote.quote_id} requires`,
      );
    }
  }
  return stored;
}
