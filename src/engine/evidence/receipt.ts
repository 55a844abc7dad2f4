/**
 * A receipt: one self-contained JSON document for one purchase (an action's execution or a
 * paid_fetch) that anyone can check without our journal — what was bought, the requirement
 * as received, the approval and its evidence, the payment, what our RPC showed of it on
 * chain (with the wire transaction), the outcome, and the seller's signed word. Its shape
 * (`paid-actions/1`), its sections' digests (so that a changed section is named), and the
 * bytes its signature covers: a domain-separation prefix, then the canonical JSON of the
 * whole document without its signature. Nothing secret goes in: no proof before it landed,
 * no API key, no request header or query value (a fetch's URL redacted as the journal keeps it).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { canonicalJson, DecimalString } from "../../domain/wire.js";
import { KeptAssertion } from "./kept.js";
import { SignedWord } from "./seller.js";

export const RECEIPT_FORMAT = "paid-actions/1";
/** What the receipt's signature covers begins with this, so that it can never be taken for another message. */
export const RECEIPT_PREFIX = "paid-actions receipt v1\n";

const Iso = z.string().max(40);
const Text = z.string().max(8192);
const U64 = z.string().regex(/^(0|[1-9][0-9]{0,19})$/);

export const Bought = z.strictObject({
  kind: z.enum(["action", "fetch"]),
  intentId: Text,
  executionId: Text.nullable(),
  /** The catalog action (an action), or null. */
  action: Text.nullable(),
  /** SHA-256 (hex) of the action and its canonical input, or of a fetch's whole request (the digest the approval's terms carry). */
  inputDigest: Text,
  /**
   * A fetch's method and URL (query values redacted) and origin; an action's, POST to the
   * service's paid resource as its challenge named it (what its signed word is checked
   * against), or null when none was kept.
   */
  request: z.strictObject({ method: Text, url: Text, origin: Text }).nullable(),
});
export type Bought = z.infer<typeof Bought>;

export const QuoteSection = z.strictObject({
  quoteId: Text,
  amount: DecimalString,
  currency: z.literal("USDC"),
  quotedAt: Iso,
  expiresAt: Iso,
});
export type QuoteSection = z.infer<typeof QuoteSection>;

export const ApprovalSection = z.strictObject({
  approvalId: Text,
  status: z.enum(["pending", "approved", "used", "declined"]),
  /**
   * How the person decided: `passkey` (with the console's passkey, its assertion below),
   * `host` (the host's own prompt, answered within the call), `person` (the console or a
   * terminal, no passkey registered then).
   */
  channel: z.enum(["passkey", "host", "person"]),
  decidedAt: Iso.nullable(),
  evidence: KeptAssertion.nullable(),
});
export type ApprovalSection = z.infer<typeof ApprovalSection>;

export const PaymentSection = z.strictObject({
  network: Text,
  /** The transaction that settled it, as far as is known (null: none seen or claimed yet). */
  transaction: Text.nullable(),
  /** The key that signed the payment: the transfer's authority, and this receipt's signer. */
  payer: Text,
  source: Text,
  payee: Text,
  asset: Text,
  amount: DecimalString,
  memo: Text,
  signedAt: Iso,
  /** What the journal knew of the proof's fate when the receipt was made. */
  fate: z.enum(["pending", "landed", "never"]),
});
export type PaymentSection = z.infer<typeof PaymentSection>;

export const Transfer = z.strictObject({
  source: Text,
  destination: Text,
  authority: Text,
  mint: Text.nullable(),
  amount: U64,
});

export const ChainSection = z.strictObject({
  readAt: Iso,
  /** Solana: the slot; EVM: the block number. */
  slot: U64,
  /** EVM: the block's hash; Solana: null. */
  blockHash: Text.nullable(),
  blockTime: z.number().int().nullable(),
  finality: Text.nullable(),
  failed: z.boolean(),
  transfer: Transfer.nullable(),
  memos: z.array(Text).max(16),
  /**
   * The transaction as our RPC gave it (Solana: the wire transaction, base64; EVM: JSON of its
   * signed bytes and the authorization in its calldata, rails/port-receipts.ts ChainEvidence).
   */
  wire: z.string().max(65_536),
});
export type ChainSection = z.infer<typeof ChainSection>;

export const Refund = z.strictObject({
  transaction: Text.nullable(),
  /** What the service claimed, and what our RPC showed coming back (null: it could not tell). */
  claimed: DecimalString.nullable(),
  seenOnChain: DecimalString.nullable(),
  state: z.enum(["none", "pending", "verified", "unverified"]),
});

export const Outcome = z.strictObject({
  state: Text,
  /** The execution's status (an action), or `completed` for a delivered fetch; null: none. */
  status: Text.nullable(),
  settlement: z.enum(["none", "claimed", "verified", "mismatch"]),
  /** SHA-256 (hex) of the execution's canonical output. */
  outputDigest: Text.nullable(),
  /** A fetch's answer: its status, type, size and body digest. */
  answer: z
    .strictObject({ status: z.number().int(), contentType: Text.nullable(), size: z.number().int(), bodyDigest: Text })
    .nullable(),
  refunds: z.array(Refund).max(4),
  attention: Text.nullable(),
  error: Text.nullable(),
});
export type Outcome = z.infer<typeof Outcome>;

/** One part of the seller's word as the receipt carries it; `signed` withheld when its signed URL carries query values. */
export const SellerPart = z.strictObject({
  signed: SignedWord.nullable(),
  state: z.enum(["verified", "mismatch", "invalid", "unchecked"]),
  signer: Text.nullable(),
  problems: z.array(Text).max(16),
  withheld: Text.nullable(),
});
export const SellerSection = z.strictObject({ offer: SellerPart.nullable(), receipt: SellerPart.nullable() });
export type SellerSection = z.infer<typeof SellerSection>;

/** The sections a digest is kept of: a changed one is named by `receipt verify`. */
export const SECTIONS = [
  "bought",
  "requirement",
  "quote",
  "approval",
  "payment",
  "chain",
  "outcome",
  "seller",
] as const;
export type Section = (typeof SECTIONS)[number];

export const ReceiptDocument = z.strictObject({
  receipt: z.literal(RECEIPT_FORMAT),
  id: Text,
  madeAt: Iso,
  bought: Bought,
  /** The payment requirement as received (the service's challenge entry, or the 402's). */
  requirement: z.record(z.string(), z.unknown()),
  quote: QuoteSection,
  approval: ApprovalSection.nullable(),
  payment: PaymentSection,
  chain: ChainSection.nullable(),
  /** Why `chain` is null, when it is. */
  chainUnread: Text.nullable(),
  outcome: Outcome,
  seller: SellerSection.nullable(),
  digests: z.strictObject(Object.fromEntries(SECTIONS.map((s) => [s, z.string()])) as Record<Section, z.ZodString>),
  signature: z.strictObject({ scheme: z.enum(["ed25519", "eip191"]), signer: Text, value: Text }),
});
export type ReceiptDocument = z.infer<typeof ReceiptDocument>;
export type Unsigned = Omit<ReceiptDocument, "signature">;

/** SHA-256 (hex) of a section's canonical JSON. */
export const sectionDigest = (value: unknown) =>
  createHash("sha256").update(canonicalJson(value), "utf8").digest("hex");

/** The digest of every section of a document. */
export function digestsOf(doc: Omit<Unsigned, "digests">): Record<Section, string> {
  return Object.fromEntries(SECTIONS.map((s) => [s, sectionDigest(doc[s])])) as Record<Section, string>;
}

/** The bytes the signature covers: the prefix, then the canonical JSON of the document without its signature. */
export function signedBytes(doc: Unsigned | ReceiptDocument): Uint8Array {
  const rest: Record<string, unknown> = { ...doc };
  delete rest.signature;
  return new TextEncoder().encode(RECEIPT_PREFIX + canonicalJson(rest));
}
