/**
 * The simulated providers: each due execution moves pending → processing → completed
 * (or failed, then refunded by a real transfer back to the payer), with its resource
 * record and webhook events kept in step. Work is durable (next_at in SQLite) and resumes
 * after a restart.
 */
import type Database from "better-sqlite3";
import { formatDecimal } from "../../domain/money.js";
import { findAction } from "../providers/catalog.js";
import { providerOutput } from "../providers/outputs.js";
import { refundTransferWire, type ServiceKeys } from "../ledger/chain.js";
import type { Ledger } from "../ledger/ledger.js";
import { decodeWireTransaction, messageHashOf } from "../ledger/tx-wire.js";
import { executionView, iso, type ExecutionRow, type PaymentRow } from "./records.js";
import { updateResource } from "./resources.js";
import type { Webhooks } from "./webhooks.js";
import { inTransaction, statement } from "../db.js";
import type { EvmSettler } from "../evm/settle.js";

export interface LifecycleOptions {
  db: Database.Database;
  ledger: Ledger;
  keys: ServiceKeys;
  mint: string;
  now: () => number;
  webhooks: Webhooks;
  log: (line: string) => void;
  paymentOf: (quoteId: string) => PaymentRow | undefined;
  /** The EVM ledger's settlement, for refunds of payments made there (absent: it is off). */
  evm?: EvmSettler;
}

export class ProviderLifecycle {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires. */
  private armedAt = 0;
  private running = false;
  private closed = false;
  private readonly busy = new Set<string>();

  constructor(private readonly o: LifecycleOptions) {}

  /** Arms the lifecycle timer for the earliest due execution. */
  schedule(): void {
    if (this.closed) return;
    const next = statement(this.o.db, `SELECT MIN(next_at) AS at FROM executions WHERE next_at IS NOT NULL`).get() as {
      at: number | null;
    };
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (next.at === null) return;
    const wait = Math.max(0, Math.min(next.at - this.o.now(), 60_000));
    this.armedAt = this.o.now() + wait;
    this.timer = setTimeout(() => void this.run(), wait);
  }

  /**
   * A new execution is due at `at`: the timer is armed for it, unless it fires by then
   * anyway or a run is under way (its end schedules from the table).
   */
  due(at: number): void {
    if (this.closed || this.running || (this.timer && this.armedAt <= at)) return;
    this.schedule();
  }

  private async run(): Promise<void> {
    if (this.running || this.closed) return;
    this.running = true;
    try {
      const due = statement(
        this.o.db,
        `SELECT * FROM executions WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at LIMIT 200`,
      ).all(this.o.now()) as ExecutionRow[];
      // The steps that need no await commit together (one write of the pages they share); each
      // step's own transaction is a savepoint within, so a step that fails is undone alone.
      const refunds: ExecutionRow[] = [];
      inTransaction(this.o.db, () => {
        for (const row of due) {
          if (this.closed) break;
          if (row.status === "failed") refunds.push(row);
          else if (!this.busy.has(row.execution_id)) this.attempt(row);
        }
      });
      for (const row of refunds) {
        if (this.closed) break;
        if (this.busy.has(row.execution_id)) continue;
        this.busy.add(row.execution_id);
        try {
          await this.refund(row);
        } catch (e) {
          this.retryLater(row, e as Error);
        } finally {
          this.busy.delete(row.execution_id);
        }
      }
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  /** Runs one synchronous provider step (atomic: its writes are one transaction); a failure schedules it again, later. */
  private attempt(row: ExecutionRow): void {
    try {
      this.step(row);
    } catch (e) {
      this.retryLater(row, e as Error);
    }
  }

  private retryLater(row: ExecutionRow, e: Error): void {
    this.o.log(`provider step for ${row.execution_id} failed: ${e.message}; will retry`);
    const wait = Math.min(60_000, 1000 * 2 ** Math.min(row.attempts, 6));
    statement(this.o.db, `UPDATE executions SET attempts = attempts + 1, next_at = ? WHERE execution_id = ?`).run(
      this.o.now() + wait,
      row.execution_id,
    );
  }

  /**
   * Writes the execution's next state and its resource, and says it (a webhook event) when
   * its status changes; `passedThrough`, a state it went through on the way without being
   * written (a step due at once), is said first.
   */
  private transition(row: ExecutionRow, patch: Partial<ExecutionRow>, passedThrough?: ExecutionRow): ExecutionRow {
    const now = this.o.now();
    const next: ExecutionRow = { ...row, ...patch, updated_at: now };
    inTransaction(this.o.db, () => {
      statement(
        this.o.db,
        `UPDATE executions SET status = @status, output = @output, error = @error, refund = @refund, next_at = @next_at,
             attempts = @attempts, updated_at = @updated_at WHERE execution_id = @execution_id`,
      ).run(next);
      updateResource(this.o.db, this.o.now(), next);
      if (passedThrough) {
        this.o.webhooks.enqueue(row.tenant, "execution.updated", { execution: executionView(passedThrough, false) });
      }
      if (patch.status && patch.status !== row.status) {
        this.o.webhooks.enqueue(row.tenant, "execution.updated", { execution: executionView(next, false) });
      }
    });
    return next;
  }

  /** One provider step for a due execution that is not failed (a failed one is refunded: `refund`). */
  private step(row: ExecutionRow): void {
    const now = this.o.now();
    switch (row.status) {
      case "pending": {
        const processing: ExecutionRow = {
          ...row,
          status: "processing",
          next_at: row.created_at + row.delay_ms,
          attempts: 1,
          updated_at: now,
        };
        if (processing.next_at! > now) {
          this.transition(row, { status: "processing", next_at: processing.next_at, attempts: 1 });
          return;
        }
        // Its provider's delay is over already (none, or a late run): processing is passed
        // through, said but not written apart, and the provider's step runs now, in one write.
        this.process(processing, processing);
        return;
      }
      case "processing":
        this.process(row);
        return;
      default:
        statement(this.o.db, `UPDATE executions SET next_at = NULL WHERE execution_id = ?`).run(row.execution_id);
    }
  }

  /** The provider's work of an execution that is processing: failed as asked, or completed with its output. */
  private process(row: ExecutionRow, passedThrough?: ExecutionRow): void {
    const action = findAction(row.action)!;
    const now = this.o.now();
    if (row.outcome === "fail") {
      this.transition(
        row,
        {
          status: "failed",
          error: JSON.stringify({
            code: "provider_failed",
            message: `${action.provider} could not complete ${action.name} (sandbox outcome: fail)`,
          }),
          next_at: now,
        },
        passedThrough,
      );
      return;
    }
    let previous: Record<string, unknown> | undefined;
    if (action.name === "servers.renew") previous = this.serverRecord(row.tenant, row.resource_id!);
    const output = providerOutput(action, action.schema.parse(JSON.parse(row.input)), {
      executionId: row.execution_id,
      resourceId: row.resource_id ?? "",
      completedAt: iso(now),
      previous,
    });
    this.transition(row, { status: "completed", output: JSON.stringify(output), next_at: null }, passedThrough);
  }

  /**
   * Pays a failed execution back: a real transfer from the treasury to the payer. The
   * signed transfer is recorded before it is sent, so a crash can never refund twice.
   */
  private async refund(row: ExecutionRow): Promise<void> {
    const payment = this.o.paymentOf(row.quote_id);
    if (!payment || payment.status !== "settled" || !payment.payer) {
      statement(this.o.db, `UPDATE executions SET next_at = NULL WHERE execution_id = ?`).run(row.execution_id);
      return;
    }
    if (payment.network) return this.refundOnEvm(row, payment);
    // A refund signed before a crash either landed (finish it) or can never land: only
    // this process ever held its bytes, so a fresh one is safe.
    const pending = row.refund ? (JSON.parse(row.refund) as { pending?: boolean; messageHash?: string }) : undefined;
    if (pending?.pending && pending.messageHash) {
      const landed = this.o.ledger.transactionByMessageHash(pending.messageHash);
      if (landed) return this.finishRefund(row, payment, landed.signature);
    }
    const wire = await refundTransferWire(
      this.o.ledger,
      this.o.keys,
      this.o.mint,
      this.paidFrom(payment) ?? payment.payer,
      BigInt(payment.amount),
      `refund ${row.execution_id}`,
    );
    const messageHash = messageHashOf(decodeWireTransaction(wire));
    statement(this.o.db, `UPDATE executions SET refund = ? WHERE execution_id = ?`).run(
      JSON.stringify({ pending: true, messageHash }),
      row.execution_id,
    );
    const result = this.o.ledger.submit(wire);
    if (!result.ok) throw new Error(`refund transfer rejected: ${result.error}`);
    this.finishRefund(row, payment, result.signature);
  }

  /**
   * A refund on the EVM ledger: recorded pending, then sent; its nonce (derived from the
   * execution) lets it land at most once, so a retry after a crash simply sends it again.
   */
  private async refundOnEvm(row: ExecutionRow, payment: PaymentRow): Promise<void> {
    if (!this.o.evm) throw new Error(`the EVM ledger is off: the refund of ${row.execution_id} waits for it`);
    statement(this.o.db, `UPDATE executions SET refund = ? WHERE execution_id = ?`).run(
      JSON.stringify({ pending: true, network: payment.network }),
      row.execution_id,
    );
    const transaction = await this.o.evm.refund(row.execution_id, payment.payer!, BigInt(payment.amount));
    this.finishRefund(row, payment, transaction);
  }

  /**
   * Whose token account the payment moved money out of: the payer's own, or — when the payer
   * spent as a delegate — the account's owner. The refund goes back there.
   */
  private paidFrom(payment: PaymentRow): string | undefined {
    const landed = payment.transaction_sig ? this.o.ledger.transaction(payment.transaction_sig) : undefined;
    if (!landed) return undefined;
    const amount = BigInt(payment.amount);
    const debited = landed.preTokenBalances.find((pre) => {
      if (pre.mint !== this.o.mint) return false;
      const post = landed.postTokenBalances.find((b) => b.accountIndex === pre.accountIndex);
      return post !== undefined && pre.amount - post.amount === amount;
    });
    return debited?.owner;
  }

  private finishRefund(row: ExecutionRow, payment: PaymentRow, signature: string): void {
    const refund = {
      amount: formatDecimal(BigInt(payment.amount)),
      currency: "USDC",
      transaction: signature,
      payer: payment.payer,
    };
    this.transition(
      { ...row, status: "failed" },
      { status: "refunded", refund: JSON.stringify(refund), next_at: null },
    );
    this.o.log(`refunded ${refund.amount} USDC to ${payment.payer} for ${row.execution_id}`);
  }

  /** The record of the server a servers.renew execution extends. */
  private serverRecord(tenant: string, serverId: string): Record<string, unknown> {
    const row = statement(
      this.o.db,
      `SELECT record FROM resources WHERE resource_id = ? AND tenant = ? AND kind = 'server'`,
    ).get(serverId, tenant) as { record: string } | undefined;
    if (!row) throw new Error(`server ${serverId} not found`);
    return JSON.parse(row.record) as Record<string, unknown>;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
