/**
 * The rail port's part in receipts (rails/port.ts names its two methods, Rail.evidence and
 * Rail.signReceipt): what a rail shows of a payment's transaction, a receipt's own
 * signature, and the checks of a receipt that are a rail's but need no key, no journal and
 * no configuration (RailVerifier, for `receipt verify` anywhere). Each contract names both
 * rails, as port.ts does.
 */
import type { ChainTx } from "../chain/chain.js";
import type { RailKind } from "./port.js";

/** What our RPC showed of a payment's transaction when a receipt was made. */
export interface ChainEvidence {
  /** Solana: the transaction's signature; EVM: its hash. */
  transaction: string;
  /** Solana: the slot; EVM: the block number. */
  slot: bigint;
  /** EVM: the block's hash (a reorganised chain shows another); Solana: null (getTransaction names none). */
  blockHash: string | null;
  blockTime: number | null;
  /**
   * Solana: the signature status (processed, confirmed, finalized); EVM: the node's newest tag
   * covering the block (finalized, safe or latest) and the confirmations above it, as
   * "latest, 3 confirmations"; null: not said.
   */
  finality: string | null;
  failed: boolean;
  /** The payment's transfer in it, as the rail reads it (null: none from the paying account). */
  transfer: ChainTx["transfers"][number] | null;
  memos: string[];
  /**
   * The transaction itself. Solana: the wire transaction (signatures and message), base64;
   * EVM: canonical JSON `{raw, token, authorization, signature}` — the signed transaction's
   * bytes (0x RLP, from eth_getRawTransactionByHash), and the EIP-3009 authorization its
   * calldata submits to `token` with the payer's EIP-712 signature (nulls when the calldata
   * is no direct transferWithAuthorization call).
   */
  wire: string;
  /** What is wrong with it as the payment journaled (verifyPayment). */
  problems: string[];
}

/** Found (as our RPC shows it), not on our RPC, or our RPC could not tell. */
export type EvidenceReading =
  { kind: "found"; evidence: ChainEvidence } | { kind: "missing" } | { kind: "unknown"; why: string };

/** A receipt's own signature, by the key that signed the payment. */
export interface ReceiptSignature {
  scheme: "ed25519" | "eip191";
  signer: string;
  value: string;
}

/** A payment as a receipt states it: what its transaction must show. */
export interface StatedPayment {
  network: string;
  transaction: string;
  /** The key that signed the payment: the transfer's authority. */
  payer: string;
  /** The account it moved money from (Solana: a token account; EVM: the payer's address). */
  source: string;
  /** Whom it paid (Solana: the owner of the destination token account; EVM: the address). */
  payee: string;
  asset: string;
  amount: bigint;
  /** What ties it to the purchase (Solana: the memo; EVM: the authorization's nonce). */
  memo: string;
}

/** What a transaction as a receipt carries it shows, checked offline. */
export interface WireCheck {
  /** The transaction's id as its own bytes give it (Solana: the first signature, base58). */
  transaction: string | null;
  /** Every signature it carries: whose, and whether it verifies over the message. */
  signatures: Array<{ signer: string; valid: boolean }>;
  /** What differs from the stated payment, or does not verify. Empty: it holds. */
  problems: string[];
}

/**
 * The checks of a receipt that are a rail's, with no key, no journal and no configuration:
 * what `receipt verify` loads for the receipt's network (rails/load.ts railVerifier).
 */
export interface RailVerifier {
  readonly kind: RailKind;
  /**
   * Whether `signature` is `signer`'s over `message`. Solana (`ed25519`): an ed25519
   * signature (base58) by the address's key. EVM (`eip191`): `personal_sign` (0x hex), whose
   * recovered address is `signer`.
   */
  verifyMessage(
    scheme: ReceiptSignature["scheme"],
    message: Uint8Array,
    signer: string,
    signature: string,
  ): Promise<boolean>;
  /**
   * The transaction a receipt carries (ChainEvidence.wire), checked against what it states:
   * Solana: every signature verifies over the message, the payer's among them, its id is the
   * stated transaction, and its TransferChecked moves the amount of the asset from the
   * source to the payee's associated token account with the payer as authority, beside the
   * memo. EVM: the raw transaction hashes to the stated hash on the stated chain and its
   * sender's signature recovers; the authorization carried is its calldata's, sent to the
   * asset, from the payer to the payee of the amount with the stated nonce, and its EIP-712
   * signature over the asset's USDC domain recovers to the payer.
   */
  checkWire(wire: string, stated: StatedPayment): Promise<WireCheck>;
  /**
   * What the RPC at `rpcUrl` shows of the stated transaction (any RPC of that network: the
   * verifier's own), with what differs from the stated payment in `problems`. Solana:
   * getTransaction and getSignatureStatuses; EVM: the transaction's receipt (its
   * AuthorizationUsed(payer, nonce) log and the Transfer after it), its signed bytes, the
   * block's time and the node's finality tags.
   */
  onChain(rpcUrl: string, stated: StatedPayment): Promise<EvidenceReading>;
  /**
   * EVM only: the address that signed EIP-712 typed data (a seller's offer or receipt in
   * x402's `eip712` format); undefined when it recovers none. Absent on Solana, whose rail
   * has no EVM library.
   */
  recoverTypedData?(
    typed: {
      domain: Record<string, unknown>;
      types: Record<string, unknown>;
      primaryType: string;
      message: Record<string, unknown>;
    },
    signature: string,
  ): Promise<string | undefined>;
}
