/**
 * The PostgreSQL journal's intents: one row per intent — recorded, found, changed by
 * compare-and-set (a single UPDATE … WHERE, rowCount 1; with the current proof's payment
 * record in one transaction), leased to one call at a time, followed by the reconciler, and
 * read back for the read model. postgres.ts builds the store on it with the budget and the
 * payments.
 *
 * Proofs are secrets: each one read from here is handed to `onSecret` before the row is returned.
 */
import type pg from "pg";
import type { Intent, IntentPatch, PaymentRecord } from "../model/types.js";
import { UNFINISHED_STATES } from "../model/types.js";
import { changed, paymentStatement, pgValue, rows, transaction, updateStatement, type Row } from "./pg-sql.js";
import { PgRecords } from "./pg-records.js";
import {
  IntentKeyTaken,
  LeaseLost,
  type DuePoll,
  type Expect,
  type JournalOptions,
  type NewIntent,
  type PollMove,
} from "./port.js";
import { fromRow } from "./rows.js";

export const UNFINISHED = UNFINISHED_STATES.map((s) => `'${s}'`).join(", ");

export abstract class PgIntents extends PgRecords {
  protected constructor(
    pool: pg.Pool,
    private readonly o: JournalOptions,
  ) {
    super(pool);
  }

  private intentRow(row: Row | undefined): Intent | undefined {
    if (!row) return undefined;
    const intent = fromRow(row);
    if (intent.proof) this.o.onSecret?.(intent.proof);
    return intent;
  }

  private async intents(text: string, params: unknown[] = []): Promise<Intent[]> {
    return (await rows(this.pool, text, params)).map((r) => this.intentRow(r)!);
  }

  private async first(text: string, params: unknown[]): Promise<Intent | undefined> {
    return this.intentRow((await rows(this.pool, text, params))[0]);
  }

  // ---- Intents ------------------------------------------------------------------

  async insertIntent(n: NewIntent): Promise<void> {
    try {
      await this.pool.query(
        `INSERT INTO intents (intent_id, intent_key, idem_key, service, action, input, fingerprint, agent_budget, state, call_id,
           lease_owner, lease_until, created_at, updated_at, kind, origin, request)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'new', $9, $10, $11, $12, $12, $13, $14, $15)`,
        [
          n.intentId,
          n.intentKey,
          n.idemKey,
          n.service,
          n.action,
          JSON.stringify(n.input),
          n.fingerprint,
          n.agentBudget?.toString() ?? null,
          n.callId ?? null,
          n.leaseOwner,
          n.leaseUntil,
          n.createdAt,
          n.fetch ? "fetch" : "action",
          n.fetch?.origin ?? null,
          n.fetch ? JSON.stringify(n.fetch.request) : null,
        ].map(pgValue),
      );
    } catch (e) {
      const err = e as { code?: string; constraint?: string };
      if (err.code === "23505" && err.constraint === "intents_intent_key") throw new IntentKeyTaken(n.intentKey);
      throw e;
    }
  }

  intent(intentId: string): Promise<Intent | undefined> {
    return this.first(`SELECT * FROM intents WHERE intent_id = $1`, [intentId]);
  }

  intentByKey(intentKey: string): Promise<Intent | undefined> {
    return this.first(`SELECT * FROM intents WHERE intent_key = $1`, [intentKey]);
  }

  intentByExecution(executionId: string): Promise<Intent | undefined> {
    return this.first(`SELECT * FROM intents WHERE execution_id = $1`, [executionId]);
  }

  async update(
    intentId: string,
    patch: IntentPatch,
    now: number,
    expect: Expect = {},
    payment?: { quoteId: string; patch: Partial<PaymentRecord> },
  ): Promise<boolean> {
    const [text, params] = updateStatement(intentId, patch, now, expect);
    const pay = payment && paymentStatement(payment.quoteId, payment.patch);
    if (!pay) return changed(this.pool, text, params);
    try {
      return await transaction(this.pool, async (c) => {
        if (!(await changed(c, text, params))) throw new LeaseLost(intentId);
        await c.query(...pay);
        return true;
      });
    } catch (e) {
      if (e instanceof LeaseLost) return false;
      throw e;
    }
  }

  /**
   * The owner may run on another machine, so its pid tells nothing here: a lease is taken
   * over only when it has expired, is free, or is already ours.
   */
  claim(intentId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return changed(
      this.pool,
      `UPDATE intents SET lease_owner = $2, lease_until = $4 WHERE intent_id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $3)`,
      [intentId, owner, now, now + ttlMs],
    );
  }

  renew(intentId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return changed(this.pool, `UPDATE intents SET lease_until = $1 WHERE intent_id = $2 AND lease_owner = $3`, [
      now + ttlMs,
      intentId,
      owner,
    ]);
  }

  async release(intentId: string, owner: string): Promise<void> {
    await this.pool.query(
      `UPDATE intents SET lease_owner = NULL, lease_until = NULL WHERE intent_id = $1 AND lease_owner = $2`,
      [intentId, owner],
    );
  }

  unfinished(service: string): Promise<Intent[]> {
    return this.intents(`SELECT * FROM intents WHERE state IN (${UNFINISHED}) AND service = $1 ORDER BY created_at`, [
      service,
    ]);
  }

  /** Due polls, soonest first: only their schedule (the reconciler reads each whole row as it takes it up). */
  async duePolls(now: number, limit: number): Promise<DuePoll[]> {
    const due = await rows(
      this.pool,
      `SELECT intent_id, next_poll_at, poll_interval_ms, (state = 'executed' AND settlement = 'claimed') IS TRUE AS claimed
       FROM intents WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1 ORDER BY next_poll_at LIMIT $2`,
      [now, limit],
    );
    return due.map((r) => ({
      intentId: r.intent_id as string,
      nextPollAt: r.next_poll_at as number,
      pollIntervalMs: r.poll_interval_ms as number | null,
      settlementClaimed: r.claimed === true,
    }));
  }

  /**
   * A pass's schedule-only writes in one statement (one transaction, one commit), each row's
   * only while its next poll is still the one read: a lost commit leaves them due, polled again.
   */
  async reschedule(moves: readonly PollMove[], now: number): Promise<number> {
    if (moves.length === 0) return 0;
    const res = await this.pool.query(
      `UPDATE intents AS i SET next_poll_at = m.next_at, poll_interval_ms = m.interval_ms, updated_at = $1
       FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS m(id, next_at, interval_ms, seen_at)
       WHERE i.intent_id = m.id AND i.next_poll_at = m.seen_at`,
      [
        now,
        moves.map((m) => m.intentId),
        moves.map((m) => m.nextPollAt),
        moves.map((m) => m.pollIntervalMs),
        moves.map((m) => m.seenNextPollAt),
      ],
    );
    return res.rowCount ?? 0;
  }

  async nextPollAt(): Promise<number | undefined> {
    const [row] = await rows(this.pool, `SELECT MIN(next_poll_at) AS at FROM intents WHERE next_poll_at IS NOT NULL`);
    return (row?.at as number | null | undefined) ?? undefined;
  }

  async refundTxOwner(tx: string): Promise<string | undefined> {
    const [row] = await rows(this.pool, `SELECT intent_id FROM intents WHERE refund_tx = $1`, [tx]);
    return row?.intent_id as string | undefined;
  }

  // ---- Read model -------------------------------------------------------------------

  executions(o: {
    before: number;
    beforeId: string;
    status?: string;
    action?: string;
    limit: number;
  }): Promise<Intent[]> {
    return this.intents(
      `SELECT * FROM intents
       WHERE (created_at < $1 OR (created_at = $1 AND intent_id < $2))
         AND execution_id IS NOT NULL
         AND ($3::text IS NULL OR exec_status = $3)
         AND ($4::text IS NULL OR action = $4)
       ORDER BY created_at DESC, intent_id DESC LIMIT $5`,
      [o.before, o.beforeId, o.status ?? null, o.action ?? null, o.limit],
    );
  }

  /** Fetch purchases, newest first (on intents_kind, or with an origin on intents_origin). */
  purchases(o: { before: number; beforeId: string; limit: number; origin?: string }): Promise<Intent[]> {
    return this.intents(
      `SELECT * FROM intents
       WHERE kind = 'fetch'
         ${o.origin === undefined ? "" : "AND origin = $4"}
         AND (created_at < $1 OR (created_at = $1 AND intent_id < $2))
       ORDER BY created_at DESC, intent_id DESC LIMIT $3`,
      [o.before, o.beforeId, o.limit, ...(o.origin === undefined ? [] : [o.origin])],
    );
  }

  needingAttention(limit: number): Promise<Intent[]> {
    return this.intents(
      `SELECT * FROM intents WHERE state = 'attention' OR attention IS NOT NULL ORDER BY created_at DESC LIMIT $1`,
      [limit],
    );
  }

  intentsSince(since: number): Promise<Intent[]> {
    return this.intents(`SELECT * FROM intents WHERE created_at >= $1 ORDER BY created_at`, [since]);
  }
}
