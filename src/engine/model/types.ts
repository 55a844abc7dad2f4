/**
 * The engine's vocabulary, and where each part of it lives: the intent by phase
 * (intent.ts), what a caller asks for and gets back (surface.ts), the states (states.ts);
 * here, the step boundaries a crash test kills the process at, approvals and payment
 * records. Types only, besides the boundaries' list.
 */

/** The step boundaries, in order: a crash test kills the process at each one. */
export const STEPS = [
  "intent_recorded",
  "quote_recorded",
  "reserved",
  "signed",
  "confirm_sent",
  "confirm_recorded",
  "execution_sent",
  "execution_recorded",
] as const;
export type Step = (typeof STEPS)[number];

export { INTENT_STATES, UNFINISHED_STATES, type IntentState } from "./states.js";
export type { StoredError } from "../errors.js";
export type {
  BudgetState,
  FreshIntent,
  Intent,
  IntentAt,
  IntentHead,
  IntentIn,
  IntentKind,
  IntentPatch,
  IntentRecord,
  Phase,
  PhasesOf,
  RefundState,
  SettlementCheck,
  StoredOffer,
  StoredRequest,
  StoredResponse,
} from "./intent.js";
export type * from "./surface.js";

export type ApprovalStatus = "pending" | "approved" | "used" | "declined";

export interface Approval {
  approvalId: string;
  intentId: string;
  quoteId: string;
  action: string;
  amount: bigint;
  payee: string | null;
  expiresAt: number;
  status: ApprovalStatus;
  createdAt: number;
  decidedAt: number | null;
}

/**
 * The fate of one signed proof, by its reference on chain (Solana: its memo, the quote id;
 * EVM: its authorization's nonce): what audit reconciles with the chain.
 */
export type PaymentFate = "pending" | "landed" | "never";

export interface PaymentRecord {
  quoteId: string;
  intentId: string;
  attempt: number;
  amount: bigint;
  payee: string;
  /**
   * The CAIP-2 network it was signed for, which says which rail follows it (rails/port.ts).
   * Absent: journaled before schema 8, on the Solana network configured then.
   */
  network?: string;
  /** The agent key that signed it: the transfer's authority. */
  payer: string | null;
  /** The USDC it moves (Solana: the mint; EVM: the token contract). */
  mint: string | null;
  /** The token account it moves money from: the payer's own, or the owner's in delegate mode (null: journaled before schema 4, the payer's own). */
  source: string | null;
  /** The blockhash the transaction was signed with: from our own RPC (journals before schema 4: maybe the service's). */
  blockhash: string | null;
  /** The last block height at which it can land, as our RPC vouched for it (null: it never did). */
  lastValidHeight: bigint | null;
  /**
   * EVM: the EIP-3009 authorization's nonce (0x and 64 hex digits, lower case), which ties it
   * to this record on chain, and the unix seconds it is valid after and before. Absent on
   * Solana (and on records journaled before schema 9).
   */
  nonce?: string;
  validAfter?: bigint;
  validBefore?: bigint;
  signedAt: number;
  sentAt: number | null;
  fate: PaymentFate;
  tx: string | null;
  claimedTx: string | null;
  checkedAt: number | null;
  /** Found unable to land and still watched for a late landing (chain/released-watch.ts). */
  watch: boolean;
}

/**
 * What a rail puts on a payment record when it signs (rails/port.ts): the network, the key,
 * the account and the asset, and the proof's lifetime — Solana's blockhash and last valid
 * height; EVM's nonce, validAfter and validBefore. A rail may also write the payee as its
 * chain spells it (EVM: the checksummed address), which the chain's records are compared with.
 */
export type RailRecord = Required<Pick<PaymentRecord, "network">> &
  Pick<PaymentRecord, "payer" | "mint" | "source" | "blockhash" | "lastValidHeight"> &
  Partial<Pick<PaymentRecord, "payee" | "nonce" | "validAfter" | "validBefore">>;
