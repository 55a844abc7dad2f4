/**
 * The v1 service's behaviour, below HTTP: quotes, x402 payments settled through the
 * reference facilitator on the ledger, executions and their simulated providers, the
 * records they create, and webhooks. Every method takes the tenant (a hash of the API key)
 * so one key's records are invisible to another.
 */
import { parseDecimal } from "../../domain/money.js";
import { canonicalJson, type PaymentRequirements } from "../../domain/wire.js";
import { newId } from "../../domain/ids.js";
import { describeAction, findAction, ACTIONS, type PricingWorld } from "../providers/catalog.js";
import { ApiError, invalidRequest, notFound, zodIssues } from "../http/errors.js";
import { ProviderLifecycle } from "./lifecycle.js";
import { quoteIdFromProof } from "./proofs.js";
import { acceptsOf, executionView, quoteView, type ExecutionRow, type Outcome, type QuoteRow } from "./records.js";
import { createResource, readResource } from "./resources.js";
import { Payments, quoteExpired, type PaymentsOptions } from "./settlement.js";
import { evmRequirementsFor } from "./settlement-evm.js";
import type { Webhooks } from "./webhooks.js";
import { inTransaction, statement } from "../db.js";

export type { Outcome } from "./records.js";

export interface ServiceOptions extends PaymentsOptions {
  quoteTtlMs: number;
  providerDelayMs: number;
  webhooks: Webhooks;
}

const MAX_TIMEOUT_SECONDS = 60;

export class SandboxService {
  readonly payments: Payments;
  private readonly lifecycle: ProviderLifecycle;

  constructor(private readonly o: ServiceOptions) {
    this.payments = new Payments(o);
    this.lifecycle = new ProviderLifecycle({ ...o, paymentOf: (quoteId) => this.payments.paymentOf(quoteId) });
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
        const record = readResource(this.o.db, tenant, "server", serverId) as
          { plan: string; region: string; status: string } | undefined;
        return record?.status === "provisioning" || record?.status === "running" ? record : undefined;
      },
      domainTaken: (domain) => {
        const row = statement(
          this.o.db,
          `SELECT 1 FROM resources WHERE kind = 'domain' AND json_extract(record, '$.domain') = ?
             AND json_extract(record, '$.status') != 'failed'`,
        ).get(domain);
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
      throw invalidRequest(
        `input does not match the ${action.name} input schema`,
        zodIssues(parsed.error.issues, "input"),
      );
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

  /** Creates a quote; `budget` null for quotes made implicitly by an unpaid POST /executions. */
  createQuote(
    tenant: string,
    actionName: string,
    input: Record<string, unknown>,
    budget: { amount: string; currency: string } | null,
  ) {
    if (budget && budget.currency !== "USDC") {
      throw new ApiError(
        400,
        "unsupported_currency",
        `budget.currency ${JSON.stringify(budget.currency)} is not supported; use USDC`,
      );
    }
    const budgetAtomic = budget ? parseDecimal(budget.amount) : undefined;
    if (budget && budgetAtomic === undefined) {
      throw invalidRequest("budget.amount must be a decimal with at most 6 decimals", [
        { path: "budget.amount", message: 'must be a decimal string with at most 6 decimals, such as "12.50"' },
      ]);
    }
    const { action, price } = this.price(tenant, actionName, input);
    const quoteId = newId("qt");
    const evmRequirements = this.o.evm && evmRequirementsFor(this.o.evm, quoteId, price.amount, MAX_TIMEOUT_SECONDS);
    const now = this.o.now();
    const row: QuoteRow = {
      quote_id: quoteId,
      tenant,
      action: action.name,
      input: canonicalJson(input),
      amount: price.amount.toString(),
      budget: JSON.stringify(budget),
      requirements: JSON.stringify(this.requirementsFor(quoteId, price.amount)),
      evm_requirements: evmRequirements ? JSON.stringify(evmRequirements) : null,
      context: JSON.stringify({ breakdown: price.breakdown, region: price.region }),
      created_at: now,
      expires_at: now + this.o.quoteTtlMs,
      execution_id: null,
    };
    statement(
      this.o.db,
      `INSERT INTO quotes (quote_id, tenant, action, input, amount, budget, requirements, evm_requirements, context,
           created_at, expires_at)
         VALUES (@quote_id, @tenant, @action, @input, @amount, @budget, @requirements, @evm_requirements, @context,
           @created_at, @expires_at)`,
    ).run(row);
    const withinBudget = budgetAtomic === undefined ? undefined : price.amount <= budgetAtomic;
    return { row, view: this.quoteView(row, withinBudget) };
  }

  private quote(tenant: string, quoteId: string): QuoteRow {
    const row = statement(this.o.db, `SELECT * FROM quotes WHERE quote_id = ? AND tenant = ?`).get(quoteId, tenant) as
      QuoteRow | undefined;
    if (!row) throw notFound(`quote ${quoteId}`);
    return row;
  }

  getQuote(tenant: string, quoteId: string) {
    return this.quoteView(this.quote(tenant, quoteId));
  }

  /** A quote as the wire shows it, its requirement carrying the service's signed offers. */
  private quoteView(row: QuoteRow, withinBudget?: boolean) {
    return quoteView(row, withinBudget, this.payments.challenges.signed(acceptsOf(row)));
  }

  // ---- Payments (settlement.ts) ---------------------------------------------------

  prepare(tenant: string, quoteId: string) {
    const quote = this.quote(tenant, quoteId);
    const payment = this.payments.paymentOf(quote.quote_id);
    if (!payment && this.o.now() > quote.expires_at) throw quoteExpired(quote);
    return { quoteId: quote.quote_id, paymentRequired: this.payments.paymentRequired(quote) };
  }

  async confirm(tenant: string, quoteId: string, proof: string) {
    const quote = this.quote(tenant, quoteId);
    const payment = await this.payments.settle(tenant, quote, proof);
    return this.payments.paymentView(payment);
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
    const quoteId = req.quoteId ?? (req.proof ? quoteIdFromProof(req.proof) : undefined);
    if (!quoteId) {
      const { row } = this.createQuote(tenant, req.action, req.input, null);
      if (req.proof) this.payments.checkProofShape(req.proof, row); // a malformed proof says so, with the challenge to pay
      throw this.payments.paymentRequiredError(
        row,
        "no quote or payment attached: pay the attached challenge and retry with the same Idempotency-Key",
      );
    }
    const quote = this.quote(tenant, quoteId);
    if (quote.action !== req.action || quote.input !== canonicalJson(req.input)) {
      throw new ApiError(
        409,
        "quote_mismatch",
        `the execution body differs from the intent quoted in ${quote.quote_id}`,
        {
          quoteId: quote.quote_id,
          quoted: { action: quote.action, input: JSON.parse(quote.input) as unknown },
        },
      );
    }
    if (quote.execution_id) {
      throw new ApiError(
        409,
        "quote_consumed",
        `quote ${quote.quote_id} already funded execution ${quote.execution_id}`,
        {
          quoteId: quote.quote_id,
          executionId: quote.execution_id,
        },
      );
    }
    // settle() reconciles the quote's unfinished payments (and the proof's) itself.
    if (!req.proof) await this.payments.reconcileQuote(quote.quote_id);
    let payment = req.proof ? undefined : this.payments.paymentOf(quote.quote_id);
    if (req.proof) {
      payment = await this.payments.settle(tenant, quote, req.proof);
    } else if (!payment) {
      if (this.o.now() > quote.expires_at) throw quoteExpired(quote);
      throw this.payments.paymentRequiredError(
        quote,
        `quote ${quote.quote_id} is not paid: pay the challenge and retry with the same Idempotency-Key`,
      );
    } else if (payment.status !== "settled") {
      throw this.payments.settlingError(quote, payment);
    }
    // Synchronous from here: no other request can interleave.
    const fresh = this.quote(tenant, quote.quote_id);
    if (fresh.execution_id) {
      throw new ApiError(
        409,
        "quote_consumed",
        `quote ${quote.quote_id} already funded execution ${fresh.execution_id}`,
        {
          quoteId: quote.quote_id,
          executionId: fresh.execution_id,
        },
      );
    }
    const row = this.insertExecution(tenant, fresh, req.outcome, req.delayMs ?? this.o.providerDelayMs);
    return { execution: executionView(row, true), payment: payment! };
  }

  private insertExecution(tenant: string, quote: QuoteRow, outcome: Outcome, delayMs: number): ExecutionRow {
    const action = findAction(quote.action)!;
    const now = this.o.now();
    const context = JSON.parse(quote.context ?? "{}") as { region?: string };
    const input = JSON.parse(quote.input) as Record<string, unknown>;
    const resourceId = action.name === "servers.renew" ? String(input.serverId) : newId(action.resourcePrefix, 16);
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
    inTransaction(this.o.db, () => {
      statement(
        this.o.db,
        `INSERT INTO executions (execution_id, tenant, quote_id, action, input, status, provider, region, resource_id,
             outcome, delay_ms, next_at, created_at, updated_at)
           VALUES (@execution_id, @tenant, @quote_id, @action, @input, @status, @provider, @region, @resource_id,
             @outcome, @delay_ms, @next_at, @created_at, @updated_at)`,
      ).run(row);
      statement(this.o.db, `UPDATE quotes SET execution_id = ? WHERE quote_id = ?`).run(
        row.execution_id,
        quote.quote_id,
      );
      createResource(this.o.db, this.o.now(), action, row, input);
      this.o.webhooks.enqueue(tenant, "execution.updated", { execution: executionView(row, false) });
    });
    this.lifecycle.due(row.next_at!);
    return row;
  }

  getExecution(tenant: string, executionId: string) {
    const row = statement(this.o.db, `SELECT * FROM executions WHERE execution_id = ? AND tenant = ?`).get(
      executionId,
      tenant,
    ) as ExecutionRow | undefined;
    if (!row) throw notFound(`execution ${executionId}`);
    return executionView(row, false);
  }

  /** Lists the tenant's executions, newest first, with an opaque cursor. */
  listExecutions(tenant: string, opts: { status?: string; limit: number; cursor?: string }) {
    let before = Number.MAX_SAFE_INTEGER;
    let beforeId = "";
    if (opts.cursor) {
      const m = /^(\d+):(exe_[A-Za-z0-9]+)$/.exec(Buffer.from(opts.cursor, "base64url").toString());
      if (!m)
        throw invalidRequest("cursor is not one this service issued", [{ path: "cursor", message: "unknown cursor" }]);
      before = Number(m[1]);
      beforeId = m[2]!;
    }
    const rows = statement(
      this.o.db,
      `SELECT * FROM executions WHERE tenant = @tenant AND (@status IS NULL OR status = @status)
           AND (created_at < @before OR (created_at = @before AND execution_id < @beforeId))
         ORDER BY created_at DESC, execution_id DESC LIMIT @limit`,
    ).all({
      tenant,
      status: opts.status ?? null,
      before,
      beforeId: beforeId || "~",
      limit: opts.limit + 1,
    }) as ExecutionRow[];
    const page = rows.slice(0, opts.limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => executionView(r, false)),
      nextCursor:
        rows.length > opts.limit && last
          ? Buffer.from(`${last.created_at}:${last.execution_id}`).toString("base64url")
          : null,
    };
  }

  getCompany(tenant: string, companyId: string) {
    const record = readResource(this.o.db, tenant, "company", companyId);
    if (!record) throw notFound(`company ${companyId}`);
    return record;
  }

  getServer(tenant: string, serverId: string) {
    const record = readResource(this.o.db, tenant, "server", serverId);
    if (!record) throw notFound(`server ${serverId}`);
    return record;
  }

  // ---- Start and stop ---------------------------------------------------------------

  /** After a restart, before any request: the EVM ledger's payments and the chain brought in step. */
  recoverEvm(): Promise<void> {
    return this.payments.recoverEvm();
  }

  /** After a restart: settle the fate of payments caught mid-settlement, resume providers. */
  recover(): void {
    this.payments.recover();
    this.lifecycle.schedule();
  }

  close(): void {
    this.lifecycle.close();
  }
}
