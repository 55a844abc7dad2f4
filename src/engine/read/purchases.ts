/**
 * The read model of x402 resources bought with paid_fetch: one purchase as a person or an
 * agent reads it — never its request's header values, body or query values, never the proof.
 */
import { formatDecimal } from "../../domain/money.js";
import { paidError } from "../errors.js";
import type { JournalStore } from "../journal/port.js";
import { pageOf, readCursor } from "./cursor.js";
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

/** A page of purchases, and the cursor of the next (null: none older). */
export interface PurchasePage {
  items: PurchaseView[];
  nextCursor: string | null;
}

/** The origin a filter names (`https://host[:port]`, as the journal records it), or invalid_input. */
function originFilter(origin: string): string {
  let url: URL | undefined;
  try {
    url = origin.length <= 300 ? new URL(origin) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.origin === "null")
    throw paidError("invalid_input", { problem: "origin", field: "origin" });
  return url.origin;
}

/** The fetch purchases, newest first, `limit` (1–100, 20 by default) at a time, of one origin when asked. */
export async function listPurchases(
  journal: JournalStore,
  opts: { origin?: string; limit?: number; cursor?: string },
): Promise<PurchasePage> {
  const limit = Math.max(1, Math.min(100, opts.limit ?? 20));
  const origin = opts.origin === undefined ? undefined : originFilter(opts.origin);
  const rows = await journal.purchases({
    ...readCursor(opts.cursor),
    limit: limit + 1,
    ...(origin === undefined ? {} : { origin }),
  });
  const { page, nextCursor } = pageOf(rows, limit);
  return { items: page.map(purchaseView), nextCursor };
}
