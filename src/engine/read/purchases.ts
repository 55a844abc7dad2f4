/**
 * The read model of x402 resources bought with paid_fetch: one purchase as a person or an
 * agent reads it — never its request's header values, body or query values, never the proof.
 */
import { formatDecimal } from "../../domain/money.js";
import type { Intent, SettlementCheck } from "../model/types.js";

export interface PurchaseView {
  intentId: string;
  intentKey: string;
  origin: string | null;
  method: string | null;
  /** The URL with its query values redacted. */
  url: string | null;
  /** Where the purchase stands (an intent state). */
  state: string;
  /** The answer's HTTP status, once there was one. */
  status: number | null;
  contentType: string | null;
  bodyBytes: number | null;
  amount: string | null;
  currency: "USDC";
  payTo: string | null;
  network: string | null;
  transaction: string | null;
  settlement: SettlementCheck;
  attention?: string;
  error?: unknown;
  callId: string | null;
  createdAt: string;
  updatedAt: string;
}

export function purchaseView(intent: Intent): PurchaseView {
  const input = intent.input as { method?: unknown; url?: unknown };
  return {
    intentId: intent.intentId,
    intentKey: intent.intentKey,
    origin: intent.origin,
    method: typeof input.method === "string" ? input.method : null,
    url: typeof input.url === "string" ? input.url : null,
    state: intent.state,
    status: intent.response?.status ?? null,
    contentType: intent.response?.contentType ?? null,
    bodyBytes: intent.response?.size ?? null,
    amount: intent.amount === null ? null : formatDecimal(intent.amount),
    currency: "USDC",
    payTo: intent.payee,
    network: intent.requirements?.network ?? null,
    transaction: intent.paymentTx,
    settlement: intent.settlement,
    ...(intent.attention ? { attention: intent.attention } : {}),
    ...(intent.error ? { error: { code: intent.error.code, message: intent.error.message } } : {}),
    callId: intent.callId,
    createdAt: new Date(intent.createdAt).toISOString(),
    updatedAt: new Date(intent.updatedAt).toISOString(),
  };
}
