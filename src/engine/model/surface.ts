/**
 * The engine's surface: what a caller asks for (a paid call, a paid fetch, a person's
 * approval) and what it gets back (the call's result, an execution's view and its events).
 * Types only.
 */
import type { ExecutionStatus } from "../../domain/wire.js";
import type { SettlementCheck } from "./intent.js";
import type { IntentState } from "./states.js";

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

/**
 * How a resume drives an intent nobody's call drives (at start-up, the reconciler's sweep and
 * polls): no caller waits for it, so where the service gives no answer it asks the chain.
 */
export interface ResumeOptions {
  /**
   * A payment our RPC showed landed whose service has not answered the execution request for
   * this long since is flagged for a person (absent: this resume flags nothing).
   */
  unansweredAttentionMs?: number;
}

export interface PaidCall {
  intentId: string;
  intentKey: string;
  executionId: string;
  status: ExecutionStatus;
  action: string;
  quote: { quoteId: string; amount: string; currency: "USDC"; expiresAt: string };
  payment: {
    transaction: string | null;
    amount: string;
    currency: "USDC";
    settlement: SettlementCheck;
    /** Whether the service signed (x402 offer-receipt): present when it gave a signed offer or receipt. */
    seller?: SellerSummary;
  };
  attention?: string;
  callId?: string;
}

export interface ExecutionView {
  intentId: string;
  executionId: string | null;
  action: string;
  /** The execution's status, or (no execution yet) where the purchase stands. */
  status: ExecutionStatus | IntentState;
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
  status: ExecutionStatus;
  previous: ExecutionStatus | null;
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
    /** Whether the seller signed (x402 offer-receipt): present when it gave a signed offer or receipt. */
    seller?: SellerSummary;
  } | null;
  attention?: string;
  /** A cross-origin redirect that was not followed. */
  redirectRefused?: string;
}

/**
 * Where one part of a seller's signed word (x402 offer-receipt) stands: its signature
 * verifies and it matches what was paid (`verified`); it verifies but says something else
 * (`mismatch`); it does not verify (`invalid`: tampered, or not the seller's); nothing here
 * can check its signature (`unchecked`); or the seller gave none (`absent`).
 */
export type WordState = "verified" | "mismatch" | "invalid" | "unchecked" | "absent";

/** What a purchase's result says of the seller's word: whether the seller signed, each part's state, who. */
export interface SellerSummary {
  /** Both the offer and the receipt verified and match the payment. */
  signed: boolean;
  offer: WordState;
  receipt: WordState;
  signer: string | null;
  problems?: string[];
}
