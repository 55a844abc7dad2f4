/**
 * The journal on SQLite: the store itself (its file, migrations, health) and the money it
 * keeps — the budget each intent holds and every signed proof by its memo — over the intents
 * (sqlite-intents.ts) and the records beside them: approvals, the catalog cache and the freeze
 * (sqlite-records.ts). WAL + synchronous=FULL: a committed step survives a kill -9. Budget
 * reservations are taken in BEGIN IMMEDIATE transactions, so processes sharing one journal
 * can never jointly exceed a cap; a signed proof is recorded under the same write lock as a
 * freeze, so none is recorded once payments are frozen.
 *
 * Proofs are secrets: each one read from here is handed to `onSecret` (for scrubbing) before
 * the row is returned.
 */
import Database from "better-sqlite3";
import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Usage } from "../budget/policy.js";
import type { IntentPatch, PaymentRecord } from "../model/types.js";
import {
  LeaseLost,
  DAY_MS,
  PaymentsFrozen,
  QuoteTaken,
  SchemaTooNew,
  type Expect,
  type IntentWrite,
  type JournalHealth,
  type JournalOptions,
  type JournalStore,
  type ActionSpend,
  type DaySpend,
  type NetworkSpend,
} from "./port.js";
import { paymentColumns, toPayment } from "./rows.js";
import { MIGRATIONS } from "./schema.js";
import { SqliteIntents, UNFINISHED } from "./sqlite-intents.js";
import {
  SQLITE_BY_ACTION,
  SQLITE_BY_DAY,
  SQLITE_BY_NETWORK,
  toActionSpend,
  toDaySpend,
  toNetworkSpend,
} from "./spending-sql.js";

export {
  IntentKeyTaken,
  LeaseLost,
  type Expect,
  type JournalOptions,
  type JournalStore,
  type NewIntent,
} from "./port.js";

/**
 * The page cache one journal connection keeps, in KiB: SQLite's own default. better-sqlite3
 * builds SQLite with 16 MB instead, and the journal's file grows by about 9 KB a paid call,
 * so that cache — process memory outside the JS heap — grew with every call for the first
 * thousands of them (10–19 MB more RSS after 1,000 paid calls, docs/benchmarks.md "Memory").
 * Pages past it are read again from the operating system's file cache, not from the disk.
 */
export const PAGE_CACHE_KIB = 2000;

function openDatabase(path: string): Database.Database {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new Database(path);
  // The busy timeout first: another process may hold the lock while this one switches to WAL.
  // exec(), not pragma(): no statement object left for the garbage collector (sqlite-records.ts).
  db.exec("PRAGMA busy_timeout = 10000");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = FULL");
  db.exec(`PRAGMA cache_size = -${PAGE_CACHE_KIB}`);
  return db;
}

/** The journal in one SQLite file: synchronous, as SQLite is; the engine awaits it all the same. */
export class Journal extends SqliteIntents implements JournalStore {
  readonly kind = "sqlite" as const;

  constructor(
    readonly path: string,
    o: JournalOptions = {},
  ) {
    super(openDatabase(path), o);
    this.migrate();
    for (const suffix of ["", "-wal", "-shm"]) {
      if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
    }
  }

  /** The schema version read under the write lock: concurrent openers never run a migration twice. */
  private migrate(): void {
    const version = () => this.schemaVersion;
    for (;;) {
      const migrated = this.db
        .transaction((): boolean => {
          const current = version();
          if (current > MIGRATIONS.length) throw new SchemaTooNew(current, MIGRATIONS.length, this.path);
          if (current === MIGRATIONS.length) return false;
          this.db.exec(MIGRATIONS[current]!);
          this.db.exec(`PRAGMA user_version = ${current + 1}`);
          return true;
        })
        .immediate();
      if (!migrated) return;
    }
  }

  /** The page cache this connection may keep, in KiB (PAGE_CACHE_KIB). */
  get pageCacheKib(): number {
    return -(this.sql("PRAGMA cache_size").get() as { cache_size: number }).cache_size;
  }

  get schemaVersion(): number {
    return (this.sql("PRAGMA user_version").get() as { user_version: number }).user_version;
  }

  get location(): string {
    return this.path;
  }

  close(): void {
    this.db.close();
  }

  /** Counts for `doctor`, and SQLite's own integrity check. */
  health(): JournalHealth {
    const integrity = String(
      (this.sql("PRAGMA integrity_check").get() as { integrity_check: unknown }).integrity_check,
    );
    const c = this.sql(
      `SELECT COUNT(*) AS total, SUM(state IN (${UNFINISHED})) AS unfinished, SUM(state = 'attention' OR attention IS NOT NULL) AS attention,
         SUM(next_poll_at IS NOT NULL) AS following FROM intents`,
    ).get() as { total: number; unfinished: number | null; attention: number | null; following: number | null };
    return {
      store: "sqlite",
      location: this.path,
      integrity,
      schemaVersion: this.schemaVersion,
      total: c.total,
      unfinished: c.unfinished ?? 0,
      attention: c.attention ?? 0,
      following: c.following ?? 0,
    };
  }

  // ---- Budget -------------------------------------------------------------------

  /**
   * Held (reserved or spent) in the rolling 24 h window, minus refunds seen on chain — an index
   * range scan whose cost follows the day's payments — and, only when asked, in total.
   */
  usage(now: number, withTotal = true): Usage {
    const day = this.sql(
      `SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER)), 0) AS n FROM intents INDEXED BY intents_budget
       WHERE budget_state IN ('reserved', 'spent') AND budget_at > ?`,
    )
      .safeIntegers(true)
      .get(now - DAY_MS) as { n: bigint };
    if (!withTotal) return { day: day.n, total: 0n };
    const total = this.sql(
      `SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER)), 0) AS n FROM intents WHERE budget_state IN ('reserved', 'spent')`,
    )
      .safeIntegers(true)
      .get() as { n: bigint };
    return { day: day.n, total: total.n };
  }

  /** Reserved (not yet known to be spent), in all or within the 24 h window. */
  reserved(now?: number): bigint {
    const row = this.sql(
      `SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents WHERE budget_state = 'reserved' AND (@since IS NULL OR budget_at > @since)`,
    )
      .safeIntegers(true)
      .get({ since: now === undefined ? null : now - DAY_MS }) as { n: bigint };
    return row.n;
  }

  /** Refunds credited back (seen on chain), in total. */
  refundedTotal(): bigint {
    return (
      this.sql(`SELECT COALESCE(SUM(CAST(refund_credit AS INTEGER)), 0) AS n FROM intents`)
        .safeIntegers(true)
        .get() as { n: bigint }
    ).n;
  }

  spendingByAction(now: number): ActionSpend[] {
    return (
      this.sql(SQLITE_BY_ACTION)
        .safeIntegers(true)
        .all({ since: now - DAY_MS }) as Record<string, unknown>[]
    ).map(toActionSpend);
  }

  spendingByNetwork(now: number): NetworkSpend[] {
    return (
      this.sql(SQLITE_BY_NETWORK)
        .safeIntegers(true)
        .all({ since: now - DAY_MS }) as Record<string, unknown>[]
    ).map(toNetworkSpend);
  }

  spendingByDay(since: number): DaySpend[] {
    return (this.sql(SQLITE_BY_DAY).safeIntegers(true).all(since) as Record<string, unknown>[]).map(toDaySpend);
  }

  /**
   * Reserves `amount` for an intent if `decide(usage)` allows it, in one BEGIN IMMEDIATE
   * transaction: the usage read and the reservation cannot interleave with another
   * process's. Throws LeaseLost when the intent is no longer as `expect` says.
   */
  reserve<T extends { ok: boolean }>(
    intentId: string,
    amount: bigint,
    now: number,
    decide: (usage: Usage) => T,
    patch: IntentPatch,
    withTotal: boolean,
    expect: Expect,
    signed?: PaymentRecord,
  ): T {
    return this.db
      .transaction(() => {
        const decision = decide(this.usage(now, withTotal));
        if (decision.ok && signed) this.insertSigned(signed);
        if (
          decision.ok &&
          !this.updateRow(
            intentId,
            { ...patch, budgetState: "reserved", budgetAmount: amount, budgetAt: now },
            now,
            expect,
          )
        ) {
          throw new LeaseLost(intentId);
        }
        return decision;
      })
      .immediate();
  }

  // ---- Payments (every signed proof, by its memo) -----------------------------------

  /**
   * One row per signed proof, and its intent's commit, in one BEGIN IMMEDIATE transaction:
   * false (nothing written) when the intent moved; PaymentsFrozen (nothing written) once a
   * freeze has committed. A second proof for the same quote is refused (it would hide the first).
   */
  recordSigned(p: PaymentRecord, then: IntentWrite): boolean {
    try {
      return this.db
        .transaction(() => {
          this.insertSigned(p);
          if (!this.updateRow(then.intentId, then.patch, then.now, then.expect)) throw new LeaseLost(then.intentId);
          return true;
        })
        .immediate();
    } catch (e) {
      if (e instanceof LeaseLost) return false;
      throw e;
    }
  }

  /** Inside a transaction: a signed proof's row, unless payments are frozen (the quote id is the key: one proof per quote). */
  private insertSigned(p: PaymentRecord): void {
    const freeze = this.frozen();
    if (freeze) throw new PaymentsFrozen(freeze);
    const cols = paymentColumns(p);
    try {
      this.sql(
        `INSERT INTO payments (${cols.map(([c]) => c).join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      ).run(...cols.map(([, v]) => v));
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_PRIMARYKEY") throw new QuoteTaken(p.quoteId);
      throw e;
    }
  }

  updatePayment(quoteId: string, patch: Partial<PaymentRecord>): void {
    const cols = paymentColumns(patch);
    if (cols.length === 0) return;
    this.sql(`UPDATE payments SET ${cols.map(([c]) => `${c} = ?`).join(", ")} WHERE quote_id = ?`).run(
      ...cols.map(([, v]) => v),
      quoteId,
    );
  }

  payment(quoteId: string): PaymentRecord | undefined {
    const row = this.sql(`SELECT * FROM payments WHERE quote_id = ?`).get(quoteId);
    return row ? toPayment(row as Record<string, unknown>) : undefined;
  }

  /** Payments signed at or after `since` (ms), oldest first: for audits. */
  paymentsSince(since: number): PaymentRecord[] {
    return (
      this.sql(`SELECT * FROM payments WHERE signed_at >= ? ORDER BY signed_at`).all(since) as Record<string, unknown>[]
    ).map(toPayment);
  }

  paymentsOf(intentId: string): PaymentRecord[] {
    return (
      this.sql(`SELECT * FROM payments WHERE intent_id = ? ORDER BY signed_at`).all(intentId) as Record<
        string,
        unknown
      >[]
    ).map(toPayment);
  }

  /** Payments found unable to land that are still watched, oldest first (through the partial index). */
  watchedPayments(limit: number): PaymentRecord[] {
    return (
      this.sql(`SELECT * FROM payments WHERE watch = 1 ORDER BY signed_at LIMIT ?`).all(limit) as Record<
        string,
        unknown
      >[]
    ).map(toPayment);
  }
}
