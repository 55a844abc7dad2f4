/**
 * The engine's vocabulary: what a caller asks for, what it gets back, the journal's typed
 * intent record, and the step boundaries a crash test kills the process at. Types only.
 */
import type { Execution, ExecutionStatus, PaymentRequirements, Quote, Refund } from "../../domain/wire.js";

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
import type { IntentState } from "./states.js";

export type BudgetState = "none" | "reserved" | "spent" | "released";

/**
 * What is known about the settlement on chain: `claimed` = the service says so and our RPC
 * has not confirmed it yet; `verified` = our RPC shows the transfer, exactly as priced;
 * `mismatch` = the chain disagrees with the claim (a human looks).
 */
export type SettlementCheck = "none" | "claimed" | "verified" | "mismatch";

/** Refund credit: only what our RPC shows landing in the wallet counts. */
export type RefundState = "none" | "pending" | "verified" | "unverified";

export type { StoredError } from "../errors.js";
import type { StoredError } from "../errors.js";

/** What an intent buys: a catalog action of the v1 service, or an x402 resource (`paid_fetch`). */
export type IntentKind = "action" | "fetch";

/** A fetch's request as the agent gave it: a secret (its URL and headers may carry credentials), in its own column. */
export interface StoredRequest {
  url: string;
  origin: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers: Record<string, string>;
  body: string | null;
}

/** What a resource's 402 offered (x402 v2 `PAYMENT-REQUIRED`), kept for signing and for the record. */
export interface StoredOffer {
  resource?: { url: string; description?: string; mimeType?: string };
  /** The extensions the proof carries: the `payment-identifier`, when the resource declared that extension. */
  extensions?: Record<string, unknown>;
  /** That payment identifier (one per attempt, the same on every resend). */
  paymentId?: string;
}

/** The answer a fetch got (the body itself is kept apart, by intent). */
export interface StoredResponse {
  status: number;
  /** The allow-listed headers (x402-http/response.ts). */
  headers: Record<string, string>;
  contentType: string | null;
  /** The body's size in bytes. */
  size: number;
  /** A cross-origin redirect that was not followed. */
  redirectRefused?: string;
  /** Whether the answer came with the payment (false: the unpaid answer, or one after a refused proof). */
  paid: boolean;
}

/** One intent as the journal holds it: typed, amounts in atomic units. */
export interface Intent {
  intentId: string;
  kind: IntentKind;
  /** A fetch: the resource's origin (`https://host[:port]`); null for an action. */
  origin: string | null;
  /** A fetch: the request, a secret: lives in its own column and nowhere else. */
  request: StoredRequest | null;
  /** A fetch: what its 402 offered besides the requirement (`requirements`). */
  offer: StoredOffer | null;
  /** A fetch: the answer it got, once it got one. */
  response: StoredResponse | null;
  /** The caller's key for this intent (or a generated one). */
  intentKey: string;
  /** Fresh attempts after a definite stop with nothing spent. */
  attempt: number;
  /** The Idempotency-Key sent on every request of the current attempt. */
  idemKey: string;
  service: string;
  action: string;
  input: Record<string, unknown>;
  fingerprint: string;
  agentBudget: bigint | null;
  state: IntentState;
  quoteId: string | null;
  quote: Quote | null;
  amount: bigint | null;
  payee: string | null;
  quoteExpiresAt: number | null;
  quotedAt: number | null;
  requirements: PaymentRequirements | null;
  /** A secret: lives in its own column and nowhere else. */
  proof: string | null;
  /** The service's confirm answer, as given. */
  payment: Record<string, unknown> | null;
  /** The settlement's transaction: seen on chain when `settlement` is verified, else claimed. */
  paymentTx: string | null;
  settlement: SettlementCheck;
  executionId: string | null;
  execution: Execution | null;
  execStatus: ExecutionStatus | null;
  output: unknown;
  /** The service's refund claim, as given. */
  refund: Refund | null;
  refundState: RefundState;
  /** Credited back to the caps: what our RPC saw land, never more than was paid. */
  refundCredit: bigint;
  refundTx: string | null;
  /** When the refund claim was first seen (a claim unverifiable for long goes to a human). */
  refundSeenAt: number | null;
  budgetState: BudgetState;
  budgetAmount: bigint | null;
  budgetAt: number | null;
  approvalId: string | null;
  error: StoredError | null;
  attention: string | null;
  callId: string | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  nextPollAt: number | null;
  pollIntervalMs: number | null;
  createdAt: number;
  updatedAt: number;
}

export type IntentPatch = Partial<Omit<Intent, "intentId" | "createdAt" | "updatedAt">>;

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

/** The fate of one signed proof, by its memo (= quote id): what audit reconciles with the chain. */
export type PaymentFate = "pending" | "landed" | "never";

export interface PaymentRecord {
  quoteId: string;
  intentId: string;
  attempt: number;
  amount: bigint;
  payee: string;
  /** The agent key that signed it: the transfer's authority. */
  payer: string | null;
  mint: string | null;
  /** The token account it moves money from: the payer's own, or the owner's in delegate mode (null: journaled before schema 4, the payer's own). */
  source: string | null;
  /** The blockhash the transaction was signed with: from our own RPC (journals before schema 4: maybe the service's). */
  blockhash: string | null;
  /** The last block height at which it can land, as our RPC vouched for it (null: it never did). */
  lastValidHeight: bigint | null;
  signedAt: number;
  sentAt: number | null;
  fate: PaymentFate;
  tx: string | null;
  claimedTx: string | null;
  checkedAt: number | null;
  /** Found unable to land and still watched for a late landing (chain/released-watch.ts). */
  watch: boolean;
}

// ---- The engine's surface ------------------------------------------------------------

export interface PayRequest {
  action: string;
  input: Record<string, unknown>;
  budget?: { amount: string; currency: string };
  /** The caller's own key for this intent: a retried call with it lands on the same intent. */
  intentKey?: string;
  approvalId?: string;
}

export type ApprovalAnswer = "accept" | "decline" | "cancel";

export interface ApprovalAsk {
  action: string;
  amount: string;
  currency: "USDC";
  payee: string;
  quoteId: string;
  expiresAt: string;
  input: Record<string, unknown>;
}

export interface PayOptions {
  callId?: string;
  /** Asks a human (MCP elicitation). Absent: a person approves elsewhere (console, terminal) and the call comes back with the approvalId. */
  approve?: (ask: ApprovalAsk) => Promise<ApprovalAnswer>;
  /** The caller gave up (MCP cancellation): stop before reservation or signing. */
  signal?: AbortSignal;
  /** Progress while the call waits (for a settling payment, or another call on the same intent). */
  onProgress?: (message: string) => void;
}

export interface PaidCall {
  intentId: string;
  intentKey: string;
  executionId: string;
  status: ExecutionStatus;
  action: string;
  quote: { quoteId: string; amount: string; currency: "USDC"; expiresAt: string };
  payment: { transaction: string | null; amount: string; currency: "USDC"; settlement: SettlementCheck };
  attention?: string;
  callId?: string;
}

export interface ExecutionView {
  intentId: string;
  executionId: string | null;
  action: string;
  status: string;
  state: string;
  quoteId: string | null;
  amount: string | null;
  currency: "USDC";
  payee: string | null;
  paymentTransaction: string | null;
  settlement: SettlementCheck;
  output?: unknown;
  error?: unknown;
  refund?: unknown;
  refundCredited?: string;
  providerMeta?: unknown;
  attention?: string;
  callId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ExecutionEvent {
  intentId: string;
  executionId: string;
  status: string;
  previous: string | null;
  view: ExecutionView;
}

// ---- paid_fetch ----------------------------------------------------------------------

/** A paid_fetch call, as the agent gave it (checked by x402-http/request.ts). */
export interface FetchRequest {
  url: unknown;
  method?: unknown;
  headers?: unknown;
  body?: unknown;
  budget?: { amount: string; currency: string };
  intentKey?: string;
  approvalId?: string;
}

/** What paid_fetch answers: the resource's answer, and the payment when there was one. */
export interface FetchResult {
  /** The purchase, when the resource asked for payment (null: it answered without asking). */
  intentId: string | null;
  intentKey: string | null;
  status: number;
  headers: Record<string, string>;
  contentType: string | null;
  /** The body's size in bytes (the whole, also when the body shown is cut or left out). */
  size: number;
  payment: {
    amount: string;
    currency: "USDC";
    payTo: string;
    transaction: string | null;
    network: string;
    settlement: SettlementCheck;
  } | null;
  attention?: string;
  /** A cross-origin redirect that was not followed. */
  redirectRefused?: string;
}
