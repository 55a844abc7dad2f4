/**
 * x402 payments of quotes: the challenge (402 payment_required, challenges.ts), reading a
 * proof (proofs.ts), and settlement through the x402 reference facilitator on the ledger —
 * single-use, recorded before the first await, and truthful: a settlement that failed after
 * its transaction was sent is answered from what the ledger holds, never as a rejected proof.
 */
import type Database from "better-sqlite3";
import { ExactSvmScheme as FacilitatorScheme } from "@x402/svm/exact/facilitator";
import type {
  PaymentPayload as X402PaymentPayload,
  PaymentRequirements as X402PaymentRequirements,
  SettleResponse,
} from "@x402/core/types";
import { formatDecimal } from "../../domain/money.js";
import type { PaymentPayload, PaymentRequirements, PaymentRequired } from "../../domain/wire.js";
import { newId } from "../../domain/ids.js";
import { ledgerFacilitatorSigner, type ServiceKeys } from "../ledger/chain.js";
import { ApiError } from "../http/errors.js";
import type { FacilitatorFaults } from "../facilitator/faults.js";
import type { Ledger } from "../ledger/ledger.js";
import { Challenges } from "./challenges.js";
import type { SellerSigner } from "../resources/offer-receipt.js";
import { checkBinding, decodeProof, type DecodedProof, type RejectProof } from "./proofs.js";
import { iso, type PaymentRow, type QuoteRow } from "./records.js";
import { statement } from "../db.js";
import { isEvmNetwork, proofNetwork, type EvmSettler } from "../evm/settle.js";
import { decodeEvmProof, EvmPayments } from "./settlement-evm.js";
import { FastExactSettler, type FastSettlement } from "./settle-fast.js";
import { mayHaveBeenSent } from "./sent.js";

export { mayHaveBeenSent } from "./sent.js";

export interface PaymentsOptions {
  db: Database.Database;
  ledger: Ledger;
  keys: ServiceKeys;
  network: string;
  mint: string;
  now: () => number;
  /** The public base URL, ending in /v1. */
  baseUrl: () => string;
  log: (line: string) => void;
  facilitatorFaults?: FacilitatorFaults;
  /** The sandbox's signing key: the service signs its offers and receipts with it (challenges.ts). */
  signer: SellerSigner;
  /** The EVM ledger's settlement (absent: the EVM ledger is off). */
  evm?: EvmSettler;
}

/** What the ledger says of a payment's transaction. */
export type LedgerFate = "landed" | "in_flight" | "never";

export function quoteExpired(quote: QuoteRow): ApiError {
  return new ApiError(
    410,
    "quote_expired",
    `quote ${quote.quote_id} expired at ${iso(quote.expires_at)}; request a new quote`,
    {
      quoteId: quote.quote_id,
      expiresAt: iso(quote.expires_at),
    },
  );
}

export class Payments {
  private readonly facilitator: FacilitatorScheme;
  /** The reference facilitator's acceptances, made without it (settle-fast.ts). */
  private readonly fast: FastExactSettler;
  /** The challenges, and the service's signed word in them and in its paid answers. */
  readonly challenges: Challenges;
  /** Message hashes being settled by a request of this process right now. */
  private readonly settlingNow = new Set<string>();
  /** Payments on the EVM ledger (settlement-evm.ts), when it is on. */
  private readonly evm: EvmPayments | undefined;

  constructor(private readonly o: PaymentsOptions) {
    const signer = ledgerFacilitatorSigner(o.ledger, o.keys.feePayer, o.network);
    this.facilitator = new FacilitatorScheme(o.facilitatorFaults ? o.facilitatorFaults.wrap(signer, o.ledger) : signer);
    this.fast = new FastExactSettler(o.ledger, o.keys.feePayer, o.network);
    this.challenges = new Challenges(o);
    this.evm = o.evm
      ? new EvmPayments({
          db: o.db,
          settler: o.evm,
          now: o.now,
          log: o.log,
          reject: (quote) => this.rejectProof(quote),
          settlingError: (quote, payment) => this.settlingError(quote, payment),
          quoteExpired,
        })
      : undefined;
  }

  // ---- Challenges and proofs (challenges.ts, proofs.ts) ------------------------------

  paymentRequired(quote: QuoteRow, error?: string): PaymentRequired {
    return this.challenges.paymentRequired(quote, error);
  }

  paymentRequiredError(quote: QuoteRow, message: string): ApiError {
    return this.challenges.paymentRequiredError(quote, message);
  }

  /** Refusals of a proof, carrying the quote's challenge when there is a quote. */
  private rejectProof(quote?: QuoteRow): RejectProof {
    return (reason, message) => this.challenges.paymentInvalid(reason, message, quote);
  }

  /** Decodes a proof header/body value: base64(JSON(x402 v2 PaymentPayload)). */
  decodeProof(proof: string, quote?: QuoteRow): DecodedProof {
    return decodeProof(proof, this.rejectProof(quote));
  }

  /** Refuses a proof that does not decode, on either ledger (with the quote's challenge). */
  checkProofShape(proof: string, quote: QuoteRow): void {
    if (isEvmNetwork(proofNetwork(proof))) decodeEvmProof(proof, this.rejectProof(quote));
    else this.decodeProof(proof, quote);
  }

  // ---- Records -----------------------------------------------------------------------

  paymentOf(quoteId: string): PaymentRow | undefined {
    return statement(this.o.db, `SELECT * FROM payments WHERE quote_id = ?`).get(quoteId) as PaymentRow | undefined;
  }

  private paymentByMessage(messageHash: string): PaymentRow | undefined {
    return statement(this.o.db, `SELECT * FROM payments WHERE message_hash = ?`).get(messageHash) as
      PaymentRow | undefined;
  }

  paymentView(p: PaymentRow) {
    return {
      paymentId: p.payment_id,
      quoteId: p.quote_id,
      status: "settled",
      amount: formatDecimal(BigInt(p.amount)),
      currency: "USDC",
      network: p.network ?? this.o.network,
      transaction: p.transaction_sig ?? "",
      payer: p.payer ?? "",
    };
  }

  /**
   * Why a quote whose payment is 'settling' cannot be used yet: another request of this
   * process is settling it (409, retry shortly), or its transaction was sent and may still
   * land (503, retry with the same key).
   */
  settlingError(quote: QuoteRow, payment: PaymentRow): ApiError {
    if (this.settlingNow.has(payment.message_hash) || this.evm?.settlingNow.has(payment.message_hash)) {
      return new ApiError(
        409,
        "idempotency_in_progress",
        "the payment for this quote is being settled by another request; retry shortly",
        {
          quoteId: quote.quote_id,
        },
        { "Retry-After": "1" },
      );
    }
    return new ApiError(
      503,
      "unavailable",
      `the payment for quote ${quote.quote_id} was sent to the ledger and has not landed yet; it can land until its blockhash expires. ` +
        "Retry with the same Idempotency-Key: the retry settles it at most once, or answers 402 payment_invalid once it can no longer land",
      { quoteId: quote.quote_id, reason: "settlement_pending" },
      { "Retry-After": "2" },
    );
  }

  // ---- Settlement --------------------------------------------------------------------

  /**
   * Settles a proof for a quote through the reference facilitator, against the
   * requirements stored for the quote. Single-use: the message hash is recorded before
   * the first await, and every settled transaction stays recorded.
   * Returns the settled payment (the existing one if this proof already paid this quote).
   */
  async settle(tenant: string, quote: QuoteRow, proof: string): Promise<PaymentRow> {
    if (isEvmNetwork(proofNetwork(proof))) {
      if (!this.evm) {
        throw this.challenges.paymentInvalid(
          "invalid_network",
          "the EVM ledger is off in this sandbox: pay on the Solana entry of accepts",
          quote,
        );
      }
      return this.evm.settle(tenant, quote, proof);
    }
    const { payload, messageHash, blockhash } = this.decodeProof(proof, quote);
    this.reconcileStale(quote.quote_id, messageHash);
    const used = this.paymentByMessage(messageHash);
    if (used) {
      if (used.quote_id !== quote.quote_id || used.tenant !== tenant) {
        throw new ApiError(
          409,
          "payment_already_used",
          "this payment proof was already used for another quote; sign a new one for this quote",
          {
            quoteId: quote.quote_id,
          },
        );
      }
      if (used.status === "settled") return used;
      if (this.settlingNow.has(messageHash)) throw this.settlingError(quote, used);
      // Sent before and may still land: sending the same transaction again is safe (one
      // message, one signature: it lands at most once) and is how a retry finishes it.
      return this.runSettlement(quote, used, payload, checkBinding(quote, payload, this.rejectProof(quote)), true);
    }
    const existing = this.paymentOf(quote.quote_id);
    if (existing) {
      if (existing.status === "settling") throw this.settlingError(quote, existing);
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
    if (this.o.now() > quote.expires_at) throw quoteExpired(quote);
    const stored = checkBinding(quote, payload, this.rejectProof(quote));

    // Check and record before the first await: a concurrent replay sees this row.
    const now = this.o.now();
    const payment: PaymentRow = {
      payment_id: newId("pay"),
      tenant,
      quote_id: quote.quote_id,
      message_hash: messageHash,
      status: "settling",
      transaction_sig: null,
      payer: null,
      amount: quote.amount,
      blockhash,
      network: null,
      evm_proof: null,
      created_at: now,
      updated_at: now,
    };
    statement(
      this.o.db,
      `INSERT INTO payments (payment_id, tenant, quote_id, message_hash, status, amount, blockhash, created_at, updated_at)
         VALUES (@payment_id, @tenant, @quote_id, @message_hash, @status, @amount, @blockhash, @created_at, @updated_at)`,
    ).run(payment);
    return this.runSettlement(quote, payment, payload, stored, false);
  }

  /**
   * Runs the facilitator's settle for a recorded 'settling' payment. Its answer is
   * believed when it succeeds, or when it failed before sending anything; otherwise the
   * ledger decides: landed (settled), still able to land (503, the record kept), or never.
   */
  private async runSettlement(
    quote: QuoteRow,
    payment: PaymentRow,
    payload: PaymentPayload,
    stored: PaymentRequirements,
    sentBefore: boolean,
  ): Promise<PaymentRow> {
    let result: SettleResponse | FastSettlement | undefined;
    let settled: PaymentRow | undefined;
    this.settlingNow.add(payment.message_hash);
    try {
      // A first attempt with no test fault armed: the fast path settles what the reference would,
      // the payment marked settled in the ledger's own commit of its transaction.
      if (!sentBefore && !this.o.facilitatorFaults?.armed()) {
        result = await this.fast.settle(payload, stored, (landed) => {
          settled = this.markSettled(payment, landed.transaction, landed.payer);
        });
      }
      result ??= await this.facilitator.settle(
        payload as unknown as X402PaymentPayload,
        stored as unknown as X402PaymentRequirements,
      );
    } catch (e) {
      this.o.log(`settlement of ${quote.quote_id} threw (the ledger decides): ${(e as Error).message}`);
    } finally {
      this.settlingNow.delete(payment.message_hash);
    }
    if (result?.success) {
      settled ??= this.markSettled(payment, result.transaction, result.payer ?? "");
      this.o.log(`settled ${formatDecimal(BigInt(quote.amount))} USDC for ${quote.quote_id} in ${result.transaction}`);
      return settled;
    }
    // Whatever the facilitator said, the ledger knows whether the money moved.
    const fate = this.reconcilePayment(payment);
    if (fate === "landed") {
      this.o.log(
        `settled ${formatDecimal(BigInt(quote.amount))} USDC for ${quote.quote_id} (the facilitator reported ${result?.errorReason ?? "an error"}; the ledger has it)`,
      );
      return this.paymentOf(quote.quote_id)!;
    }
    const reason = result?.errorReason ?? "settlement_failed";
    const sent = sentBefore || result === undefined || mayHaveBeenSent(result);
    if (!sent) {
      this.deletePayment(payment);
      throw this.challenges.paymentInvalid(reason, `payment proof rejected by the facilitator: ${reason}`, quote);
    }
    if (fate === "in_flight") throw this.settlingError(quote, payment);
    throw this.challenges.paymentInvalid(
      reason,
      `the payment's transaction was sent but did not land, and can no longer land (its blockhash expired): nothing was charged. Sign a new proof (${reason})`,
      quote,
    );
  }

  /** Records the payment settled by `signature`; answers the row as it now stands. */
  private markSettled(payment: PaymentRow, signature: string, payer: string): PaymentRow {
    const now = this.o.now();
    statement(
      this.o.db,
      `UPDATE payments SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ? WHERE payment_id = ?`,
    ).run(signature, payer, now, payment.payment_id);
    return { ...payment, status: "settled", transaction_sig: signature, payer, updated_at: now };
  }

  private deletePayment(payment: PaymentRow): void {
    statement(this.o.db, `DELETE FROM payments WHERE payment_id = ? AND status = 'settling'`).run(payment.payment_id);
  }

  /**
   * Where a payment's transaction stands on the ledger. Not landed: it can still land
   * while the ledger accepts its blockhash (which expires with time, as on a cluster). A
   * record without a blockhash predates this rule and is taken as unable to land.
   */
  ledgerFate(payment: PaymentRow): LedgerFate {
    if (this.o.ledger.transactionByMessageHash(payment.message_hash)) return "landed";
    if (!payment.blockhash) return "never";
    return this.o.ledger.isBlockhashValid(payment.blockhash) ? "in_flight" : "never";
  }

  /**
   * A 'settling' payment: the ledger decides. Landed: recorded settled. Can still land:
   * kept (a retry, or the next reconciliation, finishes it). Can never land: deleted.
   */
  reconcilePayment(payment: PaymentRow): LedgerFate {
    const fate = this.ledgerFate(payment);
    if (fate === "landed") {
      const landed = this.o.ledger.transactionByMessageHash(payment.message_hash)!;
      const payerBalance = landed.preTokenBalances.find(
        (t) => t.mint === this.o.mint && t.owner !== this.o.keys.treasury.address,
      );
      this.markSettled(payment, landed.signature, payerBalance?.owner ?? "");
    } else if (fate === "never") {
      this.deletePayment(payment);
    }
    return fate;
  }

  /**
   * 'settling' rows of a quote (or a message) that no request of this process is working
   * on: left by a request that died, or sent and not yet landed. The ledger decides.
   */
  reconcileStale(quoteId: string, messageHash?: string): void {
    const rows = statement(
      this.o.db,
      `SELECT * FROM payments WHERE status = 'settling' AND network IS NULL AND (quote_id = ? OR message_hash = ?)`,
    ).all(quoteId, messageHash ?? "") as PaymentRow[];
    for (const row of rows) if (!this.settlingNow.has(row.message_hash)) this.reconcilePayment(row);
  }

  /** A quote's unfinished payments, on either ledger, that no request of this process is working on. */
  async reconcileQuote(quoteId: string): Promise<void> {
    this.reconcileStale(quoteId);
    if (this.evm) await this.evm.reconcileQuote(quoteId);
  }

  /** After a restart: settle the fate of every payment caught mid-settlement. */
  recover(): void {
    const settling = statement(
      this.o.db,
      `SELECT * FROM payments WHERE status = 'settling' AND network IS NULL`,
    ).all() as PaymentRow[];
    for (const p of settling) this.reconcilePayment(p);
  }

  /** After a restart, before any request: the EVM ledger's payments and the chain brought in step. */
  async recoverEvm(): Promise<void> {
    await this.evm?.recover();
  }
}
