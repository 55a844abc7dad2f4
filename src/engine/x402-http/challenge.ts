/**
 * Reading an x402 v2 seller's answers, as pure functions: the 402's payment requirements
 * (the PAYMENT-REQUIRED header, else a JSON body), the one requirement this server can pay,
 * the payment-identifier extension, and the settlement a PAYMENT-RESPONSE header reports.
 * Everything here came from the seller: it is read defensively, bounded, and quoted only in
 * cut, printable pieces.
 */
import { PaymentRequirements } from "../../domain/wire.js";
import { feePayerDrift, type OurKeys } from "../budget/policy.js";

export interface PaymentRequired402 {
  x402Version: 2;
  resource?: { url: string; description?: string; mimeType?: string };
  accepts: PaymentRequirements[];
  extensions?: Record<string, unknown>;
  error?: string;
}

export interface PaymentResponse {
  success: boolean;
  transaction?: string;
  network?: string;
  payer?: string;
  errorReason?: string;
  /** The seller's extensions on its settlement (x402 v2), e.g. offer-receipt's signed receipt: read as the seller's word, checked apart. */
  extensions?: Record<string, unknown>;
}

/** The most a PAYMENT-REQUIRED header (base64) may be. */
export const PAYMENT_REQUIRED_LIMIT = 64 * 1024;
/** The most a PAYMENT-RESPONSE header (base64) may be. */
export const PAYMENT_RESPONSE_LIMIT = 16 * 1024;

/** The extension key of @x402/extensions' payment-identifier (`PAYMENT_IDENTIFIER`). */
export const PAYMENT_IDENTIFIER = "payment-identifier";

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const BASE58_SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,90}$/;
/** An EVM transaction hash and address (a settlement on an EVM network). */
const EVM_TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const POSITIVE_INTEGER = /^[1-9][0-9]{0,19}$/;
const U64_MAX = 2n ** 64n - 1n;
/** @x402/extensions' payment-identifier rules: 16–128 characters, alphanumeric, `-` and `_`. */
const PAYMENT_ID = /^[A-Za-z0-9_-]{16,128}$/;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Seller text fit for a message: control characters out, length bounded. */
const printable = (v: unknown, max = 64): string => {
  const text = typeof v === "string" ? v : (JSON.stringify(v) ?? String(v));
  const clean = text.replace(/\p{Cc}/gu, "?");
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
};

const optionalString = (v: unknown, max: number) => (typeof v === "string" ? v.slice(0, max) : undefined);

/** base64 JSON, or undefined. */
function decodeHeader(header: string | undefined, limit: number): unknown {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (text === "" || text.length > limit || !BASE64.test(text)) return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(text, "base64")));
  } catch {
    return undefined;
  }
}

/** A v2 PaymentRequired read from a parsed JSON value: the requirements that are well formed kept. */
function asPaymentRequired(value: unknown): PaymentRequired402 | undefined {
  if (!isRecord(value) || value.x402Version !== 2 || !Array.isArray(value.accepts)) return undefined;
  const accepts = value.accepts.slice(0, 32).flatMap((a) => {
    const parsed = PaymentRequirements.safeParse(a);
    return parsed.success ? [parsed.data] : [];
  });
  const out: PaymentRequired402 = { x402Version: 2, accepts };
  const resource = value.resource;
  if (isRecord(resource) && typeof resource.url === "string") {
    out.resource = { url: resource.url.slice(0, 8192) };
    const description = optionalString(resource.description, 2000);
    const mimeType = optionalString(resource.mimeType, 200);
    if (description !== undefined) out.resource.description = description;
    if (mimeType !== undefined) out.resource.mimeType = mimeType;
  }
  if (isRecord(value.extensions)) out.extensions = value.extensions;
  const error = optionalString(value.error, 2000);
  if (error !== undefined) out.error = error;
  return out;
}

const headerOf = (headers: Record<string, string>, name: string): string | undefined =>
  Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];

/**
 * The x402 v2 payment requirements of a 402: the PAYMENT-REQUIRED header (base64 JSON,
 * ≤ 64 KiB) first, then a JSON body (parsed, or text of at most 64 KiB) with `x402Version`
 * 2 and `accepts`. Undefined when neither is there: not an x402 v2 challenge.
 */
export function readPaymentRequired(headers: Record<string, string>, body: unknown): PaymentRequired402 | undefined {
  const fromHeader = asPaymentRequired(decodeHeader(headerOf(headers, "payment-required"), PAYMENT_REQUIRED_LIMIT));
  if (fromHeader) return fromHeader;
  if (typeof body === "string") {
    if (body.length > PAYMENT_REQUIRED_LIMIT) return undefined;
    try {
      return asPaymentRequired(JSON.parse(body));
    } catch {
      return undefined;
    }
  }
  return asPaymentRequired(body);
}

/** What this server can pay: scheme exact on its network in its USDC mint, a fee payer that is none of its keys. */
export interface Payable {
  network: string;
  mint: string;
  /**
   * The fee-payer rule's keys (budget/policy.ts feePayerDrift): never our wallet, never the
   * owner. Absent: the requirement's shape alone (a rail's sync `accepts`; its `vet` applies the
   * rule once the key is loaded).
   */
  ours?: OurKeys;
}

/** Why this server cannot pay a requirement, or undefined when it can. */
function unpayable(r: PaymentRequirements, want: Payable): string | undefined {
  if (r.scheme !== "exact") return "scheme";
  if (r.network !== want.network) return "network";
  if (r.asset !== want.mint) return "asset";
  if (!POSITIVE_INTEGER.test(r.amount) || BigInt(r.amount) > U64_MAX) return "amount";
  if (!BASE58_ADDRESS.test(r.payTo)) return "payTo";
  if (!Number.isFinite(r.maxTimeoutSeconds) || r.maxTimeoutSeconds <= 0) return "maxTimeoutSeconds";
  const feePayer = r.extra.feePayer;
  if (typeof feePayer !== "string" || !BASE58_ADDRESS.test(feePayer)) return "extra.feePayer";
  if (want.ours && feePayerDrift(feePayer, want.ours)) return "ours as fee payer";
  return undefined;
}

/** One line per accepted way to pay, for a person: `exact on solana:… in <asset>: <amount>`. */
export function describeAccept(r: PaymentRequirements): string {
  return `${printable(r.scheme, 24)} on ${printable(r.network, 64)} in ${printable(r.asset, 48)}: ${printable(r.amount, 32)}`;
}

/**
 * The first requirement this server can pay: scheme `exact` on the configured network in
 * its USDC mint, a positive u64 amount, a base58 payee and fee payer (`extra.feePayer`, which
 * the SVM exact scheme needs, and which the fee-payer rule allows), a positive timeout. Else
 * what was offered, for the message — and `feePayerOurs` when one would have been paid but
 * for naming one of our keys as its fee payer.
 */
export function pickRequirement(
  pr: PaymentRequired402,
  want: Payable,
): { ok: true; requirement: PaymentRequirements } | { ok: false; offered: string[]; feePayerOurs?: true } {
  const requirement = pr.accepts.find((r) => unpayable(r, want) === undefined);
  if (requirement) return { ok: true, requirement };
  const ours = pr.accepts.some((r) => unpayable(r, want) === "ours as fee payer");
  return { ok: false, offered: pr.accepts.map(describeAccept), ...(ours ? { feePayerOurs: true as const } : {}) };
}

/** @x402/extensions' `isPaymentIdentifierExtension`: an object whose `info.required` is a boolean. */
function paymentIdentifierDeclaration(pr: PaymentRequired402): Record<string, unknown> | undefined {
  const declared = pr.extensions?.[PAYMENT_IDENTIFIER];
  return isRecord(declared) && isRecord(declared.info) && typeof declared.info.required === "boolean"
    ? declared
    : undefined;
}

/** Whether the seller declared the payment-identifier extension (then it deduplicates payments by our id). */
export function declaresPaymentIdentifier(pr: PaymentRequired402): boolean {
  return paymentIdentifierDeclaration(pr) !== undefined;
}

/** Whether an id is one @x402/extensions accepts as a payment identifier (`isValidPaymentId`). */
export function isValidPaymentId(id: string): boolean {
  return PAYMENT_ID.test(id);
}

/**
 * The `extensions` of the PaymentPayload, as @x402/core's x402Client sends them: the
 * seller's declared extensions echoed, and when it declared `payment-identifier`, that
 * extension with `info.id` set to our id — the shape of @x402/extensions 2.27's
 * `appendPaymentIdentifierToExtensions` (src/payment-identifier/client.ts), hand-written
 * here because that package brings dependencies (an EVM client, ajv, …) the engine does not need.
 * Undefined when the seller declared no extensions. Throws TypeError for an id the
 * extension would refuse (16–128 characters of `[A-Za-z0-9_-]`): a bug, not a seller's doing.
 */
export function paymentExtensions(pr: PaymentRequired402, paymentId: string): Record<string, unknown> | undefined {
  if (pr.extensions === undefined) return undefined;
  const declared = paymentIdentifierDeclaration(pr);
  if (declared === undefined) return { ...pr.extensions };
  if (!isValidPaymentId(paymentId))
    throw new TypeError("a payment identifier must be 16-128 characters of letters, digits, - and _");
  return {
    ...pr.extensions,
    [PAYMENT_IDENTIFIER]: { ...declared, info: { ...(declared.info as Record<string, unknown>), id: paymentId } },
  };
}

/**
 * The settlement a PAYMENT-RESPONSE header reports (base64 JSON SettleResponse), or
 * undefined when there is none or it cannot be read. Fields that do not look like what they
 * name (a Solana signature or an EVM transaction hash, a payer address of either) are left
 * out; the chain is the judge.
 */
export function readPaymentResponse(header: string | undefined): PaymentResponse | undefined {
  const value = decodeHeader(header, PAYMENT_RESPONSE_LIMIT);
  if (!isRecord(value) || typeof value.success !== "boolean") return undefined;
  const out: PaymentResponse = { success: value.success };
  const tx = value.transaction;
  if (typeof tx === "string" && (BASE58_SIGNATURE.test(tx) || EVM_TX_HASH.test(tx))) out.transaction = tx;
  if (typeof value.network === "string" && value.network.length <= 128) out.network = value.network;
  const payer = value.payer;
  if (typeof payer === "string" && (BASE58_ADDRESS.test(payer) || EVM_ADDRESS.test(payer))) out.payer = payer;
  if (typeof value.errorReason === "string") out.errorReason = printable(value.errorReason, 200);
  if (isRecord(value.extensions)) out.extensions = value.extensions;
  return out;
}
