/**
 * The service's stored rows (quotes, payments, executions) and the views of them that go
 * on the wire, shared by the quote/execution service, settlement and the provider lifecycle.
 */
import { findAction } from "../providers/catalog.js";
import type { ExecutionStatus, PaymentRequirements } from "../../domain/wire.js";
import { formatDecimal } from "../../domain/money.js";

export type Outcome = "succeed" | "fail";

export interface QuoteRow {
  quote_id: string;
  tenant: string;
  action: string;
  input: string;
  amount: string;
  budget: string;
  requirements: string;
  /** JSON x402 PaymentRequirements on the EVM ledger, the binding copy; null when it was off. */
  evm_requirements: string | null;
  context: string | null;
  created_at: number;
  expires_at: number;
  execution_id: string | null;
}

export interface PaymentRow {
  payment_id: string;
  tenant: string;
  quote_id: string;
  message_hash: string;
  status: "settling" | "settled";
  transaction_sig: string | null;
  payer: string | null;
  amount: string;
  /** The proof transaction's blockhash: while the ledger accepts it, the transaction could still land. */
  blockhash: string | null;
  /** Set for a payment on the EVM ledger (null: Solana). */
  network: string | null;
  /** The EVM proof (x402 PaymentPayload JSON with the signed EIP-3009 authorization). */
  evm_proof: string | null;
  created_at: number;
  updated_at: number;
}

/** A quote's requirements, as its `accepts` lists them: Solana first, then the EVM ledger's. */
export function acceptsOf(q: QuoteRow): PaymentRequirements[] {
  const solana = JSON.parse(q.requirements) as PaymentRequirements;
  return q.evm_requirements ? [solana, JSON.parse(q.evm_requirements) as PaymentRequirements] : [solana];
}

export interface ExecutionRow {
  execution_id: string;
  tenant: string;
  quote_id: string;
  action: string;
  input: string;
  status: ExecutionStatus;
  provider: string;
  region: string;
  resource_id: string | null;
  output: string | null;
  error: string | null;
  refund: string | null;
  outcome: Outcome;
  delay_ms: number;
  attempts: number;
  next_at: number | null;
  created_at: number;
  updated_at: number;
}

export const iso = (ms: number) => new Date(ms).toISOString();

/** An execution as GET /executions/{id} shows it; on create, only the fields service-v1.md returns then. */
export function executionView(row: ExecutionRow, onCreate: boolean): Record<string, unknown> {
  const action = findAction(row.action);
  const base: Record<string, unknown> = {
    executionId: row.execution_id,
    status: row.status,
    action: row.action,
    createdAt: iso(row.created_at),
    quoteId: row.quote_id,
  };
  if (action && row.resource_id) base[action.resourceKey] = row.resource_id;
  if (onCreate) return base;
  const refund = row.refund ? (JSON.parse(row.refund) as { pending?: boolean }) : undefined;
  return {
    ...base,
    updatedAt: iso(row.updated_at),
    providerMeta: { provider: row.provider, region: row.region, attempt: Math.max(1, row.attempts) },
    ...(row.output ? { output: JSON.parse(row.output) as unknown } : {}),
    ...(row.error ? { error: JSON.parse(row.error) as unknown } : {}),
    ...(refund && !refund.pending ? { refund } : {}),
  };
}

/**
 * A quote as POST /quotes and GET /quotes/{id} show it; `signed`, the service's signed offers
 * (x402 offer-receipt) and the absolute URL of the resource they are for (`resource` is its path).
 */
export function quoteView(
  q: QuoteRow,
  withinBudget?: boolean,
  signed?: { resourceUrl: string; extensions: Record<string, unknown> },
) {
  const context = q.context ? (JSON.parse(q.context) as { breakdown?: unknown }) : {};
  return {
    quoteId: q.quote_id,
    action: q.action,
    // The input priced, as it will be compared at POST /executions: a client can see the
    // quote is for its own input without asking (an extension; v1 leaves it unsaid).
    input: JSON.parse(q.input) as unknown,
    amount: formatDecimal(BigInt(q.amount)),
    currency: "USDC",
    expiresAt: iso(q.expires_at),
    createdAt: iso(q.created_at),
    ...(withinBudget === undefined ? {} : { withinBudget }),
    breakdown: context.breakdown,
    paymentRequirement: {
      scheme: "x402",
      resource: "/executions",
      network: "solana",
      x402Version: 2,
      accepts: acceptsOf(q),
      ...(signed ? { resourceUrl: signed.resourceUrl, extensions: signed.extensions } : {}),
    },
  };
}
