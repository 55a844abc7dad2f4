/**
 * The v1 wire: zod schemas for every body that crosses between a client and a v1
 * service, as service-v1.md and decisions.md define them. Shared by the reference
 * service (which validates requests) and the client (which validates responses).
 * Response schemas are loose: unknown fields are kept, never a reason to fail.
 */
import { z } from "zod";
import { EXECUTION_STATUSES } from "./statuses.js";

export const ACTION_NAME = /^[a-z0-9-]+\.[a-z0-9-]+$/;
export const DECIMAL_STRING = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

export const ActionName = z.string().regex(ACTION_NAME, "must look like <category>.<verb>, in [a-z0-9-]");

export const DecimalString = z.string().regex(DECIMAL_STRING, 'must be a non-negative decimal string such as "12.50"');
export type DecimalString = z.infer<typeof DecimalString>;

export const Budget = z.object({ amount: DecimalString, currency: z.string().min(1).max(16) });
export type Budget = z.infer<typeof Budget>;

export const JsonObject = z.record(z.string(), z.unknown());

export const QuoteRequest = z.object({ action: ActionName, input: JsonObject, budget: Budget });
export type QuoteRequest = z.infer<typeof QuoteRequest>;

export const ExecutionRequest = z.object({ action: ActionName, input: JsonObject });
export type ExecutionRequest = z.infer<typeof ExecutionRequest>;

export const ExecutionStatus = z.enum(EXECUTION_STATUSES);
export type ExecutionStatus = z.infer<typeof ExecutionStatus>;
export const FINAL_STATUSES: ReadonlySet<ExecutionStatus> = new Set(["completed", "refunded"]);

// ---- x402 v2 --------------------------------------------------------------

export const PaymentRequirements = z.looseObject({
  scheme: z.string(),
  network: z.string(),
  amount: z.string(),
  asset: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number(),
  extra: z.record(z.string(), z.unknown()).default({}),
});
export type PaymentRequirements = z.infer<typeof PaymentRequirements>;

export const ResourceInfo = z.looseObject({ url: z.string() });

export const PaymentRequired = z.looseObject({
  x402Version: z.number(),
  error: z.string().optional(),
  resource: ResourceInfo.optional(),
  accepts: z.array(PaymentRequirements),
});
export type PaymentRequired = z.infer<typeof PaymentRequired>;

export const PaymentPayload = z.looseObject({
  x402Version: z.number(),
  resource: ResourceInfo.optional(),
  accepted: PaymentRequirements,
  payload: z.looseObject({ transaction: z.string() }),
});
export type PaymentPayload = z.infer<typeof PaymentPayload>;

/** An EIP-3009 authorization as x402's exact EVM scheme carries it (decimal strings, 0x hex). */
export const Eip3009Authorization = z.looseObject({
  from: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  to: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  value: z.string().regex(/^(0|[1-9][0-9]{0,77})$/),
  validAfter: z.string().regex(/^(0|[1-9][0-9]{0,77})$/),
  validBefore: z.string().regex(/^(0|[1-9][0-9]{0,77})$/),
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
});
export type Eip3009Authorization = z.infer<typeof Eip3009Authorization>;

/** An x402 v2 PaymentPayload of the exact scheme on an EVM network: a signed EIP-3009 authorization. */
export const EvmPaymentPayload = z.looseObject({
  x402Version: z.number(),
  resource: ResourceInfo.optional(),
  accepted: PaymentRequirements,
  payload: z.looseObject({
    authorization: Eip3009Authorization,
    signature: z.string().regex(/^0x([0-9a-fA-F]{2}){65,2048}$/),
  }),
});
export type EvmPaymentPayload = z.infer<typeof EvmPaymentPayload>;

export const SettleResponse = z.looseObject({
  success: z.boolean(),
  transaction: z.string(),
  network: z.string(),
  payer: z.string().optional(),
});
export type SettleResponse = z.infer<typeof SettleResponse>;

// ---- Resources --------------------------------------------------------------

export const PaymentRequirement = z.looseObject({
  scheme: z.string(),
  resource: z.string(),
  network: z.string(),
  x402Version: z.number().optional(),
  accepts: z.array(PaymentRequirements).optional(),
});
export type PaymentRequirement = z.infer<typeof PaymentRequirement>;

export const Quote = z.looseObject({
  quoteId: z.string(),
  action: z.string(),
  amount: DecimalString,
  currency: z.string(),
  expiresAt: z.string(),
  paymentRequirement: PaymentRequirement,
  withinBudget: z.boolean().optional(),
});
export type Quote = z.infer<typeof Quote>;

export const Payment = z.looseObject({
  paymentId: z.string(),
  quoteId: z.string(),
  status: z.string(),
  amount: DecimalString,
  currency: z.string(),
  network: z.string(),
  transaction: z.string(),
  payer: z.string(),
});
export type Payment = z.infer<typeof Payment>;

export const PrepareResponse = z.looseObject({ quoteId: z.string(), paymentRequired: PaymentRequired });
export type PrepareResponse = z.infer<typeof PrepareResponse>;

export const Refund = z.looseObject({ amount: DecimalString, currency: z.string(), transaction: z.string() });
export type Refund = z.infer<typeof Refund>;

export const Execution = z.looseObject({
  executionId: z.string(),
  status: ExecutionStatus,
  action: z.string(),
  createdAt: z.string(),
  quoteId: z.string().optional(),
  updatedAt: z.string().optional(),
  providerMeta: z.looseObject({ provider: z.string().optional(), region: z.string().optional() }).optional(),
  output: JsonObject.optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  refund: Refund.optional(),
});
export type Execution = z.infer<typeof Execution>;

export const ActionSummary = z.looseObject({ name: z.string(), supportsAsync: z.boolean() });
export const ActionList = z.looseObject({ items: z.array(ActionSummary) });
export type ActionList = z.infer<typeof ActionList>;

export const ActionDetail = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  supportsAsync: z.boolean().optional(),
  inputSchema: JsonObject.optional(),
  pricing: z.looseObject({ model: z.string(), currency: z.string() }).optional(),
  budgetHints: z.looseObject({ typical: z.string().optional(), max: z.string().optional() }).optional(),
});
export type ActionDetail = z.infer<typeof ActionDetail>;

export const Company = z.looseObject({
  companyId: z.string(),
  name: z.string(),
  jurisdiction: z.string(),
  companyType: z.string(),
  formationStatus: z.string(),
  documents: z.array(z.looseObject({ kind: z.string(), name: z.string(), url: z.string() })),
  executionId: z.string(),
});
export type Company = z.infer<typeof Company>;

export const ErrorCode = z.enum([
  "invalid_request",
  "unsupported_currency",
  "unauthorized",
  "payment_required",
  "payment_invalid",
  "not_found",
  "idempotency_in_progress",
  "quote_consumed",
  "quote_mismatch",
  "payment_already_used",
  "quote_expired",
  "payload_too_large",
  "unsupported_media_type",
  "idempotency_key_reused",
  "rate_limited",
  "internal_error",
  "unavailable",
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorBody = z.looseObject({
  error: z.looseObject({
    code: z.string(),
    message: z.string(),
    requestId: z.string().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const WebhookEvent = z.looseObject({
  id: z.string(),
  type: z.string(),
  createdAt: z.string(),
  data: z.looseObject({ execution: Execution }),
});
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/**
 * Canonical JSON: keys sorted at every depth, no whitespace. Two bodies with the same
 * meaning have the same canonical form; used for fingerprints and intent comparison. A value
 * nested deeper than `maxDepth` throws a RangeError.
 */
export function canonicalJson(value: unknown, maxDepth = Infinity, depth = 0): string {
  if (depth > maxDepth) throw new RangeError(`nested deeper than ${maxDepth}`);
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, maxDepth, depth + 1)).join(",")}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k], maxDepth, depth + 1)}`);
  return `{${entries.join(",")}}`;
}
