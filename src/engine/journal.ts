/**
 * The journal: one SQLite row per intent, with its state machine and every identifier as
 * soon as it exists (quote, amount, payee, proof, payment transaction, execution id,
 * status, output, refund), and the budget it holds. WAL + synchronous=FULL: a committed
 * step survives a kill -9. Budget reservations are taken with BEGIN IMMEDIATE, so several
 * processes sharing one journal can never jointly exceed a cap.
 *
 * The proof is a secret: it lives in its own column and nowhere else.
 */
import Database from "better-sqlite3";
import { mkdirSync, chmodSync, existsSync } from "node:fs";
import { dirname } from "node:path";
import type { Usage } from "./policy.js";

export type IntentState =
  | "new" // recorded, nothing sent yet
  | "quoted" // quote recorded
  | "awaiting_approval" // a human must approve before anything is signed
  | "reserved" // budget reserved, challenge checked; nothing signed yet
  | "signed" // proof stored; it may be sent (and may settle) from now on
  | "paid" // settlement confirmed by the service
  | "executed" // execution id recorded; the reconciler follows it
  | "refused" // stopped before signing: nothing spent
  | "failed" // definite failure: nothing spent, reservation released
  | "attention"; // outcome unknown or inconsistent: a human should look; budget held

export type BudgetState = "none" | "reserved" | "spent" | "released" | "refunded";

export interface IntentRow {
  intent_id: string;
  /** The caller's key for this intent (or a generated one). */
  intent_key: string;
  /** Restarts after a definite failure before anything was signed. */
  attempt: number;
  /** The Idempotency-Key sent on every request of the current attempt. */
  idem_key: string;
  service: string;
  action: string;
  input: string;
  fingerprint: string;
  agent_budget: string | null;
  state: IntentState;
  quote_id: string | null;
  quote: string | null;
  amount: string | null;
  payee: string | null;
  quote_expires_at: number | null;
  quoted_at: number | null;
  requirements: string | null;
  proof: string | null;
  payment: string | null;
  payment_tx: string | null;
  execution_id: string | null;
  execution: string | null;
  exec_status: string | null;
  output: string | null;
  refund: string | null;
  budget_state: BudgetState;
  budget_amount: string | null;
  budget_at: number | null;
  approval_id: string | null;
  error: string | null;
  attention: string | null;
  call_id: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  next_poll_at: number | null;
  poll_interval_ms: number | null;
  created_at: number;
  updated_at: number;
}

export interface ApprovalRow {
  approval_id: string;
  intent_id: string;
  quote_id: string;
  action: string;
  amount: string;
  payee: string | null;
  expires_at: number;
  status: "pending" | "approved" | "used" | "declined";
  created_at: number;
  decided_at: number | null;
}

const MIGRATIONS: string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  CREATE TABLE intents (
    intent_id TEXT PRIMARY KEY,
    intent_key TEXT NOT NULL UNIQUE,
    attempt INTEGER NOT NULL DEFAULT 0,
    idem_key TEXT NOT NULL UNIQUE,
    service TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    agent_budget TEXT,
    state TEXT NOT NULL,
    quote_id TEXT,
    quote TEXT,
    amount TEXT,
    payee TEXT,
    quote_expires_at INTEGER,
    quoted_at INTEGER,
    requirements TEXT,
    proof TEXT,
    payment TEXT,
    payment_tx TEXT,
    execution_id TEXT,
    execution TEXT,
    exec_status TEXT,
    output TEXT,
    refund TEXT,
    budget_state TEXT NOT NULL DEFAULT 'none',
    budget_amount TEXT,
    budget_at INTEGER,
    approval_id TEXT,
    error TEXT,
    attention TEXT,
    call_id TEXT,
    lease_owner TEXT,
    lease_until INTEGER,
    next_poll_at INTEGER,
    poll_interval_ms INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX intents_budget ON intents(budget_state, budget_at) WHERE budget_state IN ('reserved', 'spent');
  CREATE INDEX intents_unfinished ON intents(state) WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'paid');
  CREATE INDEX intents_polling ON intents(next_poll_at) WHERE next_poll_at IS NOT NULL;
  CREATE INDEX intents_created ON intents(created_at DESC, intent_id DESC);
  CREATE INDEX intents_execution ON intents(execution_id) WHERE execution_id IS NOT NULL;
  CREATE INDEX intents_exec_status ON intents(exec_status, created_at DESC);
  CREATE INDEX intents_action ON intents(action, created_at DESC);

  CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    intent_id TEXT NOT NULL,
    quote_id TEXT NOT NULL,
    action TEXT NOT NULL,
    amount TEXT NOT NULL,
    payee TEXT,
    expires_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    decided_at INTEGER
  );

  CREATE TABLE catalog (
    service TEXT NOT NULL,
    name TEXT NOT NULL,
    detail TEXT NOT NULL,
    fetched_at INTEGER NOT NULL,
    PRIMARY KEY (service, name)
  );
  `,
];

const DAY_MS = 24 * 3_600_000;

/** Lease owners are `<pid>-<random>`: a lease of a process that no longer runs is stale. */
export function leaseOwnerAlive(owner: string): boolean {
  const pid = Number(owner.split("-")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

const COLUMN = /^[a-z_]+$/;

export class Journal {
  readonly db: Database.Database;
  /** Prepared UPDATE statements by the set of columns they write. */
  private readonly updates = new Map<string, Database.Statement>();
  private releaseStatement: Database.Statement | undefined;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.db = new Database(path);
    // The busy timeout first: another process may hold the lock while this one switches to WAL.
    this.db.pragma("busy_timeout = 10000");
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = FULL");
    this.migrate();
    for (const suffix of ["", "-wal", "-shm"]) {
      if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
    }
  }

  /**
   * Brings the schema up to date. The version is read under the write lock: two processes
   * opening a new journal at once must not both run the same migration.
   */
  private migrate(): void {
    const version = () => this.db.pragma("user_version", { simple: true }) as number;
    for (;;) {
      const migrated = this.db
        .transaction((): boolean => {
          const current = version();
          if (current > MIGRATIONS.length) {
            throw new Error(`the journal is at schema version ${current}, newer than this build knows (${MIGRATIONS.length}); upgrade paid-actions-mcp`);
          }
          if (current === MIGRATIONS.length) return false;
          this.db.exec(MIGRATIONS[current]!);
          this.db.pragma(`user_version = ${current + 1}`);
          return true;
        })
        .immediate();
      if (!migrated) return;
    }
  }

  close(): void {
    this.db.close();
  }

  // ---- Intents ------------------------------------------------------------------

  insertIntent(row: Pick<IntentRow, "intent_id" | "intent_key" | "idem_key" | "service" | "action" | "input" | "fingerprint" | "agent_budget" | "call_id" | "created_at"> & { lease_owner: string; lease_until: number }): void {
    this.db
      .prepare(
        `INSERT INTO intents (intent_id, intent_key, idem_key, service, action, input, fingerprint, agent_budget, state, call_id,
           lease_owner, lease_until, created_at, updated_at)
         VALUES (@intent_id, @intent_key, @idem_key, @service, @action, @input, @fingerprint, @agent_budget, 'new', @call_id,
           @lease_owner, @lease_until, @created_at, @created_at)`,
      )
      .run(row);
  }

  intent(intentId: string): IntentRow | undefined {
    return this.db.prepare(`SELECT * FROM intents WHERE intent_id = ?`).get(intentId) as IntentRow | undefined;
  }

  intentByKey(intentKey: string): IntentRow | undefined {
    return this.db.prepare(`SELECT * FROM intents WHERE intent_key = ?`).get(intentKey) as IntentRow | undefined;
  }

  intentByExecution(executionId: string): IntentRow | undefined {
    return this.db.prepare(`SELECT * FROM intents WHERE execution_id = ?`).get(executionId) as IntentRow | undefined;
  }

  /** Commits a set of columns of one intent. Every step goes through here before its next network call. */
  update(intentId: string, patch: Partial<Omit<IntentRow, "intent_id">>, now: number): void {
    const keys = Object.keys(patch);
    if (keys.length === 0) return;
    const shape = keys.join(",");
    let statement = this.updates.get(shape);
    if (!statement) {
      if (!keys.every((k) => COLUMN.test(k))) throw new Error(`not a journal column: ${shape}`);
      statement = this.db.prepare(`UPDATE intents SET ${keys.map((k) => `${k} = @${k}`).join(", ")}, updated_at = @__now WHERE intent_id = @__id`);
      this.updates.set(shape, statement);
    }
    statement.run({ ...patch, __now: now, __id: intentId });
  }

  /**
   * Claims an intent for this process for `ttlMs` unless another live process holds it.
   * Returns false when someone else holds the lease.
   */
  claim(intentId: string, owner: string, now: number, ttlMs: number): boolean {
    const held = this.db.prepare(`SELECT lease_owner, lease_until FROM intents WHERE intent_id = ?`).get(intentId) as
      | { lease_owner: string | null; lease_until: number | null }
      | undefined;
    if (held?.lease_owner && held.lease_owner !== owner && !leaseOwnerAlive(held.lease_owner)) {
      // The process that held it is gone (a crash): its lease means nothing any more.
      this.db.prepare(`UPDATE intents SET lease_owner = NULL, lease_until = NULL WHERE intent_id = ? AND lease_owner = ?`).run(intentId, held.lease_owner);
    }
    const result = this.db
      .prepare(
        `UPDATE intents SET lease_owner = @owner, lease_until = @until
         WHERE intent_id = @id AND (lease_owner IS NULL OR lease_owner = @owner OR lease_until < @now)`,
      )
      .run({ id: intentId, owner, now, until: now + ttlMs });
    return result.changes === 1;
  }

  release(intentId: string, owner: string): void {
    this.releaseStatement ??= this.db.prepare(`UPDATE intents SET lease_owner = NULL, lease_until = NULL WHERE intent_id = ? AND lease_owner = ?`);
    this.releaseStatement.run(intentId, owner);
  }

  unfinished(service: string): IntentRow[] {
    return this.db
      .prepare(`SELECT * FROM intents WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'paid') AND service = ? ORDER BY created_at`)
      .all(service) as IntentRow[];
  }

  /** Executions the reconciler should poll now: only unfinished ones, via the partial index. */
  duePolls(now: number, limit: number): IntentRow[] {
    return this.db
      .prepare(`SELECT * FROM intents WHERE next_poll_at IS NOT NULL AND next_poll_at <= ? ORDER BY next_poll_at LIMIT ?`)
      .all(now, limit) as IntentRow[];
  }

  nextPollAt(): number | undefined {
    const row = this.db.prepare(`SELECT MIN(next_poll_at) AS at FROM intents WHERE next_poll_at IS NOT NULL`).get() as { at: number | null };
    return row.at ?? undefined;
  }


  // ---- Budget -------------------------------------------------------------------

  /**
   * Spent and reserved in the rolling 24 h window (an index range scan: its cost follows
   * the day's payments, not the journal's size), and — only when asked, since it reads every
   * payment ever made — in total.
   */
  usage(now: number, withTotal = true): Usage {
    const day = this.db
      .prepare(
        `SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents INDEXED BY intents_budget
         WHERE budget_state IN ('reserved', 'spent') AND budget_at > ?`,
      )
      .safeIntegers(true)
      .get(now - DAY_MS) as { n: bigint };
    if (!withTotal) return { day: day.n, total: 0n };
    const total = this.db
      .prepare(`SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents WHERE budget_state IN ('reserved', 'spent')`)
      .safeIntegers(true)
      .get() as { n: bigint };
    return { day: day.n, total: total.n };
  }

  reservedNow(): bigint {
    const row = this.db
      .prepare(`SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents WHERE budget_state = 'reserved'`)
      .safeIntegers(true)
      .get() as { n: bigint };
    return row.n;
  }

  /**
   * Reserves `amount` for an intent if `decide(usage)` allows it, in one BEGIN IMMEDIATE
   * transaction: the usage read and the reservation write cannot interleave with another
   * process's.
   */
  reserve<T extends { ok: boolean }>(intentId: string, amount: bigint, now: number, decide: (usage: Usage) => T, patch: Partial<IntentRow> = {}, withTotal = true): T {
    return this.db
      .transaction(() => {
        const decision = decide(this.usage(now, withTotal));
        if (decision.ok) {
          this.update(intentId, { ...patch, budget_state: "reserved", budget_amount: amount.toString(), budget_at: now }, now);
        }
        return decision;
      })
      .immediate();
  }

  // ---- Approvals ------------------------------------------------------------------

  insertApproval(row: ApprovalRow): void {
    this.db
      .prepare(
        `INSERT INTO approvals (approval_id, intent_id, quote_id, action, amount, payee, expires_at, status, created_at, decided_at)
         VALUES (@approval_id, @intent_id, @quote_id, @action, @amount, @payee, @expires_at, @status, @created_at, @decided_at)`,
      )
      .run(row);
  }

  approval(approvalId: string): ApprovalRow | undefined {
    return this.db.prepare(`SELECT * FROM approvals WHERE approval_id = ?`).get(approvalId) as ApprovalRow | undefined;
  }

  pendingApprovals(now: number): ApprovalRow[] {
    return this.db.prepare(`SELECT * FROM approvals WHERE status = 'pending' AND expires_at > ? ORDER BY created_at`).all(now) as ApprovalRow[];
  }

  /** Moves an approval from one status to another; false if it was not in `from`. */
  decideApproval(approvalId: string, from: ApprovalRow["status"], to: ApprovalRow["status"], now: number): boolean {
    return (
      this.db
        .prepare(`UPDATE approvals SET status = ?, decided_at = ? WHERE approval_id = ? AND status = ?`)
        .run(to, now, approvalId, from).changes === 1
    );
  }

  // ---- Catalog cache --------------------------------------------------------------

  saveCatalog(service: string, details: Array<{ name: string; detail: unknown }>, now: number): void {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM catalog WHERE service = ?`).run(service);
      const insert = this.db.prepare(`INSERT INTO catalog (service, name, detail, fetched_at) VALUES (?, ?, ?, ?)`);
      for (const d of details) insert.run(service, d.name, JSON.stringify(d.detail), now);
    })();
  }

  catalog(service: string): Array<{ name: string; detail: unknown; fetchedAt: number }> {
    const rows = this.db.prepare(`SELECT name, detail, fetched_at FROM catalog WHERE service = ? ORDER BY name`).all(service) as Array<{
      name: string;
      detail: string;
      fetched_at: number;
    }>;
    return rows.map((r) => ({ name: r.name, detail: JSON.parse(r.detail) as unknown, fetchedAt: r.fetched_at }));
  }
}
