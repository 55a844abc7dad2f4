/**
 * The seller's side of x402's offer-receipt extension (v1), JWS format, for the sandbox's
 * own paid resources: a signed offer for each way to pay in every 402, and a signed receipt
 * in the settlement of every paid answer, both by the sandbox's own Ed25519 signing key
 * (kept in its store, published in sandbox.json as a `did:key`). Ported from
 * @x402/extensions 2.27.0 (src/offer-receipt/server.ts, signing.ts: the same payloads, the
 * same JWS over the canonical payload) so the sandbox carries neither that package nor the
 * EVM libraries it installs; test/sandbox/offer-receipt-parity.test.ts holds it to the package.
 *
 * The resource URL signed is the resource's own (its origin and path): query values are a
 * buyer's, and stay out of what the sandbox signs. The v1 service signs its own challenges
 * and settlements with the same key and the same payloads (signOffers, signReceipt).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { getBase58Decoder } from "@solana/kit";
import type { ResourceServerExtension } from "@x402/core/types";
import { canonicalJson, type PaymentRequirements } from "../../domain/wire.js";

export const OFFER_RECEIPT = "offer-receipt";

/** What a route declares to have its offers and receipts signed (the package's declareOfferReceiptExtension). */
export const OFFER_RECEIPT_DECLARATION = { [OFFER_RECEIPT]: { includeTxHash: true } };

/** The sandbox's signing key as sandbox.json publishes it. */
export interface SellerKeyInfo {
  /** `did:key:z6Mk…` (Ed25519), the `kid` of every JWS it signs. */
  kid: string;
  publicKeyJwk: { kty: "OKP"; crv: "Ed25519"; x: string };
}

export interface SellerSigner {
  info: SellerKeyInfo;
  /** A compact JWS of the payload's canonical JSON. */
  jws(payload: Record<string, unknown>): string;
}

/** A fresh Ed25519 private key, PKCS#8 DER base64 (what the store keeps). */
export function newSigningKey(): string {
  return generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" }).toString("base64");
}

/** The did:key of an Ed25519 public key: multibase base58btc of the multicodec 0xed01 and the 32 bytes. */
export function didKeyOf(publicKey: KeyObject): string {
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  return `did:key:z${getBase58Decoder().decode(new Uint8Array([0xed, 0x01, ...raw]))}`;
}

/** The signer over a stored key (PKCS#8 DER, base64). */
export function sellerSigner(pkcs8: string): SellerSigner {
  const privateKey = createPrivateKey({ key: Buffer.from(pkcs8, "base64"), format: "der", type: "pkcs8" });
  const publicKey = createPublicKey(privateKey);
  const kid = didKeyOf(publicKey);
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");
  return {
    info: { kid, publicKeyJwk: { kty: "OKP", crv: "Ed25519", x: publicKey.export({ format: "jwk" }).x! } },
    jws(payload) {
      // The package's createJWS: the header as JSON.stringify writes it, the payload canonical.
      const input = `${b64(JSON.stringify({ alg: "EdDSA", kid }))}.${b64(canonicalJson(payload))}`;
      return `${input}.${sign(null, Buffer.from(input, "ascii"), privateKey).toString("base64url")}`;
    },
  };
}

/** A URL without its query and fragment. */
function resourceOf(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

interface RequestUrl {
  transportContext?: unknown;
}

/** The URL of the request being answered, from the HTTP adapter the resource server was handed. */
function requestUrl(context: RequestUrl): string | undefined {
  const adapter = (context.transportContext as { request?: { adapter?: { getUrl?: () => string } } } | undefined)
    ?.request?.adapter;
  return adapter?.getUrl?.();
}

/** The terms of one way to pay, as an offer signs them. */
export type OfferTerms = Pick<
  PaymentRequirements,
  "scheme" | "network" | "asset" | "payTo" | "amount" | "maxTimeoutSeconds"
>;

/** One signed offer as a 402's `extensions["offer-receipt"].info.offers` lists it. */
export interface SignedOffer {
  format: "jws";
  acceptIndex: number;
  signature: string;
}

/**
 * A signed offer for each way to pay `url` (its origin and path), in order, each valid for its
 * own maxTimeoutSeconds from `seconds` (the package's createOfferJWS payload, field for field).
 */
export function signOffers(
  signer: SellerSigner,
  url: string,
  requirements: OfferTerms[],
  seconds: number,
): SignedOffer[] {
  return requirements.map((r, acceptIndex) => ({
    format: "jws",
    acceptIndex,
    signature: signer.jws({
      version: 1,
      resourceUrl: resourceOf(url),
      scheme: r.scheme,
      network: r.network,
      asset: r.asset,
      payTo: r.payTo,
      amount: r.amount,
      validUntil: seconds + r.maxTimeoutSeconds,
    }),
  }));
}

/** What a receipt attests: this payer's payment on this network for `url`, settled in `transaction` when named. */
export interface ReceiptTerms {
  network: string;
  url: string;
  payer: string;
  transaction?: string | null;
}

/** The signed receipt of a settled payment (the package's createReceiptJWS payload, field for field). */
export function signReceipt(
  signer: SellerSigner,
  t: ReceiptTerms,
  seconds: number,
): { format: "jws"; signature: string } {
  const payload = {
    version: 1,
    network: t.network,
    resourceUrl: resourceOf(t.url),
    payer: t.payer,
    issuedAt: seconds,
    ...(t.transaction ? { transaction: t.transaction } : {}),
  };
  return { format: "jws", signature: signer.jws(payload) };
}

/** The extensions entry that carries a 402's offers, or a settlement's receipt. */
export const offerReceiptInfo = (
  info: { offers: SignedOffer[] } | { receipt: { format: "jws"; signature: string } },
) => ({
  [OFFER_RECEIPT]: { info },
});

/** The extension: offers in each 402 (fresh `validUntil`, per requirement), a receipt in each successful settlement. */
export function offerReceiptExtension(signer: SellerSigner, now: () => number): ResourceServerExtension {
  const seconds = () => Math.floor(now() / 1000);
  return {
    key: OFFER_RECEIPT,
    dynamicInfoFields: ["offers"],
    enrichPaymentRequiredResponse: async (_declaration, context) => {
      const url = context.paymentRequiredResponse.resource?.url ?? requestUrl(context);
      if (!url) return undefined;
      const offers = signOffers(signer, url, context.requirements, seconds());
      return offers.length > 0 ? { info: { offers } } : undefined;
    },
    enrichSettlementResponse: async (_declaration, context) => {
      const { result } = context;
      const url = context.paymentPayload.resource?.url ?? requestUrl(context);
      if (!result.success || !result.payer || !url) return undefined;
      const receipt = signReceipt(
        signer,
        { network: result.network, url, payer: result.payer, transaction: result.transaction },
        seconds(),
      );
      return { info: { receipt } };
    },
  };
}
