/**
 * The seller's signed word (x402's `offer-receipt` extension, v1): a signed offer in the
 * 402 for each way to pay (`extensions["offer-receipt"].info.offers`), and a signed receipt
 * in the paid answer's PAYMENT-RESPONSE (`extensions["offer-receipt"].info.receipt`) saying
 * the seller delivered. Read defensively, checked here — the signature (jws.ts; an EIP-712
 * signature by the rail that can recover it, else unchecked), the offer against what was
 * paid, the receipt against the offer and the payment — and kept as received with the check,
 * never trusted for more than the check says: a tampered offer is reported, not believed.
 */
import { z } from "zod";
import type { PaymentRequirements } from "../../domain/wire.js";
import type { SellerSummary } from "../model/types.js";
import { verifyJws } from "./jws.js";
import type { RailVerifier } from "../rails/port.js";

export const OFFER_RECEIPT = "offer-receipt";

/** A signed offer or receipt as a seller sends it: JWS (the payload inside), or EIP-712 (the payload beside). */
export const SignedWord = z.object({
  format: z.enum(["jws", "eip712"]),
  acceptIndex: z.number().int().nonnegative().optional(),
  payload: z.record(z.string(), z.unknown()).optional(),
  signature: z.string().min(1).max(16_384),
});
export type SignedWord = z.infer<typeof SignedWord>;

export const OfferPayload = z.looseObject({
  version: z.number(),
  resourceUrl: z.string().max(8192),
  scheme: z.string(),
  network: z.string(),
  asset: z.string(),
  payTo: z.string(),
  amount: z.string(),
  validUntil: z.number(),
});
export type OfferPayload = z.infer<typeof OfferPayload>;

export const ReceiptPayload = z.looseObject({
  version: z.number(),
  network: z.string(),
  resourceUrl: z.string().max(8192),
  payer: z.string(),
  issuedAt: z.number(),
  transaction: z.string().optional(),
});
export type ReceiptPayload = z.infer<typeof ReceiptPayload>;

/** One part as the journal keeps it and a receipt carries it: as received, and our check of it. */
export const KeptWord = z.object({
  signed: SignedWord,
  state: z.enum(["verified", "mismatch", "invalid", "unchecked"]),
  /** The key that signed it (a JWS's kid; an EIP-712 signature's recovered address), when known. */
  signer: z.string().nullable(),
  problems: z.array(z.string()),
});
export type KeptWord = z.infer<typeof KeptWord>;

/** The rail's EIP-712 recovery (RailVerifier.recoverTypedData), when this build has one. */
export type RecoverTypedData = NonNullable<RailVerifier["recoverTypedData"]>;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** `extensions["offer-receipt"].info[field]`, or undefined. */
function infoOf(extensions: Record<string, unknown> | undefined, field: "offers" | "receipt"): unknown {
  const ext = extensions?.[OFFER_RECEIPT];
  return isRecord(ext) && isRecord(ext.info) ? ext.info[field] : undefined;
}

/** The signed offers a 402 carries (well-formed ones, at most 32). */
export function offersOf(extensions: Record<string, unknown> | undefined): SignedWord[] {
  const offers = infoOf(extensions, "offers");
  if (!Array.isArray(offers)) return [];
  return offers.slice(0, 32).flatMap((o) => {
    const parsed = SignedWord.safeParse(o);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The signed receipt a paid answer's settlement carries, if any. */
export function receiptOf(extensions: Record<string, unknown> | undefined): SignedWord | undefined {
  const parsed = SignedWord.safeParse(infoOf(extensions, "receipt"));
  return parsed.success ? parsed.data : undefined;
}

/** The payload a signed part states, unverified: the JWS's own, or the EIP-712 one beside it. */
function statedPayload(w: SignedWord): unknown {
  if (w.format === "eip712") return w.payload;
  const parts = w.signature.split(".");
  if (parts.length !== 3) return undefined;
  try {
    return JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

const sameTerms = (
  p: OfferPayload,
  r: Pick<PaymentRequirements, "scheme" | "network" | "asset" | "payTo" | "amount">,
) =>
  p.scheme === r.scheme &&
  p.network === r.network &&
  p.asset === r.asset &&
  p.payTo === r.payTo &&
  p.amount === r.amount;

/**
 * The offer for the requirement paid, among those a 402 carried: the one its acceptIndex
 * names when that one states the same terms, else the first that states them (as
 * @x402/extensions' findAcceptsObjectFromSignedOffer matches them); else the one its
 * acceptIndex names — to be reported as a mismatch — else none.
 */
export function offerFor(
  offers: SignedWord[],
  requirement: PaymentRequirements,
  index: number,
): SignedWord | undefined {
  const terms = (w: SignedWord) => {
    const p = OfferPayload.safeParse(statedPayload(w));
    return p.success && sameTerms(p.data, requirement);
  };
  const hinted = offers.find((o) => o.acceptIndex === index);
  if (hinted && terms(hinted)) return hinted;
  return offers.find(terms) ?? hinted ?? (offers.length === 1 ? offers[0] : undefined);
}

/** The resource a URL names, for comparing: origin and path (query values are neither compared nor kept). */
export function resourceOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return undefined;
  }
}

const EIP712_DOMAIN = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
];
const TYPED = {
  offer: {
    domain: { name: "x402 offer", version: "1", chainId: 1 },
    fields: [
      "version:uint256",
      "resourceUrl:string",
      "scheme:string",
      "network:string",
      "asset:string",
      "payTo:string",
      "amount:string",
      "validUntil:uint256",
    ],
    primaryType: "Offer",
  },
  receipt: {
    domain: { name: "x402 receipt", version: "1", chainId: 1 },
    fields: [
      "version:uint256",
      "network:string",
      "resourceUrl:string",
      "payer:string",
      "issuedAt:uint256",
      "transaction:string",
    ],
    primaryType: "Receipt",
  },
} as const;

/** The signature's check: the payload it proves and its signer, or the state it leaves the part in. */
async function checkSignature(
  w: SignedWord,
  kind: "offer" | "receipt",
  recover: RecoverTypedData | undefined,
): Promise<{ state: "ok" | "invalid" | "unchecked"; payload: unknown; signer: string | null; problem?: string }> {
  if (w.format === "jws") {
    const c = verifyJws(w.signature);
    if (c.ok) return { state: "ok", payload: c.payload, signer: c.kid };
    if (c.problem === "unchecked")
      return {
        state: "unchecked",
        payload: c.payload,
        signer: c.kid,
        problem: `its signature is not checked: ${c.detail}`,
      };
    return {
      state: "invalid",
      payload: statedPayload(w),
      signer: null,
      problem: `its signature does not hold: ${c.detail}`,
    };
  }
  if (!w.payload)
    return { state: "invalid", payload: undefined, signer: null, problem: "an EIP-712 signature with no payload" };
  if (!recover)
    return {
      state: "unchecked",
      payload: w.payload,
      signer: null,
      problem: "its EIP-712 signature is not checked: no rail of this build recovers EIP-712 signatures",
    };
  const t = TYPED[kind];
  const types = {
    EIP712Domain: EIP712_DOMAIN,
    [t.primaryType]: t.fields.map((f) => ({ name: f.split(":")[0]!, type: f.split(":")[1]! })),
  };
  const signer = await recover(
    { domain: t.domain, types, primaryType: t.primaryType, message: w.payload },
    w.signature,
  );
  if (!signer)
    return { state: "invalid", payload: w.payload, signer: null, problem: "its EIP-712 signature recovers no address" };
  return { state: "ok", payload: w.payload, signer };
}

/** What a paid offer must match: the requirement paid, the resource asked for, when it was priced. */
export interface OfferExpected {
  requirement: PaymentRequirements;
  /** The URL asked for (its origin and path are compared). */
  url: string;
  /** When the price was read (ms): the offer must still be valid then. */
  at: number;
}

/** Checks a signed offer: its signature, and that it offers what was paid for the resource asked for. */
export async function checkOffer(w: SignedWord, e: OfferExpected, recover?: RecoverTypedData): Promise<KeptWord> {
  const sig = await checkSignature(w, "offer", recover);
  const problems: string[] = [];
  const p = OfferPayload.safeParse(sig.payload);
  if (!p.success)
    problems.push(
      "its payload is not an offer (version, resourceUrl, scheme, network, asset, payTo, amount, validUntil)",
    );
  else {
    const o = p.data;
    const r = e.requirement;
    if (o.version !== 1) problems.push(`it is offer version ${o.version}, not 1`);
    for (const k of ["scheme", "network", "asset", "payTo", "amount"] as const)
      if (o[k] !== r[k]) problems.push(`it offers ${k} ${o[k].slice(0, 80)}, but ${r[k].slice(0, 80)} was paid`);
    if (resourceOf(o.resourceUrl) !== resourceOf(e.url))
      problems.push("it offers another resource than the one asked for");
    if (o.validUntil * 1000 < e.at)
      problems.push(`it was valid until ${new Date(o.validUntil * 1000).toISOString()}, before the price was read`);
  }
  return kept(w, sig, problems);
}

/** A part as kept: what its signature and what it says came to. */
function kept(
  w: SignedWord,
  sig: { state: "ok" | "invalid" | "unchecked"; signer: string | null; problem?: string },
  mismatches: string[],
): KeptWord {
  const state = sig.state === "ok" ? (mismatches.length === 0 ? "verified" : "mismatch") : sig.state;
  return { signed: w, state, signer: sig.signer, problems: [...(sig.problem ? [sig.problem] : []), ...mismatches] };
}

/** What a signed receipt must match: the offer it follows, the payment, when it was paid and received. */
export interface ReceiptExpected {
  /** The offer kept for this purchase (its payload and signer), if the seller gave one. */
  offer: KeptWord | undefined;
  url: string;
  network: string;
  /** The key that signed the payment. */
  payer: string;
  /** The settlement's transaction as claimed, when known. */
  transaction: string | null;
  /** When the proof was signed, and when the receipt came (ms). */
  signedAt: number;
  at: number;
}

/** Issued-at may be off by this much either way (clocks). */
const SKEW_S = 300;

/** Checks a signed receipt: its signature, its signer the offer's, and that it names this payment of this resource. */
export async function checkReceipt(w: SignedWord, e: ReceiptExpected, recover?: RecoverTypedData): Promise<KeptWord> {
  const sig = await checkSignature(w, "receipt", recover);
  const problems: string[] = [];
  const p = ReceiptPayload.safeParse(sig.payload);
  if (!p.success) problems.push("its payload is not a receipt (version, network, resourceUrl, payer, issuedAt)");
  else {
    const r = p.data;
    if (r.version !== 1) problems.push(`it is receipt version ${r.version}, not 1`);
    if (r.network !== e.network) problems.push(`it names network ${r.network.slice(0, 80)}, not ${e.network}`);
    if (r.payer !== e.payer) problems.push(`it names payer ${r.payer.slice(0, 80)}, not ${e.payer}`);
    if (resourceOf(r.resourceUrl) !== resourceOf(e.url))
      problems.push("it names another resource than the one paid for");
    if (
      r.transaction !== undefined &&
      r.transaction !== "" &&
      e.transaction !== null &&
      r.transaction !== e.transaction
    )
      problems.push(`it names transaction ${r.transaction.slice(0, 100)}, not ${e.transaction}`);
    if (r.issuedAt < e.signedAt / 1000 - SKEW_S || r.issuedAt > e.at / 1000 + SKEW_S)
      problems.push(`it was issued at ${r.issuedAt}, not between the payment and its arrival`);
  }
  if (sig.state === "ok" && e.offer?.signer && sig.signer !== e.offer.signer)
    problems.push(`it is signed by ${sig.signer}, not by ${e.offer.signer}, who signed the offer`);
  return kept(w, sig, problems);
}

export function sellerSummary(offer: KeptWord | undefined, receipt: KeptWord | undefined): SellerSummary {
  const problems = [...(offer?.problems ?? []), ...(receipt?.problems ?? [])];
  return {
    signed: offer?.state === "verified" && receipt?.state === "verified",
    offer: offer?.state ?? "absent",
    receipt: receipt?.state ?? "absent",
    signer: offer?.signer ?? receipt?.signer ?? null,
    ...(problems.length > 0 ? { problems: problems.slice(0, 8) } : {}),
  };
}

/** A kept part from the journal's JSON, or undefined. */
export function parseKeptWord(json: string | null | undefined): KeptWord | undefined {
  if (!json) return undefined;
  try {
    const r = KeptWord.safeParse(JSON.parse(json));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
