/**
 * The v1 service's behaviour, below HTTP: quotes, x402 payments settled through the
 * reference facilitator on the ledger, executions and their simulated providers, the
 * records they create, and webhooks. Every method takes the tenant (a hash of the API key)
 * so one key's records are invisible to another.
 */
import type Database from "better-sqlite3";
import { ExactSvmScheme as FacilitatorScheme } from "@x402/svm/exact/facilitator";
import type { PaymentPayload as X402PaymentPayload, PaymentRequirements as X402PaymentRequirements } from "@x402/core/types";
import { formatDecimal, parseDecimal } from "../domain/money.js";
import {
  canonicalJson,
  PaymentPayload,
  type ExecutionStatus,
  type PaymentRequirements,
  type PaymentRequired,
} from "../domain/wire.js";
import { describeAction, findAction, providerOutput, ACTIONS, type ActionDef, type PricingWorld } from "./catalog.js";
import { ledgerFacilitatorSigner, refundTransferWire, type ServiceKeys } from "./chain.js";
import { ApiError, invalidRequest, notFound, zodIssues } from "./errors.js";
import { decodeWireTransaction, messageHashOf, type Ledger } from "./ledger.js";
import type { Webhooks } from "./webhooks.js";
import { newId } from "../domain/ids.js";

export interface ServiceOptions {
  db: Database.Database;
  ledger: Ledger;
  keys: ServiceKeys;
  network: string;
  mint: string;
  now: () => number;
  /** The public base URL, ending in /v1. */
  baseUrl: () => string;
  quoteTtlMs: number;
  providerDelayMs: number;
  webhooks: Webhooks;
  log: (line: string) => void;
}

export type Outcome = "succeed" | "fail";

interface QuoteRow {
  quote_id: string;
  tenant: string;
  action: string;
  input: string;
  amount: string;
  budget: string;
  requirements: string;
  context: string | null;
  created_at: number;
  expires_at: number;
  execution_id: string | null;
}

interface PaymentRow {
  payment_id: string;
  tenant: string;
  quote_id: string;
  message_hash: string;
  status: "settling" | "settled";
  transaction_sig: string | null;
  payer: string | null;
  amount: string;
  created_at: number;
  updated_at: number;
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

/** The x402 v2 header that repeats a 402's challenge: base64 JSON PaymentRequired. */
const challengeHeader = (challenge: PaymentRequired) => ({ "PAYMENT-REQUIRED": Buffer.from(JSON.stringify(challenge)).toString("base64") });

const iso = (ms: number) => new Date(ms).toISOString();
const MAX_TIMEOUT_SECONDS = 60;

/** The fields of x402 `accepted` that bind a proof to its quote (decisions.md). */
const BINDING_FIELDS = ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"] as const;
const BINDING_EXTRA = ["feePayer", "memo"] as const;

export class SandboxService {
  private readonly facilitator: FacilitatorScheme;
  private lifecycleTimer: NodeJS.Timeout | undefined;
  private lifecycleRunning = false;
  private closed = false;
  private readonly busyExecutions = new Set<string>();
  /** Message hashes being settled by a request of this process right now. */
  private readonly settlingNow = new Set<string>();

  constructor(private readonly o: ServiceOptions) {
    this.facilitator = new FacilitatorScheme(ledgerFacilitatorSigner(o.ledger, o.keys.feePayer, o.network));
  }

  // ---- Catalog ---------------------------------------------------------------

  listActions() {
    return {
      items: ACTIONS.map((a) => ({ name: a.name, supportsAsync: a.supportsAsync, description: a.description })),
    };
  }

  getAction(name: string) {
    const action = findAction(name);
    if (!action) throw notFound(`action ${name}`);
    return describeAction(action);
  }

  // ---- Quotes ----------------------------------------------------------------

  private pricingWorld(tenant: string): PricingWorld {
    return {
      server: (serverId) => {
        const record = this.resource(tenant, "server", serverId) as { plan: string; region: string; status: string } | undefined;
        return record?.status === "provisioning" || record?.status === "running" ? record : undefined;
      },
      domainTaken: (domain) => {
        const row = this.o.db
          .prepare(
            `SELECT 1 FROM resources WHERE kind = 'domain' AND json_extract(record, '$.domain') = ?
             AND json_extract(record, '$.status') != 'failed'`,
          )
          .get(domain);
        return row !== undefined;
      },
    };
  }

  /** Validates an action's input and prices it. Throws invalid_request / not_found. */
  private price(tenant: string, actionName: string, input: Record<string, unknown>) {
    const action = findAction(actionName);
    if (!action) throw notFound(`action ${actionName}`);
    const parsed = action.schema.safeParse(input);
    if (!parsed.success) {
      throw invalidRequest(`input does not match the ${action.name} input schema`, zodIssues(parsed.error.issues, "input"));
    }
    const price = action.price(parsed.data, this.pricingWorld(tenant));
    if (!price.ok) {
      if (price.status === 404) throw notFound(price.message.replace(/ not found$/, ""));
      throw invalidRequest(price.message, [{ path: price.path, message: price.message }]);
    }
    if (price.amount <= 0n) throw invalidRequest("this intent prices at zero; nothing to pay for", []);
    return { action, parsed: parsed.data, price };
  }

  private requirementsFor(quoteId: string, amount: bigint): PaymentRequirements {
    const latest = this.o.ledger.latestBlockhash();
    return {
      scheme: "exact",
      network: this.o.network,
      amount: amount.toString(),
      asset: this.o.mint,
      payTo: this.o.keys.treasury.address,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: {
        feePayer: this.o.keys.feePayer.address,
        memo: quoteId,
        decimals: 6,
        recentBlockhash: latest.blockhash,
        lastValidBlockHeight: latest.lastValidBlockHeight.toString(),
      },
    };
  }

  /** The stored requirements with a fresh blockhash hint (not part of the binding). */
  private freshRequirements(quote: QuoteRow): PaymentRequirements {
    const stored = JSON.parse(quote.requirements) as PaymentRequirements;
    const latest = this.o.ledger.latestBlockhash();
    return {
      ...stored,
      extra: { ...stored.extra, recentBlockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight.toString() },
    };
  }

  paymentRequired(quote: QuoteRow, error?: string): PaymentRequired {
    return {
      x402Version: 2,
      ...(error ? { error } : {}),
      resource: { url: `${this.o.baseUrl()}/executions`, description: `${quote.action} (quote ${quote.quote_id})`, mimeType: "application/json" },
      accepts: [this.freshRequirements(quote)],
    };
  }

  private quoteView(q: QuoteRow, withinBudget?: boolean) {
    const requirements = JSON.parse(q.requirements) as PaymentRequirements;
    const context = q.context ? (JSON.parse(q.context) as { breakdown?: unknown }) : {};
    return {
      quoteId: q.quote_id,
      action: q.action,
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
        accepts: [requirements],
      },
    };
  }

  /** Creates a quote; `budget` null for quotes made implicitly by an unpaid POST /executions. */
  createQuote(tenant: string, actionName: string, input: Record<string, unknown>, budget: { amount: string; currency: string } | null) {
    if (budget && budget.currency !== "USDC") {
      throw new ApiError(400, "unsupported_currency", `budget.currency ${JSON.stringify(budget.currency)} is not supported; use USDC`);
    }
    const budgetAtomic = budget ? parseDecimal(budget.amount) : undefined;
    if (budget && budgetAtomic === undefined) {
      throw invalidRequest("budget.amount must be a decimal with at most 6 decimals", [
        { path: "budget.amount", message: "must be a decimal string with at most 6 decimals, such as \"12.50\"" },
      ]);
    }
    const { action, price } = this.price(tenant, actionName, input);
    const quoteId = newId("qt");
    const now = this.o.now();
    const row: QuoteRow = {
      quote_id: quoteId,
      tenant,
      action: action.name,
      input: canonicalJson(input),
      amount: price.amount.toString(),
      budget: JSON.stringify(budget),
      requirements: JSON.stringify(this.requirementsFor(quoteId, price.amount)),
      context: JSON.stringify({ breakdown: price.breakdown, region: price.region }),
      created_at: now,
      expires_at: now + this.o.quoteTtlMs,
      execution_id: null,
    };
    this.o.db
      .prepare(
        `INSERT INTO quotes (quote_id, tenant, action, input, amount, budget, requirements, context, created_at, expires_at)
         VALUES (@quote_id, @tenant, @action, @input, @amount, @budget, @requirements, @context, @created_at, @expires_at)`,
      )
      .run(row);
    return { row, view: this.quoteView(row, budgetAtomic === undefined ? undefined : price.amount <= budgetAtomic) };
  }

  private quote(tenant: string, quoteId: string): QuoteRow {
    const row = this.o.db.prepare(`SELECT * FROM quotes WHERE quote_id = ? AND tenant = ?`).get(quoteId, tenant) as
      | QuoteRow
      | undefined;
    if (!row) throw notFound(`quote ${quoteId}`);
    return row;
  }

  getQuote(tenant: string, quoteId: string) {
    return this.quoteView(this.quote(tenant, quoteId));
  }

  // ---- Payments --------------------------------------------------------------

  prepare(tenant: string, quoteId: string) {
    const quote = this.quote(tenant, quoteId);
    const payment = this.paymentOf(quote.quote_id);
    if (!payment && this.o.now() > quote.expires_at) throw this.expired(quote);
    return { quoteId: quote.quote_id, paymentRequired: this.paymentRequired(quote) };
  }

  private expired(quote: QuoteRow) {
    return new ApiError(410, "quote_expired", `quote ${quote.quote_id} expired at ${iso(quote.expires_at)}; request a new quote`, {
      quoteId: quote.quote_id,
      expiresAt: iso(quote.expires_at),
    });
  }

  private paymentOf(quoteId: string): PaymentRow | undefined {
    return this.o.db.prepare(`SELECT * FROM payments WHERE quote_id = ?`).get(quoteId) as PaymentRow | undefined;
  }

  paymentView(p: PaymentRow) {
    return {
      paymentId: p.payment_id,
      quoteId: p.quote_id,
      status: "settled",
      amount: formatDecimal(BigInt(p.amount)),
      currency: "USDC",
      network: this.o.network,
      transaction: p.transaction_sig ?? "",
      payer: p.payer ?? "",
    };
  }

  /** A rejected proof: like every 402, it carries the challenge in the body and in PAYMENT-REQUIRED (decisions.md). */
  private paymentInvalid(reason: string, message: string, quote?: QuoteRow) {
    if (!quote) return new ApiError(402, "payment_invalid", message, { reason });
    const challenge = this.paymentRequired(quote, reason);
    return new ApiError(402, "payment_invalid", message, { reason, quoteId: quote.quote_id, paymentRequired: challenge }, challengeHeader(challenge));
  }

  /** Decodes a proof header/body value: base64(JSON(x402 v2 PaymentPayload)). */
  decodeProof(proof: string, quote?: QuoteRow): { payload: PaymentPayload; messageHash: string } {
    const invalid = (reason: string, message: string) => this.paymentInvalid(reason, message, quote);
    if (typeof proof !== "string" || proof.length === 0 || proof.length > 16_384) {
      throw invalid("invalid_payload", "the payment proof is empty or too large");
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
    } catch {
      throw invalid("invalid_payload", "the payment proof is not base64-encoded JSON");
    }
    const parsed = PaymentPayload.safeParse(json);
    if (!parsed.success || parsed.data.x402Version !== 2) {
      throw invalid("invalid_payload", "the payment proof is not an x402 v2 PaymentPayload {x402Version: 2, accepted, payload: {transaction}}");
    }
    let messageHash: string;
    try {
      messageHash = messageHashOf(decodeWireTransaction(parsed.data.payload.transaction));
    } catch {
      throw invalid("invalid_exact_svm_payload_transaction_could_not_be_decoded", "the proof's transaction cannot be decoded");
    }
    return { payload: parsed.data, messageHash };
  }

  /** The quote a bare proof names through its memo (for stock x402 clients without X-Quote-Id). */
  quoteIdFromProof(proof: string): string | undefined {
    try {
      const memo = (JSON.parse(Buffer.from(proof, "base64").toString("utf8")) as { accepted?: { extra?: { memo?: unknown } } })
        .accepted?.extra?.memo;
      return typeof memo === "string" && /^qt_[A-Za-z0-9]{1,64}$/.test(memo) ? memo : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Settles a proof for a quote through the reference facilitator, against the
   * requirements stored for the quote. Single-use: the message hash is recorded before
   * the first await, and every settled transaction stays recorded.
   * Returns the settled payment (the existing one if this proof already paid this quote).
   */
  async settle(tenant: string, quote: QuoteRow, proof: string): Promise<PaymentRow> {
    const { payload, messageHash } = this.decodeProof(proof, quote);
    const invalid = (reason: string, message: string) => this.paymentInvalid(reason, message, quote);

    this.reconcileStale(quote.quote_id, messageHash);
    const used = this.o.db.prepare(`SELECT * FROM payments WHERE message_hash = ?`).get(messageHash) as PaymentRow | undefined;
    if (used) {
      if (used.quote_id !== quote.quote_id || used.tenant !== tenant) {
        throw new ApiError(409, "payment_already_used", "this payment proof was already used for another quote; sign a new one for this quote", {
          quoteId: quote.quote_id,
        });
      }
      if (used.status === "settling") {
        throw new ApiError(409, "idempotency_in_progress", "this payment is being settled by another request; retry shortly", {
          quoteId: quote.quote_id,
        }, { "Retry-After": "1" });
      }
      return used;
    }
    const existing = this.paymentOf(quote.quote_id);
    if (existing) {
      if (existing.status === "settling") {
        throw new ApiError(409, "idempotency_in_progress", "another payment for this quote is being settled; retry shortly", {
          quoteId: quote.quote_id,
        }, { "Retry-After": "1" });
      }
      throw new ApiError(409, "quote_consumed", `quote ${quote.quote_id} is already paid by transaction ${existing.transaction_sig}; this proof was not settled`, {
        quoteId: quote.quote_id,
        transaction: existing.transaction_sig,
        ...(quote.execution_id ? { executionId: quote.execution_id } : {}),
      });
    }
    if (this.o.now() > quote.expires_at) throw this.expired(quote);

    const stored = JSON.parse(quote.requirements) as PaymentRequirements;
    for (const field of BINDING_FIELDS) {
      if (payload.accepted[field] !== stored[field]) {
        throw invalid(`${field.toLowerCase()}_mismatch`, `the proof's accepted.${field} does not match what quote ${quote.quote_id} requires`);
      }
    }
    for (const field of BINDING_EXTRA) {
      if (payload.accepted.extra[field] !== stored.extra[field]) {
        throw invalid(`${field.toLowerCase()}_mismatch`, `the proof's accepted.extra.${field} does not match what quote ${quote.quote_id} requires`);
      }
    }

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
      created_at: now,
      updated_at: now,
    };
    this.o.db
      .prepare(
        `INSERT INTO payments (payment_id, tenant, quote_id, message_hash, status, amount, created_at, updated_at)
         VALUES (@payment_id, @tenant, @quote_id, @message_hash, @status, @amount, @created_at, @updated_at)`,
      )
      .run(payment);

    let result;
    this.settlingNow.add(messageHash);
    try {
      result = await this.facilitator.settle(
        payload as unknown as X402PaymentPayload,
        stored as unknown as X402PaymentRequirements,
      );
    } catch {
      // Unknown outcome: leave it to the ledger to say whether it landed.
      this.reconcilePayment(payment);
      const after = this.paymentOf(quote.quote_id);
      if (after?.status === "settled") return after;
      throw new ApiError(503, "unavailable", "settlement failed unexpectedly; retry with the same key", {}, { "Retry-After": "1" });
    } finally {
      this.settlingNow.delete(messageHash);
    }
    if (!result.success) {
      this.o.db.prepare(`DELETE FROM payments WHERE payment_id = ?`).run(payment.payment_id);
      const reason = result.errorReason ?? "verification_failed";
      throw invalid(reason, `payment proof rejected by the facilitator: ${reason}`);
    }
    this.o.db
      .prepare(`UPDATE payments SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ? WHERE payment_id = ?`)
      .run(result.transaction, result.payer ?? "", this.o.now(), payment.payment_id);
    this.o.log(`settled ${formatDecimal(BigInt(quote.amount))} USDC for ${quote.quote_id} in ${result.transaction}`);
    return this.paymentOf(quote.quote_id)!;
  }

  /**
   * A 'settling' row that no request of this process is working on was left by a request
   * that died or could not record its outcome: the ledger decides what became of it.
   */
  private reconcileStale(quoteId: string, messageHash?: string): void {
    const rows = this.o.db
      .prepare(`SELECT * FROM payments WHERE status = 'settling' AND (quote_id = ? OR message_hash = ?)`)
      .all(quoteId, messageHash ?? "") as PaymentRow[];
    for (const row of rows) if (!this.settlingNow.has(row.message_hash)) this.reconcilePayment(row);
  }

  /** A payment left 'settling' (crash, unexpected error): the ledger decides. */
  private reconcilePayment(payment: PaymentRow): void {
    const landed = this.o.ledger.transactionByMessageHash(payment.message_hash);
    if (landed) {
      const payerBalance = landed.preTokenBalances.find((t) => t.mint === this.o.mint && t.owner !== this.o.keys.treasury.address);
      this.o.db
        .prepare(`UPDATE payments SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ? WHERE payment_id = ?`)
        .run(landed.signature, payerBalance?.owner ?? "", this.o.now(), payment.payment_id);
    } else {
      this.o.db.prepare(`DELETE FROM payments WHERE payment_id = ? AND status = 'settling'`).run(payment.payment_id);
    }
  }

  async confirm(tenant: string, quoteId: string, proof: string) {
    const quote = this.quote(tenant, quoteId);
    const payment = await this.settle(tenant, quote, proof);
    return this.paymentView(payment);
  }

  // ---- Executions --------------------------------------------------------------

  /**
   * POST /executions and the paid dedicated endpoints. Without a quote or proof, answers
   * 402 with a challenge (creating a quote for the intent, so stock x402 clients can pay).
   */
  async createExecution(
    tenant: string,
    req: {
      action: string;
      input: Record<string, unknown>;
      quoteId?: string;
      proof?: string;
      outcome: Outcome;
      delayMs?: number;
    },
  ) {
    let quoteId = req.quoteId ?? (req.proof ? this.quoteIdFromProof(req.proof) : undefined);
    if (!quoteId) {
      const { row } = this.createQuote(tenant, req.action, req.input, null);
      if (req.proof) this.decodeProof(req.proof, row); // a malformed proof says so, with the challenge to pay
      throw this.paymentRequiredError(row, "no quote or payment attached: pay the attached challenge and retry with the same Idempotency-Key");
    }
    const quote = this.quote(tenant, quoteId);
    if (quote.action !== req.action || quote.input !== canonicalJson(req.input)) {
      throw new ApiError(409, "quote_mismatch", `the execution body differs from the intent quoted in ${quote.quote_id}`, {
        quoteId: quote.quote_id,
        quoted: { action: quote.action, input: JSON.parse(quote.input) as unknown },
      });
    }
    if (quote.execution_id) {
      throw new ApiError(409, "quote_consumed", `quote ${quote.quote_id} already funded execution ${quote.execution_id}`, {
        quoteId: quote.quote_id,
        executionId: quote.execution_id,
      });
    }
    this.reconcileStale(quote.quote_id);
    let payment = this.paymentOf(quote.quote_id);
    if (req.proof) {
      payment = await this.settle(tenant, quote, req.proof);
    } else if (!payment) {
      if (this.o.now() > quote.expires_at) throw this.expired(quote);
      throw this.paymentRequiredError(quote, `quote ${quote.quote_id} is not paid: pay the challenge and retry with the same Idempotency-Key`);
    } else if (payment.status !== "settled") {
      throw new ApiError(409, "idempotency_in_progress", "the payment for this quote is being settled; retry shortly", {
        quoteId: quote.quote_id,
      }, { "Retry-After": "1" });
    }
    // Synchronous from here: no other request can interleave.
    const fresh = this.quote(tenant, quote.quote_id);
    if (fresh.execution_id) {
      throw new ApiError(409, "quote_consumed", `quote ${quote.quote_id} already funded execution ${fresh.execution_id}`, {
        quoteId: quote.quote_id,
        executionId: fresh.execution_id,
      });
    }
    const row = this.insertExecution(tenant, fresh, req.outcome, req.delayMs ?? this.o.providerDelayMs);
    return { execution: this.executionView(row, true), payment: payment! };
  }

  paymentRequiredError(quote: QuoteRow, message: string) {
    const challenge = this.paymentRequired(quote);
    return new ApiError(
      402,
      "payment_required",
      message,
      {
        quoteId: quote.quote_id,
        amount: formatDecimal(BigInt(quote.amount)),
        currency: "USDC",
        expiresAt: iso(quote.expires_at),
        paymentRequired: challenge,
      },
      challengeHeader(challenge),
    );
  }

  private insertExecution(tenant: string, quote: QuoteRow, outcome: Outcome, delayMs: number): ExecutionRow {
    const action = findAction(quote.action)!;
    const now = this.o.now();
    const context = JSON.parse(quote.context ?? "{}") as { region?: string };
    const input = JSON.parse(quote.input) as Record<string, unknown>;
    const resourceId =
      action.name === "servers.renew" ? String(input.serverId) : newId(action.resourcePrefix, 16);
    const row: ExecutionRow = {
      execution_id: newId("exe"),
      tenant,
      quote_id: quote.quote_id,
      action: action.name,
      input: quote.input,
      status: "pending",
      provider: action.provider,
      region: context.region ?? "global",
      resource_id: resourceId,
      output: null,
      error: null,
      refund: null,
      outcome,
      delay_ms: delayMs,
      attempts: 0,
      next_at: now + Math.floor(delayMs * 0.3),
      created_at: now,
      updated_at: now,
    };
    this.o.db.transaction(() => {
      this.o.db
        .prepare(
          `INSERT INTO executions (execution_id, tenant, quote_id, action, input, status, provider, region, resource_id,
             outcome, delay_ms, next_at, created_at, updated_at)
           VALUES (@execution_id, @tenant, @quote_id, @action, @input, @status, @provider, @region, @resource_id,
             @outcome, @delay_ms, @next_at, @created_at, @updated_at)`,
        )
        .run(row);
      this.o.db.prepare(`UPDATE quotes SET execution_id = ? WHERE quote_id = ?`).run(row.execution_id, quote.quote_id);
      this.createResource(action, row, input);
      this.o.webhooks.enqueue(tenant, "execution.updated", { execution: this.executionView(row, false) });
    })();
    this.scheduleLifecycle();
    return row;
  }

  private createResource(action: ActionDef, row: ExecutionRow, input: Record<string, unknown>): void {
    const now = this.o.now();
    let kind: string;
    let record: Record<string, unknown>;
    const parsed = action.schema.parse(input);
    switch (action.name) {
      case "companies.create":
        kind = "company";
        record = {
          companyId: row.resource_id,
          name: parsed.name,
          jurisdiction: parsed.jurisdiction,
          companyType: parsed.companyType,
          owners: parsed.owners,
          registeredAgent: parsed.registeredAgent,
          formationStatus: "pending",
          providerRefs: { provider: action.provider },
          documents: [],
          executionId: row.execution_id,
          createdAt: iso(now),
          updatedAt: iso(now),
        };
        break;
      case "servers.provision":
        kind = "server";
        record = { serverId: row.resource_id, plan: parsed.plan, region: parsed.region, image: parsed.image, status: "provisioning", executionId: row.execution_id };
        break;
      case "domains.register":
        kind = "domain";
        record = { domainId: row.resource_id, domain: parsed.domain, status: "pending", executionId: row.execution_id };
        break;
      case "storage.purchase":
        kind = "bucket";
        record = { bucketId: row.resource_id, tier: parsed.tier, status: "pending", executionId: row.execution_id };
        break;
      case "agent-services.purchase":
        kind = "purchase";
        record = { purchaseId: row.resource_id, serviceId: parsed.serviceId, status: "pending", executionId: row.execution_id };
        break;
      default:
        return; // servers.renew works on an existing server
    }
    this.o.db
      .prepare(
        `INSERT INTO resources (resource_id, tenant, kind, execution_id, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(row.resource_id, row.tenant, kind, row.execution_id, JSON.stringify(record), now, now);
  }

  executionView(row: ExecutionRow, onCreate: boolean): Record<string, unknown> {
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
    return {
      ...base,
      updatedAt: iso(row.updated_at),
      providerMeta: { provider: row.provider, region: row.region, attempt: Math.max(1, row.attempts) },
      ...(row.output ? { output: JSON.parse(row.output) as unknown } : {}),
      ...(row.error ? { error: JSON.parse(row.error) as unknown } : {}),
      ...(row.refund && !JSON.parse(row.refund).pending ? { refund: JSON.parse(row.refund) as unknown } : {}),
    };
  }

  getExecution(tenant: string, executionId: string) {
    const row = this.o.db.prepare(`SELECT * FROM executions WHERE execution_id = ? AND tenant = ?`).get(executionId, tenant) as
      | ExecutionRow
      | undefined;
    if (!row) throw notFound(`execution ${executionId}`);
    return this.executionView(row, false);
  }

  /** Lists the tenant's executions, newest first, with an opaque cursor. */
  listExecutions(tenant: string, opts: { status?: string; limit: number; cursor?: string }) {
    let before = Number.MAX_SAFE_INTEGER;
    let beforeId = "";
    if (opts.cursor) {
      const m = /^(\d+):(exe_[A-Za-z0-9]+)$/.exec(Buffer.from(opts.cursor, "base64url").toString());
      if (!m) throw invalidRequest("cursor is not one this service issued", [{ path: "cursor", message: "unknown cursor" }]);
      before = Number(m[1]);
      beforeId = m[2]!;
    }
    const rows = this.o.db
      .prepare(
        `SELECT * FROM executions WHERE tenant = @tenant AND (@status IS NULL OR status = @status)
           AND (created_at < @before OR (created_at = @before AND execution_id < @beforeId))
         ORDER BY created_at DESC, execution_id DESC LIMIT @limit`,
      )
      .all({ tenant, status: opts.status ?? null, before, beforeId: beforeId || "~", limit: opts.limit + 1 }) as ExecutionRow[];
    const page = rows.slice(0, opts.limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => this.executionView(r, false)),
      nextCursor: rows.length > opts.limit && last ? Buffer.from(`${last.created_at}:${last.execution_id}`).toString("base64url") : null,
    };
  }

  /** A resource record of this tenant, or undefined. */
  private resource(tenant: string, kind: "company" | "server", id: string): Record<string, unknown> | undefined {
    const row = this.o.db
      .prepare(`SELECT record FROM resources WHERE resource_id = ? AND tenant = ? AND kind = ?`)
      .get(id, tenant, kind) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as Record<string, unknown>) : undefined;
  }

  getCompany(tenant: string, companyId: string) {
    const record = this.resource(tenant, "company", companyId);
    if (!record) throw notFound(`company ${companyId}`);
    return record;
  }

  getServer(tenant: string, serverId: string) {
    const record = this.resource(tenant, "server", serverId);
    if (!record) throw notFound(`server ${serverId}`);
    return record;
  }

  // ---- Provider lifecycle ---------------------------------------------------------

  /** Arms the lifecycle timer for the earliest due execution. */
  scheduleLifecycle(): void {
    if (this.closed) return;
    const next = this.o.db.prepare(`SELECT MIN(next_at) AS at FROM executions WHERE next_at IS NOT NULL`).get() as {
      at: number | null;
    };
    if (this.lifecycleTimer) clearTimeout(this.lifecycleTimer);
    this.lifecycleTimer = undefined;
    if (next.at === null) return;
    const wait = Math.max(0, Math.min(next.at - this.o.now(), 60_000));
    this.lifecycleTimer = setTimeout(() => void this.runLifecycle(), wait);
  }

  private async runLifecycle(): Promise<void> {
    if (this.lifecycleRunning || this.closed) return;
    this.lifecycleRunning = true;
    try {
      const due = this.o.db
        .prepare(`SELECT * FROM executions WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at LIMIT 200`)
        .all(this.o.now()) as ExecutionRow[];
      for (const row of due) {
        if (this.closed) break;
        if (this.busyExecutions.has(row.execution_id)) continue;
        this.busyExecutions.add(row.execution_id);
        try {
          await this.advance(row);
        } catch (e) {
          this.o.log(`provider step for ${row.execution_id} failed: ${(e as Error).message}; will retry`);
          const wait = Math.min(60_000, 1000 * 2 ** Math.min(row.attempts, 6));
          this.o.db
            .prepare(`UPDATE executions SET attempts = attempts + 1, next_at = ? WHERE execution_id = ?`)
            .run(this.o.now() + wait, row.execution_id);
        } finally {
          this.busyExecutions.delete(row.execution_id);
        }
      }
    } finally {
      this.lifecycleRunning = false;
      this.scheduleLifecycle();
    }
  }

  private transition(row: ExecutionRow, patch: Partial<ExecutionRow>): ExecutionRow {
    const now = this.o.now();
    const next: ExecutionRow = { ...row, ...patch, updated_at: now };
    this.o.db.transaction(() => {
      this.o.db
        .prepare(
          `UPDATE executions SET status = @status, output = @output, error = @error, refund = @refund, next_at = @next_at,
             attempts = @attempts, updated_at = @updated_at WHERE execution_id = @execution_id`,
        )
        .run(next);
      this.updateResource(next);
      if (patch.status && patch.status !== row.status) {
        this.o.webhooks.enqueue(row.tenant, "execution.updated", { execution: this.executionView(next, false) });
      }
    })();
    return next;
  }

  private updateResource(row: ExecutionRow): void {
    if (!row.resource_id) return;
    const res = this.o.db.prepare(`SELECT kind, record FROM resources WHERE resource_id = ?`).get(row.resource_id) as
      | { kind: string; record: string }
      | undefined;
    if (!res) return;
    const record = JSON.parse(res.record) as Record<string, unknown>;
    const output = row.output ? (JSON.parse(row.output) as Record<string, unknown>) : undefined;
    const now = iso(this.o.now());
    if (res.kind === "company") {
      if (row.execution_id !== record.executionId) return;
      record.formationStatus =
        row.status === "processing" ? "filing" : row.status === "completed" ? "formed" : row.status === "pending" ? "pending" : "rejected";
      if (output) {
        record.documents = output.documents;
        record.providerRefs = { ...(record.providerRefs as object), registrationNumber: output.registrationNumber };
      }
      record.updatedAt = now;
    } else if (res.kind === "server") {
      if (row.action === "servers.renew") {
        if (row.status === "completed" && output) record.expiresAt = output.expiresAt;
      } else if (row.status === "completed" && output) {
        Object.assign(record, { status: "running", ipv4: output.ipv4, expiresAt: output.expiresAt });
      } else if (row.status === "failed" || row.status === "refunded") {
        record.status = "failed";
      }
    } else {
      if (row.status === "completed") record.status = "active";
      else if (row.status === "failed" || row.status === "refunded") record.status = "failed";
    }
    this.o.db
      .prepare(`UPDATE resources SET record = ?, updated_at = ? WHERE resource_id = ?`)
      .run(JSON.stringify(record), this.o.now(), row.resource_id);
  }

  /** One provider step for a due execution. */
  private async advance(row: ExecutionRow): Promise<void> {
    const action = findAction(row.action)!;
    const now = this.o.now();
    switch (row.status) {
      case "pending":
        this.transition(row, { status: "processing", next_at: row.created_at + row.delay_ms, attempts: 1 });
        return;
      case "processing": {
        if (row.outcome === "fail") {
          this.transition(row, {
            status: "failed",
            error: JSON.stringify({ code: "provider_failed", message: `${action.provider} could not complete ${action.name} (sandbox outcome: fail)` }),
            next_at: now,
          });
          return;
        }
        let previous: Record<string, unknown> | undefined;
        if (action.name === "servers.renew") previous = this.getServer(row.tenant, row.resource_id!);
        const output = providerOutput(action, action.schema.parse(JSON.parse(row.input)), {
          executionId: row.execution_id,
          resourceId: row.resource_id ?? "",
          completedAt: iso(now),
          previous,
        });
        this.transition(row, { status: "completed", output: JSON.stringify(output), next_at: null });
        return;
      }
      case "failed":
        await this.refund(row);
        return;
      default:
        this.o.db.prepare(`UPDATE executions SET next_at = NULL WHERE execution_id = ?`).run(row.execution_id);
    }
  }

  /**
   * Pays a failed execution back: a real transfer from the treasury to the payer. The
   * signed transfer is recorded before it is sent, so a crash can never refund twice.
   */
  private async refund(row: ExecutionRow): Promise<void> {
    const payment = this.paymentOf(row.quote_id);
    if (!payment || payment.status !== "settled" || !payment.payer) {
      this.o.db.prepare(`UPDATE executions SET next_at = NULL WHERE execution_id = ?`).run(row.execution_id);
      return;
    }
    // A refund signed before a crash either landed (finish it) or can never land: only
    // this process ever held its bytes, so a fresh one is safe.
    const pending = row.refund ? (JSON.parse(row.refund) as { pending?: boolean; messageHash?: string }) : undefined;
    if (pending?.pending && pending.messageHash) {
      const landed = this.o.ledger.transactionByMessageHash(pending.messageHash);
      if (landed) return this.finishRefund(row, payment, landed.signature);
    }
    const wire = await refundTransferWire(this.o.ledger, this.o.keys, this.o.mint, payment.payer, BigInt(payment.amount));
    const messageHash = messageHashOf(decodeWireTransaction(wire));
    this.o.db
      .prepare(`UPDATE executions SET refund = ? WHERE execution_id = ?`)
      .run(JSON.stringify({ pending: true, messageHash }), row.execution_id);
    const result = this.o.ledger.submit(wire);
    if (!result.ok) throw new Error(`refund transfer rejected: ${result.error}`);
    this.finishRefund(row, payment, result.signature);
  }

  private finishRefund(row: ExecutionRow, payment: PaymentRow, signature: string): void {
    const refund = { amount: formatDecimal(BigInt(payment.amount)), currency: "USDC", transaction: signature, payer: payment.payer };
    this.transition({ ...row, status: "failed" }, { status: "refunded", refund: JSON.stringify(refund), next_at: null });
    this.o.log(`refunded ${refund.amount} USDC to ${payment.payer} for ${row.execution_id}`);
  }

  // ---- Start and stop ---------------------------------------------------------------

  /** After a restart: settle the fate of payments caught mid-settlement, resume providers. */
  recover(): void {
    const settling = this.o.db.prepare(`SELECT * FROM payments WHERE status = 'settling'`).all() as PaymentRow[];
    for (const p of settling) this.reconcilePayment(p);
    this.scheduleLifecycle();
  }

  close(): void {
    this.closed = true;
    if (this.lifecycleTimer) clearTimeout(this.lifecycleTimer);
  }
}

