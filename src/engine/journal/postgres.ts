/**
 * The journal on PostgreSQL, for a fleet of servers on many machines sharing one journal and
 * one budget: the store itself (its pool, opening and migrating, health) and the money it
 * keeps — the budget each intent holds and every signed proof — over the intents
 * (pg-intents.ts) and the records beside them (pg-records.ts). Same tables, same answers as
 * the SQLite journal (sqlite.ts), method by method; where SQLite relies on its single writer,
 * this store says how it gets the same guarantee across machines:
 *
 * - A reservation takes a database-wide advisory lock first (pg_advisory_xact_lock), then
 *   reads usage and writes the reservation in the same READ COMMITTED transaction: all
 *   reservations on the database happen one after another, so no two servers can both fit
 *   under a cap that admits one of them.
 * - Every other state change is a compare-and-set (a single UPDATE … WHERE, rowCount 1;
 *   pg-intents.ts).
 * - A signed proof is recorded under a shared advisory lock that a freeze takes exclusively
 *   (pg-records.ts): once freeze() has returned, no server records (and so sends) a new proof.
 * - Migrations run once, in one transaction under another advisory lock, however many
 *   servers start at once; a database newer than this build is refused (SchemaTooNew).
 *
 * TLS comes from the URL's `sslmode`, parsed by pg (pg-connection-string 2): no sslmode, or
 * `disable`, is plaintext; `prefer`, `require`, `verify-ca` and `verify-full` all mean TLS
 * with the certificate AND host name verified (against Node's CAs, or `sslrootcert=<file>`)
 * — stricter than libpq, which for `require` verifies nothing, and pg warns once on stderr
 * for any of them but `verify-full`; `no-verify` is TLS without verification. A URL with
 * `uselibpqcompat=true` gets libpq's meanings instead.
 *
 * The password never leaves pg: `location` and every message of ours carry the URL without
 * it (redactUrl), and a failure to open is rethrown with the password scrubbed out.
 * Proofs are secrets: each one read from here is handed to `onSecret` before the row is returned.
 */
import pg from "pg";
import type { Usage } from "../budget/policy.js";
import type { IntentPatch, PaymentRecord } from "../model/types.js";
import { PgIntents, UNFINISHED } from "./pg-intents.js";
import { migrate } from "./pg-schema.js";
import {
  changed,
  JournalUnavailable,
  LOCK,
  paymentInsert,
  paymentStatement,
  redactUrl,
  reservation,
  rows,
  transaction,
  TYPES,
  updateStatement,
  type Db,
} from "./pg-sql.js";
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
import { toPayment } from "./rows.js";
import { PG_BY_ACTION, PG_BY_DAY, PG_BY_NETWORK, toActionSpend, toDaySpend, toNetworkSpend } from "./spending-sql.js";

export interface PostgresOptions extends JournalOptions {
  /** Any one statement, a wait for a lock included, is cancelled after this long (default 15 s). */
  statementTimeoutMs?: number;
  /** Connections per server (default 10). */
  poolSize?: number;
  /** What the server shows in pg_stat_activity (default "paid-actions-mcp"). */
  applicationName?: string;
}

export { JournalUnavailable, redactUrl } from "./pg-sql.js";

/**
 * Opens (and migrates, once, whoever else starts at the same moment) the journal at a
 * postgres:// URL. Throws SchemaTooNew for a journal newer than this build, JournalUnavailable
 * when no server answers as asked; the pool is closed either way.
 */
export async function openPostgresJournal(url: string, o: PostgresOptions = {}): Promise<PostgresJournal> {
  const location = redactUrl(url);
  const statementTimeout = o.statementTimeoutMs ?? 15_000;
  let pool: pg.Pool | undefined;
  try {
    // Options in the URL itself (e.g. ?application_name=…) take precedence over these: pg merges them last.
    pool = new pg.Pool({
      connectionString: url,
      max: o.poolSize ?? 10,
      connectionTimeoutMillis: 10_000,
      application_name: o.applicationName ?? "paid-actions-mcp",
      statement_timeout: statementTimeout,
      // Our transactions never wait on anything but their own statements: one idle for long
      // is a stalled process, and it must not keep holding the budget lock.
      idle_in_transaction_session_timeout: statementTimeout,
      types: TYPES,
    });
    // An idle connection that breaks (a server restart) is dropped by the pool; the next query
    // opens a new one. Without a listener the 'error' event would end the process.
    pool.on("error", () => {});
    const version = await migrate(pool, location);
    return new PostgresJournal(pool, location, version, o);
  } catch (e) {
    await pool?.end().catch(() => {});
    if (e instanceof SchemaTooNew) throw e;
    throw unavailable(e, url, location);
  }
}

/** A failure to open, as a message that names the redacted location and cannot carry the password. */
function unavailable(e: unknown, url: string, location: string): JournalUnavailable {
  const inner = e instanceof AggregateError && e.errors.length > 0 ? e.errors : [e];
  let message = inner.map((x) => (x instanceof Error ? x.message : String(x))).join("; ") || "unknown error";
  const secrets: string[] = [];
  try {
    const u = new URL(url);
    secrets.push(u.password, u.searchParams.get("password") ?? "", decodeURIComponent(u.password));
  } catch {
    /* not a URL, or a malformed escape: scrub what was found so far */
  }
  for (const p of secrets) if (p) message = message.split(p).join("***");
  const code = (inner[0] as { code?: unknown } | undefined)?.code;
  return new JournalUnavailable(
    `cannot open the PostgreSQL journal at ${location}: ${message}`,
    typeof code === "string" ? code : undefined,
  );
}

export class PostgresJournal extends PgIntents implements JournalStore {
  readonly kind = "postgres" as const;
  private closed = false;

  constructor(
    pool: pg.Pool,
    readonly location: string,
    readonly schemaVersion: number,
    o: JournalOptions = {},
  ) {
    super(pool, o);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  /** Counts for `doctor`; "ok" when the server answers, writably, at the schema this build knows. */
  async health(): Promise<JournalHealth> {
    const [s] = await rows(
      this.pool,
      `SELECT (SELECT version FROM pam_schema) AS version, pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS ro`,
    );
    const [c] = await rows(
      this.pool,
      `SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE state IN (${UNFINISHED})) AS unfinished,
         COUNT(*) FILTER (WHERE state = 'attention' OR attention IS NOT NULL) AS attention,
         COUNT(*) FILTER (WHERE next_poll_at IS NOT NULL) AS following FROM intents`,
    );
    const version = (s?.version as number | null) ?? 0;
    const integrity =
      version !== this.schemaVersion
        ? `the database is at schema version ${version}, this build knows ${this.schemaVersion}`
        : s?.standby || s?.ro === "on"
          ? "read-only (a standby, or default_transaction_read_only): nothing can be recorded"
          : "ok";
    const n = (k: string) => Number(c?.[k] ?? 0);
    return {
      store: "postgres",
      location: this.location,
      integrity,
      schemaVersion: version,
      total: n("total"),
      unfinished: n("unfinished"),
      attention: n("attention"),
      following: n("following"),
    };
  }

  // ---- Budget -------------------------------------------------------------------

  /** Held (reserved or spent) in the rolling 24 h window, minus refunds seen on chain, and (when asked) in total: exact sums. */
  usage(now: number, withTotal = true): Promise<Usage> {
    return this.usageOn(this.pool, now, withTotal);
  }

  private async usageOn(db: Db, now: number, withTotal: boolean): Promise<Usage> {
    const sum = `SELECT COALESCE(SUM(budget_amount - refund_credit), 0)::text AS n FROM intents WHERE budget_state IN ('reserved', 'spent')`;
    const [day] = await rows(db, `${sum} AND budget_at > $1`, [now - DAY_MS]);
    if (!withTotal) return { day: BigInt(day!.n as string), total: 0n };
    const [total] = await rows(db, sum);
    return { day: BigInt(day!.n as string), total: BigInt(total!.n as string) };
  }

  async reserved(now?: number): Promise<bigint> {
    const [row] = await rows(
      this.pool,
      `SELECT COALESCE(SUM(budget_amount), 0)::text AS n FROM intents WHERE budget_state = 'reserved' AND ($1::bigint IS NULL OR budget_at > $1)`,
      [now === undefined ? null : now - DAY_MS],
    );
    return BigInt(row!.n as string);
  }

  async refundedTotal(): Promise<bigint> {
    const [row] = await rows(this.pool, `SELECT COALESCE(SUM(refund_credit), 0)::text AS n FROM intents`);
    return BigInt(row!.n as string);
  }

  async spendingByAction(now: number): Promise<ActionSpend[]> {
    return (await rows(this.pool, PG_BY_ACTION, [now - DAY_MS])).map(toActionSpend);
  }

  async spendingByNetwork(now: number): Promise<NetworkSpend[]> {
    return (await rows(this.pool, PG_BY_NETWORK, [now - DAY_MS])).map(toNetworkSpend);
  }

  async spendingByDay(since: number): Promise<DaySpend[]> {
    return (await rows(this.pool, PG_BY_DAY, [since])).map(toDaySpend);
  }

  /**
   * Reserves under the database-wide budget lock: the usage read and the reservation cannot
   * interleave with any other server's. Throws LeaseLost (and writes nothing) when the
   * intent is no longer as `expect` says.
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
  ): Promise<T> {
    return transaction(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock($1)", [LOCK.budget]);
      const decision = decide(await this.usageOn(c, now, withTotal));
      if (decision.ok && signed) await this.insertSigned(c, signed);
      if (
        decision.ok &&
        !(await changed(c, ...updateStatement(intentId, reservation(patch, amount, now), now, expect)))
      ) {
        throw new LeaseLost(intentId);
      }
      return decision;
    });
  }

  // ---- Payments (every signed proof, by its memo) -----------------------------------

  async recordSigned(p: PaymentRecord, then: IntentWrite): Promise<boolean> {
    try {
      return await transaction(this.pool, async (c) => {
        await this.insertSigned(c, p);
        if (!(await changed(c, ...updateStatement(then.intentId, then.patch, then.now, then.expect))))
          throw new LeaseLost(then.intentId);
        return true;
      });
    } catch (e) {
      if (e instanceof LeaseLost) return false;
      throw e;
    }
  }

  /** Inside a transaction: a signed proof's row, unless payments are frozen. */
  private async insertSigned(c: pg.PoolClient, p: PaymentRecord): Promise<void> {
    const freeze = await this.frozenUnderLock(c);
    if (freeze) throw new PaymentsFrozen(freeze);
    // The quote id is the primary key: a second proof for the same quote fails here.
    try {
      await c.query(...paymentInsert(p));
    } catch (e) {
      const err = e as { code?: string; constraint?: string };
      if (err.code === "23505" && err.constraint === "payments_pkey") throw new QuoteTaken(p.quoteId);
      throw e;
    }
  }

  async updatePayment(quoteId: string, patch: Partial<PaymentRecord>): Promise<void> {
    const statement = paymentStatement(quoteId, patch);
    if (statement) await this.pool.query(...statement);
  }

  async payment(quoteId: string): Promise<PaymentRecord | undefined> {
    const [row] = await rows(this.pool, `SELECT * FROM payments WHERE quote_id = $1`, [quoteId]);
    return row ? toPayment(row) : undefined;
  }

  async paymentsSince(since: number): Promise<PaymentRecord[]> {
    return (await rows(this.pool, `SELECT * FROM payments WHERE signed_at >= $1 ORDER BY signed_at`, [since])).map(
      toPayment,
    );
  }

  async paymentsOf(intentId: string): Promise<PaymentRecord[]> {
    return (await rows(this.pool, `SELECT * FROM payments WHERE intent_id = $1 ORDER BY signed_at`, [intentId])).map(
      toPayment,
    );
  }

  /** Payments found unable to land that are still watched, oldest first (through the partial index). */
  async watchedPayments(limit: number): Promise<PaymentRecord[]> {
    return (await rows(this.pool, `SELECT * FROM payments WHERE watch = 1 ORDER BY signed_at LIMIT $1`, [limit])).map(
      toPayment,
    );
  }
}
