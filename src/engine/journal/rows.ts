/**
 * Rows as the engine sees them: typed (bigint amounts, parsed quote, input, execution),
 * converted to and from the stores' columns in one place. An intent's row is narrowed here,
 * once, by its state (fromRow: a row missing what its state requires is a CorruptIntent);
 * a whole intent is written with every column (toRow: a field it does not have is written
 * null, or as the column's default), so nothing of an earlier attempt survives a fresh one.
 */
import { narrowIntent } from "../model/narrow.js";
import type { Approval, Intent, IntentPatch, IntentRecord, PaymentRecord } from "../model/types.js";
import type { Freeze } from "./port.js";

interface Codec {
  read(value: unknown): unknown;
  write(value: unknown): unknown;
}

const plain: Codec = { read: (v) => v ?? null, write: (v) => v ?? null };
const json: Codec = {
  read: (v) => (typeof v === "string" ? (JSON.parse(v) as unknown) : null),
  write: (v) => (v === null || v === undefined ? null : JSON.stringify(v)),
};
const bigintOrNull: Codec = {
  read: (v) => (v === null || v === undefined ? null : BigInt(v as string)),
  write: (v) => (v === null || v === undefined ? null : (v as bigint).toString()),
};
const bigintZero: Codec = {
  read: (v) => BigInt((v as string | null) ?? "0"),
  write: (v) => ((v as bigint | null | undefined) ?? 0n).toString(),
};
/** A NOT NULL column with a default: what an intent without the field holds. */
const orElse = (fallback: string): Codec => ({ read: (v) => v ?? fallback, write: (v) => v ?? fallback });

const INTENT: Record<keyof IntentRecord, [string, Codec]> = {
  intentId: ["intent_id", plain],
  kind: ["kind", orElse("action")],
  origin: ["origin", plain],
  request: ["request", json],
  offer: ["offer", json],
  response: ["response", json],
  intentKey: ["intent_key", plain],
  attempt: ["attempt", plain],
  idemKey: ["idem_key", plain],
  service: ["service", plain],
  action: ["action", plain],
  input: ["input", json],
  fingerprint: ["fingerprint", plain],
  agentBudget: ["agent_budget", bigintOrNull],
  state: ["state", plain],
  quoteId: ["quote_id", plain],
  quote: ["quote", json],
  amount: ["amount", bigintOrNull],
  payee: ["payee", plain],
  quoteExpiresAt: ["quote_expires_at", plain],
  quotedAt: ["quoted_at", plain],
  requirements: ["requirements", json],
  proof: ["proof", plain],
  payment: ["payment", json],
  paymentTx: ["payment_tx", plain],
  settlement: ["settlement", orElse("none")],
  executionId: ["execution_id", plain],
  execution: ["execution", json],
  execStatus: ["exec_status", plain],
  output: ["output", json],
  refund: ["refund", json],
  refundState: ["refund_state", orElse("none")],
  refundCredit: ["refund_credit", bigintZero],
  refundTx: ["refund_tx", plain],
  refundSeenAt: ["refund_seen_at", plain],
  budgetState: ["budget_state", orElse("none")],
  budgetAmount: ["budget_amount", bigintOrNull],
  budgetAt: ["budget_at", plain],
  approvalId: ["approval_id", plain],
  error: ["error", json],
  attention: ["attention", plain],
  callId: ["call_id", plain],
  leaseOwner: ["lease_owner", plain],
  leaseUntil: ["lease_until", plain],
  nextPollAt: ["next_poll_at", plain],
  pollIntervalMs: ["poll_interval_ms", plain],
  createdAt: ["created_at", plain],
  updatedAt: ["updated_at", plain],
};

/** A row read back: typed, and narrowed by its state (throws CorruptIntent when it lacks what the state requires). */
export function fromRow(row: Record<string, unknown>): Intent {
  const out: Record<string, unknown> = {};
  for (const [field, [column, codec]] of Object.entries(INTENT)) out[field] = codec.read(row[column]);
  // Every field of IntentRecord, each decoded by its column's codec: the record's shape.
  return narrowIntent(out as unknown as IntentRecord);
}

/** Every column of an intent's row: a field the intent does not have is written null, or as its column's default. */
export function toRow(intent: Partial<IntentRecord>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [field, [column, codec]] of Object.entries(INTENT))
    row[column] = codec.write(intent[field as keyof IntentRecord]);
  return row;
}

/**
 * A whole intent as a patch of every field — its identity, timestamps and lease aside (the
 * lease is kept by claim, renew and release): what it does not have, as the journal holds a
 * field nobody wrote. A fresh attempt is committed so.
 */
export function wholePatch(intent: Partial<IntentRecord>): IntentPatch {
  const whole: IntentPatch & Partial<Pick<IntentRecord, "intentId" | "createdAt" | "updatedAt">> = {
    ...fromRow(toRow(intent)),
  };
  delete whole.intentId;
  delete whole.createdAt;
  delete whole.updatedAt;
  delete whole.leaseOwner;
  delete whole.leaseUntil;
  return whole;
}

/** The columns and values a patch writes (in the patch's key order). */
export function intentColumns(patch: IntentPatch): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [field, value] of Object.entries(patch)) {
    const spec = INTENT[field as keyof IntentRecord];
    if (!spec) throw new Error(`not an intent field: ${field}`);
    if (value === undefined) continue;
    out.push([spec[0], spec[1].write(value)]);
  }
  return out;
}

export function toApproval(row: Record<string, unknown>): Approval {
  return {
    approvalId: row.approval_id as string,
    intentId: row.intent_id as string,
    quoteId: row.quote_id as string,
    action: row.action as string,
    amount: BigInt(row.amount as string),
    payee: (row.payee as string | null) ?? null,
    expiresAt: row.expires_at as number,
    status: row.status as Approval["status"],
    createdAt: row.created_at as number,
    decidedAt: (row.decided_at as number | null) ?? null,
  };
}

export function toFreeze(row: Record<string, unknown>): Freeze {
  return { reason: (row.reason as string | null) ?? null, since: Number(row.frozen_at), by: String(row.frozen_by) };
}

export function toPayment(row: Record<string, unknown>): PaymentRecord {
  return {
    quoteId: row.quote_id as string,
    intentId: row.intent_id as string,
    attempt: row.attempt as number,
    amount: BigInt(row.amount as string),
    payee: row.payee as string,
    // Journaled before schema 8: no network (the Solana network configured then).
    ...(typeof row.network === "string" ? { network: row.network } : {}),
    payer: (row.payer as string | null) ?? null,
    mint: (row.mint as string | null) ?? null,
    source: (row.source as string | null) ?? null,
    blockhash: (row.blockhash as string | null) ?? null,
    lastValidHeight:
      row.last_valid_height === null || row.last_valid_height === undefined
        ? null
        : BigInt(row.last_valid_height as number | string | bigint),
    // EVM only (schema 9): the authorization's nonce and validity window.
    ...(typeof row.nonce === "string" ? { nonce: row.nonce } : {}),
    ...(row.valid_after === null || row.valid_after === undefined
      ? {}
      : { validAfter: BigInt(row.valid_after as number | string | bigint) }),
    ...(row.valid_before === null || row.valid_before === undefined
      ? {}
      : { validBefore: BigInt(row.valid_before as number | string | bigint) }),
    signedAt: row.signed_at as number,
    sentAt: (row.sent_at as number | null) ?? null,
    fate: row.fate as PaymentRecord["fate"],
    tx: (row.tx as string | null) ?? null,
    claimedTx: (row.claimed_tx as string | null) ?? null,
    checkedAt: (row.checked_at as number | null) ?? null,
    watch: Boolean(row.watch),
  };
}

const PAYMENT_COLUMNS: Record<keyof PaymentRecord, string> = {
  quoteId: "quote_id",
  intentId: "intent_id",
  attempt: "attempt",
  amount: "amount",
  payee: "payee",
  network: "network",
  payer: "payer",
  mint: "mint",
  source: "source",
  blockhash: "blockhash",
  lastValidHeight: "last_valid_height",
  nonce: "nonce",
  validAfter: "valid_after",
  validBefore: "valid_before",
  signedAt: "signed_at",
  sentAt: "sent_at",
  fate: "fate",
  tx: "tx",
  claimedTx: "claimed_tx",
  checkedAt: "checked_at",
  watch: "watch",
};

export function paymentColumns(p: Partial<PaymentRecord>): Array<[string, unknown]> {
  return Object.entries(p)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [
      PAYMENT_COLUMNS[k as keyof PaymentRecord],
      typeof v === "bigint" ? v.toString() : typeof v === "boolean" ? Number(v) : v,
    ]);
}
