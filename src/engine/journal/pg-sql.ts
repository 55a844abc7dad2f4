/**
 * The PostgreSQL store's plumbing, apart from its methods (postgres.ts): how values come back
 * from pg, the advisory lock keys, queries and transactions on a pool, and the UPDATEs a
 * patch turns into. Column names and value encodings are rows.ts's, shared with SQLite.
 */
import pg from "pg";
import type { IntentPatch, PaymentRecord } from "../model/types.js";
import type { Expect } from "./port.js";
import { intentColumns, paymentColumns } from "./rows.js";

/**
 * Advisory lock keys (per database), fixed for every build: "pam_migr", "pam_budg",
 * "pam_cata", "pam_frez" in ASCII, as decimal strings for a bigint parameter.
 */
export const LOCK = {
  migrate: 0x70616d5f6d696772n.toString(),
  budget: 0x70616d5f62756467n.toString(),
  catalog: 0x70616d5f63617461n.toString(),
  freeze: 0x70616d5f6672657an.toString(),
};

/** SQLSTATEs after which the whole transaction can run again: serialization failure, deadlock. */
const RETRYABLE = new Set(["40001", "40P01"]);
const TRIES = 5;

/**
 * int8 (times, counts) as numbers, in this one place: every time is ms since the epoch, far
 * below 2^53. NUMERIC (amounts and their sums) stays a decimal string, read as a bigint.
 * Given per pool, so pg's global parsers (other users of pg in the process) are left alone.
 */
export const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 && format !== "binary"
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * A value as PostgreSQL text can hold it: TEXT refuses NUL (U+0000), which SQLite stores, and
 * a service's words can carry one into a message the engine keeps. Stored as U+FFFD instead
 * of failing the commit (and with it, the purchase's record).
 */
export function pgValue(v: unknown): unknown {
  return typeof v === "string" && v.includes("\u0000") ? v.replaceAll("\u0000", "\uFFFD") : v;
}

export type Db = pg.Pool | pg.PoolClient;
export type Row = Record<string, unknown>;

export async function rows(db: Db, text: string, params: unknown[] = []): Promise<Row[]> {
  return (await db.query<Row>(text, params)).rows;
}

/** Whether a statement changed exactly one row: a compare-and-set that won. */
export async function changed(db: Db, text: string, params: unknown[]): Promise<boolean> {
  return (await db.query(text, params)).rowCount === 1;
}

/**
 * Runs `fn` in one READ COMMITTED transaction — named, whatever the database's default:
 * after an advisory lock each statement must see what the lock's previous holder committed,
 * which a REPEATABLE READ snapshot taken at the lock would not — and runs it again after a
 * serialization failure or a deadlock (both roll the whole transaction back).
 */
export async function transaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const c = await pool.connect();
    let broken: Error | undefined;
    try {
      await c.query("BEGIN ISOLATION LEVEL READ COMMITTED");
      const out = await fn(c);
      await c.query("COMMIT");
      return out;
    } catch (e) {
      // A connection that cannot even roll back is dropped rather than handed out again.
      await c.query("ROLLBACK").catch((r: Error) => (broken = r));
      if (attempt < TRIES && RETRYABLE.has((e as { code?: string }).code ?? "")) continue;
      throw e;
    } finally {
      c.release(broken);
    }
  }
}

/** `UPDATE intents …` for a patch, guarded by `expect` (compare-and-set). */
export function updateStatement(
  intentId: string,
  patch: IntentPatch,
  now: number,
  expect: Expect,
): [string, unknown[]] {
  const params: unknown[] = [];
  const p = (v: unknown) => `$${params.push(pgValue(v))}`;
  const sets = [...intentColumns(patch).map(([c, v]) => `${c} = ${p(v)}`), `updated_at = ${p(now)}`].join(", ");
  const where = [
    `intent_id = ${p(intentId)}`,
    ...(expect.state ? [`state = ${p(expect.state)}`] : []),
    ...(expect.owner ? [`lease_owner = ${p(expect.owner)}`] : []),
  ];
  return [`UPDATE intents SET ${sets} WHERE ${where.join(" AND ")}`, params];
}

/** `UPDATE payments …` for a patch, or undefined when it writes nothing. */
export function paymentStatement(quoteId: string, patch: Partial<PaymentRecord>): [string, unknown[]] | undefined {
  const cols = paymentColumns(patch);
  if (cols.length === 0) return undefined;
  return [
    `UPDATE payments SET ${cols.map(([c], i) => `${c} = $${i + 1}`).join(", ")} WHERE quote_id = $${cols.length + 1}`,
    [...cols.map(([, v]) => pgValue(v)), quoteId],
  ];
}

/** `INSERT INTO payments …` for a whole record. */
export function paymentInsert(p: PaymentRecord): [string, unknown[]] {
  const cols = paymentColumns(p);
  return [
    `INSERT INTO payments (${cols.map(([c]) => c).join(", ")}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(", ")})`,
    cols.map(([, v]) => pgValue(v)),
  ];
}

/** The reservation a budget decision writes, with the caller's patch. */
export function reservation(patch: IntentPatch, amount: bigint, now: number): IntentPatch {
  return { ...patch, budgetState: "reserved", budgetAmount: amount, budgetAt: now };
}

/** The journal could not be opened (no server, refused, bad credentials); the message never carries the password. */
export class JournalUnavailable extends Error {
  constructor(
    message: string,
    /** The SQLSTATE or the system error code (ECONNREFUSED …), when there is one. */
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = "JournalUnavailable";
  }
}

/** The URL without its password (in the authority or as a `password=` parameter), for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = "";
    u.searchParams.delete("password");
    return u.toString();
  } catch {
    // Not a URL (a key=value string, say): remove whatever looks like a password.
    return url.replace(/(\/\/[^:/@\s]*):[^@\s]*@/, "$1@").replace(/(password\s*=\s*)('[^']*'|[^&\s]*)/gi, "$1***");
  }
}
