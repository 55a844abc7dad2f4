/**
 * The SQLite journal's intents: one row per intent, with its state and every identifier as
 * soon as it exists — recorded, found, changed by compare-and-set (on the state and the
 * lease), leased to one call at a time, followed by the reconciler, and read back for the
 * read model. sqlite.ts builds the store on it with the budget and the payments.
 *
 * Proofs are secrets: each one read from here is handed to `onSecret` (for scrubbing) before
 * the row is returned.
 */
import type Database from "better-sqlite3";
import type { Intent, IntentPatch, PaymentRecord } from "../model/types.js";
import { UNFINISHED_STATES } from "../model/types.js";
import {
  IntentKeyTaken,
  type DuePoll,
  type Expect,
  type JournalOptions,
  type NewIntent,
  type PollMove,
} from "./port.js";
import { leaseOwnerAlive } from "./lease.js";
import { intentColumns, fromRow } from "./rows.js";
import { SqliteRecords } from "./sqlite-records.js";

export const UNFINISHED = UNFINISHED_STATES.map((s) => `'${s}'`).join(", ");

export abstract class SqliteIntents extends SqliteRecords {
  protected constructor(
    db: Database.Database,
    private readonly o: JournalOptions,
  ) {
    super(db);
  }

  /** Patches a payment record (sqlite.ts keeps the payments): `update` lands the current proof's patch with its intent's. */
  abstract updatePayment(quoteId: string, patch: Partial<PaymentRecord>): void;

  private intentRow(row: unknown): Intent | undefined {
    if (!row) return undefined;
    const intent = fromRow(row as Record<string, unknown>);
    if (intent.proof) this.o.onSecret?.(intent.proof);
    return intent;
  }

  private intentRows(rows: unknown[]): Intent[] {
    return rows.map((r) => this.intentRow(r)!);
  }

  // ---- Intents ------------------------------------------------------------------

  insertIntent(n: NewIntent): void {
    try {
      this.insertIntentRow(n);
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE" && this.intentByKey(n.intentKey))
        throw new IntentKeyTaken(n.intentKey);
      throw e;
    }
  }

  private insertIntentRow(n: NewIntent): void {
    this.sql(
      `INSERT INTO intents (intent_id, intent_key, idem_key, service, action, input, fingerprint, agent_budget, state, call_id,
         lease_owner, lease_until, created_at, updated_at, kind, origin, request)
       VALUES (@intentId, @intentKey, @idemKey, @service, @action, @input, @fingerprint, @agentBudget, 'new', @callId,
         @leaseOwner, @leaseUntil, @createdAt, @createdAt, @kind, @origin, @request)`,
    ).run({
      intentId: n.intentId,
      intentKey: n.intentKey,
      idemKey: n.idemKey,
      service: n.service,
      action: n.action,
      input: JSON.stringify(n.input),
      fingerprint: n.fingerprint,
      agentBudget: n.agentBudget?.toString() ?? null,
      callId: n.callId,
      leaseOwner: n.leaseOwner,
      leaseUntil: n.leaseUntil,
      createdAt: n.createdAt,
      kind: n.fetch ? "fetch" : "action",
      origin: n.fetch?.origin ?? null,
      request: n.fetch ? JSON.stringify(n.fetch.request) : null,
    });
  }

  intent(intentId: string): Intent | undefined {
    return this.intentRow(this.sql(`SELECT * FROM intents WHERE intent_id = ?`).get(intentId));
  }

  intentByKey(intentKey: string): Intent | undefined {
    return this.intentRow(this.sql(`SELECT * FROM intents WHERE intent_key = ?`).get(intentKey));
  }

  intentByExecution(executionId: string): Intent | undefined {
    return this.intentRow(this.sql(`SELECT * FROM intents WHERE execution_id = ?`).get(executionId));
  }

  /**
   * Commits fields of one intent. With `expect`, only if the intent is still in that state
   * and/or held by that owner: returns false when it is not (someone else moved it).
   */
  update(
    intentId: string,
    patch: IntentPatch,
    now: number,
    expect: Expect = {},
    payment?: { quoteId: string; patch: Partial<PaymentRecord> },
  ): boolean {
    if (!payment) return this.updateRow(intentId, patch, now, expect);
    return this.atomically(() => {
      if (!this.updateRow(intentId, patch, now, expect)) return false;
      this.updatePayment(payment.quoteId, payment.patch);
      return true;
    });
  }

  protected updateRow(intentId: string, patch: IntentPatch, now: number, expect: Expect): boolean {
    const columns = intentColumns(patch);
    const sets = [...columns.map(([c]) => `${c} = ?`), "updated_at = ?"].join(", ");
    const where = [
      "intent_id = ?",
      ...(expect.state ? ["state = ?"] : []),
      ...(expect.owner ? ["lease_owner = ?"] : []),
    ].join(" AND ");
    const params = [
      ...columns.map(([, v]) => v),
      now,
      intentId,
      ...(expect.state ? [expect.state] : []),
      ...(expect.owner ? [expect.owner] : []),
    ];
    return this.sql(`UPDATE intents SET ${sets} WHERE ${where}`).run(...params).changes === 1;
  }

  /** Claims an intent for `owner` unless another live owner holds an unexpired lease. */
  claim(intentId: string, owner: string, now: number, ttlMs: number): boolean {
    const held = this.sql(`SELECT lease_owner, lease_until FROM intents WHERE intent_id = ?`).get(intentId) as
      { lease_owner: string | null; lease_until: number | null } | undefined;
    if (held?.lease_owner && held.lease_owner !== owner && !leaseOwnerAlive(held.lease_owner)) {
      // The process that held it is gone (a crash): its lease means nothing any more.
      this.sql(`UPDATE intents SET lease_owner = NULL, lease_until = NULL WHERE intent_id = ? AND lease_owner = ?`).run(
        intentId,
        held.lease_owner,
      );
    }
    return (
      this.sql(
        `UPDATE intents SET lease_owner = @owner, lease_until = @until
         WHERE intent_id = @id AND (lease_owner IS NULL OR lease_owner = @owner OR lease_until < @now)`,
      ).run({ id: intentId, owner, now, until: now + ttlMs }).changes === 1
    );
  }

  /** Extends a lease this owner still holds; false when it was lost. */
  renew(intentId: string, owner: string, now: number, ttlMs: number): boolean {
    return (
      this.sql(`UPDATE intents SET lease_until = ? WHERE intent_id = ? AND lease_owner = ?`).run(
        now + ttlMs,
        intentId,
        owner,
      ).changes === 1
    );
  }

  release(intentId: string, owner: string): void {
    this.sql(`UPDATE intents SET lease_owner = NULL, lease_until = NULL WHERE intent_id = ? AND lease_owner = ?`).run(
      intentId,
      owner,
    );
  }

  unfinished(service: string): Intent[] {
    return this.intentRows(
      this.sql(`SELECT * FROM intents WHERE state IN (${UNFINISHED}) AND service = ? ORDER BY created_at`).all(service),
    );
  }

  /**
   * Intents the reconciler should look at now: only those with a due poll, via the partial
   * index, and only their schedule — the reconciler reads each whole row as it takes it up.
   */
  duePolls(now: number, limit: number): DuePoll[] {
    return (
      this.sql(
        `SELECT intent_id, next_poll_at, poll_interval_ms, state = 'executed' AND settlement = 'claimed' AS claimed
         FROM intents WHERE next_poll_at IS NOT NULL AND next_poll_at <= ? ORDER BY next_poll_at LIMIT ?`,
      ).all(now, limit) as {
        intent_id: string;
        next_poll_at: number;
        poll_interval_ms: number | null;
        claimed: number;
      }[]
    ).map((r) => ({
      intentId: r.intent_id,
      nextPollAt: r.next_poll_at,
      pollIntervalMs: r.poll_interval_ms,
      settlementClaimed: r.claimed === 1,
    }));
  }

  /**
   * One commit for a pass's schedule-only writes, where each was its own fsynced commit: a
   * crash that loses it only leaves those intents due as they were, polled again at once.
   */
  reschedule(moves: readonly PollMove[], now: number): number {
    if (moves.length === 0) return 0;
    const move = this.sql(
      `UPDATE intents SET next_poll_at = ?, poll_interval_ms = ?, updated_at = ? WHERE intent_id = ? AND next_poll_at = ?`,
    );
    return this.atomically(() => {
      let moved = 0;
      for (const m of moves)
        moved += move.run(m.nextPollAt, m.pollIntervalMs, now, m.intentId, m.seenNextPollAt).changes;
      return moved;
    });
  }

  nextPollAt(): number | undefined {
    const row = this.sql(`SELECT MIN(next_poll_at) AS at FROM intents WHERE next_poll_at IS NOT NULL`).get() as {
      at: number | null;
    };
    return row.at ?? undefined;
  }

  /** Another intent that already counts this refund transaction, if any. */
  refundTxOwner(tx: string): string | undefined {
    return (this.sql(`SELECT intent_id FROM intents WHERE refund_tx = ?`).get(tx) as { intent_id: string } | undefined)
      ?.intent_id;
  }

  // ---- Read model -------------------------------------------------------------------

  /** Intents with an execution, newest first, after a (createdAt, intentId) cursor. */
  executions(o: { before: number; beforeId: string; status?: string; action?: string; limit: number }): Intent[] {
    return this.intentRows(
      this.sql(
        `SELECT * FROM intents INDEXED BY intents_created
         WHERE (created_at < @before OR (created_at = @before AND intent_id < @beforeId))
           AND execution_id IS NOT NULL
           AND (@status IS NULL OR exec_status = @status)
           AND (@action IS NULL OR action = @action)
         ORDER BY created_at DESC, intent_id DESC LIMIT @limit`,
      ).all({
        before: o.before,
        beforeId: o.beforeId,
        status: o.status ?? null,
        action: o.action ?? null,
        limit: o.limit,
      }),
    );
  }

  /**
   * Fetch purchases, newest first, after a (createdAt, intentId) cursor: on intents_kind, or
   * with an origin on intents_origin (origin, created_at), its ties ordered by id.
   */
  purchases(o: { before: number; beforeId: string; limit: number; origin?: string }): Intent[] {
    const index = o.origin === undefined ? "intents_kind" : "intents_origin";
    return this.intentRows(
      this.sql(
        `SELECT * FROM intents INDEXED BY ${index}
         WHERE kind = 'fetch'
           ${o.origin === undefined ? "" : "AND origin = @origin"}
           AND (created_at < @before OR (created_at = @before AND intent_id < @beforeId))
         ORDER BY created_at DESC, intent_id DESC LIMIT @limit`,
      ).all({
        before: o.before,
        beforeId: o.beforeId,
        limit: o.limit,
        ...(o.origin === undefined ? {} : { origin: o.origin }),
      }),
    );
  }

  /** Intents a human should look at, newest first. */
  needingAttention(limit: number): Intent[] {
    return this.intentRows(
      this.sql(
        `SELECT * FROM intents WHERE state = 'attention' OR attention IS NOT NULL ORDER BY created_at DESC LIMIT ?`,
      ).all(limit),
    );
  }

  /** Every intent created at or after `since` (ms), oldest first: for audits. */
  intentsSince(since: number): Intent[] {
    return this.intentRows(this.sql(`SELECT * FROM intents WHERE created_at >= ? ORDER BY created_at`).all(since));
  }
}
