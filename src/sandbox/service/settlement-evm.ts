/**
 * x402 payments of quotes on the EVM ledger (eip155:84532): a proof is a signed EIP-3009
 * authorization, bound to the quote by the fields of its `accepted` as on Solana (decisions.md),
 * identified by (authorizer, nonce) and recorded 'settling' — with the authorization itself —
 * before it is sent, so it pays one quote once, across requests and restarts. What the chain
 * says decides a settlement the facilitator did not report (evm/settle.ts); after a restart,
 * 'settling' records are settled or forgotten by the chain, and a 'settled' one the chain lost
 * is submitted again.
 */
import type Database from "better-sqlite3";
import { newId } from "../../domain/ids.js";
import type { EvmPaymentPayload, PaymentRequirements } from "../../domain/wire.js";
import { statement } from "../db.js";
import { EVM_NETWORK, EVM_USDC, EVM_USDC_DOMAIN } from "../evm/ledger.js";
import { authorizationId, parseEvmPayload, type EvmSettler } from "../evm/settle.js";
import { ApiError } from "../http/errors.js";
import type { RejectProof } from "./proofs.js";
import type { PaymentRow, QuoteRow } from "./records.js";

/** The fields of `accepted` that bind an EVM proof to its quote (decisions.md), and of its `extra`. */
const BINDING_FIELDS = ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"] as const;
const BINDING_EXTRA = ["name", "version", "memo"] as const;

export interface EvmPaymentsOptions {
  db: Database.Database;
  settler: EvmSettler;
  now: () => number;
  log: (line: string) => void;
  /** The quote's refusal of a proof (402 payment_invalid with its challenge). */
  reject: (quote: QuoteRow) => RejectProof;
  /** Answers for a quote already paid or being paid (shared with the Solana path). */
  settlingError: (quote: QuoteRow, payment: PaymentRow) => ApiError;
  quoteExpired: (quote: QuoteRow) => ApiError;
}

/** A quote's requirements on the EVM ledger: x402's default USDC there, paid to the treasury. */
export function evmRequirementsFor(
  settler: EvmSettler,
  quoteId: string,
  amount: bigint,
  maxTimeoutSeconds: number,
): PaymentRequirements {
  return {
    scheme: "exact",
    network: EVM_NETWORK,
    amount: amount.toString(),
    asset: EVM_USDC,
    payTo: settler.treasury,
    maxTimeoutSeconds,
    extra: { ...EVM_USDC_DOMAIN, memo: quoteId },
  };
}

/** Decodes a base64 EVM proof, or refuses it. */
export function decodeEvmProof(proof: string, reject: RejectProof): EvmPaymentPayload {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
  } catch {
    throw reject("invalid_payload", "the payment proof is not base64-encoded JSON");
  }
  const payload = parseEvmPayload(json);
  if (!payload || payload.x402Version !== 2) {
    throw reject(
      "invalid_payload",
      "the payment proof is not an x402 v2 PaymentPayload {x402Version: 2, accepted, payload: {authorization, signature}}",
    );
  }
  return payload;
}

/** The quote's EVM requirements, once every bound field of the proof's `accepted` matches them. */
function checkBinding(quote: QuoteRow, payload: EvmPaymentPayload, reject: RejectProof): PaymentRequirements {
  if (!quote.evm_requirements) {
    throw reject("network_mismatch", `quote ${quote.quote_id} cannot be paid on ${payload.accepted.network}`);
  }
  const stored = JSON.parse(quote.evm_requirements) as PaymentRequirements;
  for (const field of BINDING_FIELDS) {
    if (payload.accepted[field] !== stored[field]) {
      throw reject(
        `${field.toLowerCase()}_mismatch`,
        `the proof's accepted.${field} does not match what quote ${quote.quote_id} requires`,
      );
    }
  }
  for (const field of BINDING_EXTRA) {
    if (payload.accepted.extra[field] !== stored.extra[field]) {
      throw reject(
        `${field.toLowerCase()}_mismatch`,
        `the proof's accepted.extra.${field} does not match what quote ${quote.quote_id} requires`,
      );
    }
  }
  return stored;
}

export class EvmPayments {
  /** Authorization ids being settled by a request of this process right now. */
  readonly settlingNow = new Set<string>();

  constructor(private readonly o: EvmPaymentsOptions) {}

  private paymentOf(quoteId: string): PaymentRow | undefined {
    return statement(this.o.db, `SELECT * FROM payments WHERE quote_id = ?`).get(quoteId) as PaymentRow | undefined;
  }

  private paymentById(id: string): PaymentRow | undefined {
    return statement(this.o.db, `SELECT * FROM payments WHERE message_hash = ?`).get(id) as PaymentRow | undefined;
  }

  /** Settles an EVM proof for a quote; single-use, recorded before it is sent (see the module's header). */
  async settle(tenant: string, quote: QuoteRow, proof: string): Promise<PaymentRow> {
    const reject = this.o.reject(quote);
    const payload = decodeEvmProof(proof, reject);
    const id = authorizationId(payload.payload.authorization);
    // The chain decides the records no request of this process is working on (async: first).
    await this.reconcileStale(quote.quote_id, id);
    // Synchronous from here to the insert: no other request interleaves.
    const used = this.paymentById(id);
    if (used) {
      if (used.quote_id !== quote.quote_id || used.tenant !== tenant) {
        throw new ApiError(
          409,
          "payment_already_used",
          "this payment proof was already used for another quote; sign a new one for this quote",
          { quoteId: quote.quote_id },
        );
      }
      if (used.status === "settled") return used;
      throw this.o.settlingError(quote, used);
    }
    const existing = this.paymentOf(quote.quote_id);
    if (existing) {
      if (existing.status === "settling") throw this.o.settlingError(quote, existing);
      throw new ApiError(
        409,
        "quote_consumed",
        `quote ${quote.quote_id} is already paid by transaction ${existing.transaction_sig}; this proof was not settled`,
        {
          quoteId: quote.quote_id,
          transaction: existing.transaction_sig,
          ...(quote.execution_id ? { executionId: quote.execution_id } : {}),
        },
      );
    }
    if (this.o.now() > quote.expires_at) throw this.o.quoteExpired(quote);
    const stored = checkBinding(quote, payload, reject);
    const now = this.o.now();
    const payment = {
      payment_id: newId("pay"),
      tenant,
      quote_id: quote.quote_id,
      message_hash: id,
      status: "settling" as const,
      amount: quote.amount,
      network: stored.network,
      evm_proof: JSON.stringify(payload),
      created_at: now,
      updated_at: now,
    };
    statement(
      this.o.db,
      `INSERT INTO payments (payment_id, tenant, quote_id, message_hash, status, amount, network, evm_proof, created_at, updated_at)
         VALUES (@payment_id, @tenant, @quote_id, @message_hash, @status, @amount, @network, @evm_proof, @created_at, @updated_at)`,
    ).run(payment);
    this.settlingNow.add(id);
    let result;
    try {
      result = await this.o.settler.settle(payload, stored);
    } finally {
      this.settlingNow.delete(id);
    }
    if (result.ok) {
      this.markSettled(payment.payment_id, result.transaction, result.payer);
      this.o.log(
        `settled ${quote.amount} atomic USDC for ${quote.quote_id} on ${stored.network} in ${result.transaction}`,
      );
      return this.paymentOf(quote.quote_id)!;
    }
    // Not on the chain (settle() asked it): nothing moved, and the record goes.
    this.deletePayment(payment.payment_id);
    throw reject(result.reason, `payment proof rejected by the facilitator: ${result.reason}`);
  }

  private markSettled(paymentId: string, transaction: string, payer: string): void {
    statement(
      this.o.db,
      `UPDATE payments SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ? WHERE payment_id = ?`,
    ).run(transaction, payer, this.o.now(), paymentId);
  }

  private deletePayment(paymentId: string): void {
    statement(this.o.db, `DELETE FROM payments WHERE payment_id = ? AND status = 'settling'`).run(paymentId);
  }

  /** A 'settling' EVM payment: landed on the chain → settled; otherwise it never will (nothing is in flight): deleted. */
  async reconcilePayment(payment: PaymentRow): Promise<void> {
    const payload = payment.evm_proof ? parseEvmPayload(JSON.parse(payment.evm_proof)) : undefined;
    const landed = payload ? await this.o.settler.landed(payload.payload.authorization) : undefined;
    if (this.settlingNow.has(payment.message_hash)) return; // a request took it up meanwhile
    if (landed && payload) this.markSettled(payment.payment_id, landed, payload.payload.authorization.from);
    else this.deletePayment(payment.payment_id);
  }

  /** A quote's 'settling' EVM payments that no request of this process is working on. */
  reconcileQuote(quoteId: string): Promise<void> {
    return this.reconcileStale(quoteId, "");
  }

  private async reconcileStale(quoteId: string, id: string): Promise<void> {
    const rows = statement(
      this.o.db,
      `SELECT * FROM payments WHERE status = 'settling' AND network IS NOT NULL AND (quote_id = ? OR message_hash = ?)`,
    ).all(quoteId, id) as PaymentRow[];
    for (const row of rows) if (!this.settlingNow.has(row.message_hash)) await this.reconcilePayment(row);
  }

  /**
   * After a restart: every 'settling' EVM payment is settled or forgotten by the chain, and a
   * 'settled' one the chain does not hold (its state file older than the record) is submitted
   * again — the records are the truth the chain is brought back to.
   */
  async recover(): Promise<void> {
    const rows = statement(this.o.db, `SELECT * FROM payments WHERE network IS NOT NULL`).all() as PaymentRow[];
    for (const row of rows) {
      if (row.status === "settling") {
        await this.reconcilePayment(row);
        continue;
      }
      const payload = row.evm_proof ? parseEvmPayload(JSON.parse(row.evm_proof)) : undefined;
      if (!payload || (await this.o.settler.landed(payload.payload.authorization))) continue;
      const again = await this.o.settler.resubmit(payload);
      if (again.ok) {
        this.markSettled(row.payment_id, again.transaction, again.payer);
        this.o.log(
          `EVM ledger: payment ${row.payment_id} was missing from the chain; submitted again in ${again.transaction}`,
        );
      } else {
        this.o.log(
          `EVM ledger OUT OF STEP: payment ${row.payment_id} is recorded settled but is not on the chain and cannot be submitted again (${again.message ?? again.reason})`,
        );
      }
    }
  }
}
