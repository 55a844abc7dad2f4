/**
 * The sandbox's SQLite file: schema and versioned migrations. WAL with synchronous=NORMAL:
 * a commit is written but not fsynced, and nothing is acknowledged before the group fsync of
 * the WAL that covers it (group-sync.ts), so an acknowledged row survives a kill -9 or a
 * power cut, and one fsync serves every request that committed meanwhile.
 */
import Database from "better-sqlite3";
import { decodeWireTransaction, staticAccountsOf } from "./ledger/tx-wire.js";

/** Each step runs once, in its own transaction: SQL, or code for what SQL cannot do. */
const MIGRATIONS: Array<string | ((db: Database.Database) => void)> = [
  // 1: everything the v1 service keeps.
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  CREATE TABLE quotes (
    quote_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,            -- canonical JSON
    amount TEXT NOT NULL,           -- atomic units
    budget TEXT NOT NULL,           -- JSON {amount, currency}
    requirements TEXT NOT NULL,     -- JSON x402 PaymentRequirements, the binding copy
    context TEXT,                   -- JSON, what the action needs at execution (e.g. server plan)
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    execution_id TEXT
  );

  CREATE TABLE payments (
    payment_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    quote_id TEXT NOT NULL,
    message_hash TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('settling', 'settled')),
    transaction_sig TEXT,
    payer TEXT,
    amount TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX payments_one_per_quote ON payments(quote_id);

  CREATE TABLE executions (
    execution_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    quote_id TEXT NOT NULL UNIQUE,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    provider TEXT NOT NULL,
    region TEXT NOT NULL,
    resource_id TEXT,
    output TEXT,
    error TEXT,
    refund TEXT,
    outcome TEXT NOT NULL DEFAULT 'succeed',
    delay_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX executions_due ON executions(next_at) WHERE next_at IS NOT NULL;
  CREATE INDEX executions_tenant ON executions(tenant, created_at);

  CREATE TABLE resources (
    resource_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    record TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );

  CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );

  CREATE TABLE webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    next_at INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at) WHERE next_at IS NOT NULL;

  CREATE TABLE idempotency (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'done')),
    status INTEGER,
    headers TEXT,
    body TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, key, method, path)
  );
  CREATE INDEX idempotency_age ON idempotency(created_at);

  CREATE TABLE ledger_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    signature TEXT,
    message_hash TEXT,
    slot INTEGER NOT NULL,
    block_time INTEGER NOT NULL,
    detail TEXT
  );
  CREATE INDEX ledger_log_signature ON ledger_log(signature) WHERE signature IS NOT NULL;
  CREATE INDEX ledger_log_message ON ledger_log(message_hash) WHERE message_hash IS NOT NULL;
  `,
  // 2: which addresses each landed transaction names (getSignaturesForAddress), and the
  // transactions already logged.
  (db) => {
    db.exec(`
      CREATE TABLE ledger_addresses (
        address TEXT NOT NULL,
        seq INTEGER NOT NULL,       -- ledger_log.seq of a kind 'tx' row
        PRIMARY KEY (address, seq)
      ) WITHOUT ROWID;
    `);
    backfillAddressIndex(db);
  },
  // 3: a payment's blockhash, to tell a transaction that may still land from one that never will.
  `ALTER TABLE payments ADD COLUMN blockhash TEXT;`,
  // 4: the x402 facilitator (facilitator/): what it settled, and the Bazaar catalog of the
  // resources whose payments declared the discovery extension.
  `
  CREATE TABLE facilitator_settlements (
    message_hash TEXT PRIMARY KEY,  -- sha256 of the transaction's message: the payment's identity
    status TEXT NOT NULL CHECK (status IN ('settling', 'settled')),
    network TEXT NOT NULL,
    pay_to TEXT NOT NULL,
    asset TEXT NOT NULL,
    amount TEXT NOT NULL,           -- atomic units
    blockhash TEXT NOT NULL,        -- to tell a transaction that may still land from one that never will
    resource_url TEXT,
    transaction_sig TEXT,
    payer TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );

  CREATE TABLE discovery_resources (
    resource TEXT NOT NULL,         -- the resource URL, without query or fragment
    method TEXT NOT NULL,           -- the HTTP method, or 'tool:<name>' for an MCP tool
    type TEXT NOT NULL,             -- 'http' or 'mcp'
    x402_version INTEGER NOT NULL,
    accepts TEXT NOT NULL,          -- JSON PaymentRequirements[] of the latest settlement
    scheme TEXT NOT NULL,
    network TEXT NOT NULL,
    pay_to TEXT NOT NULL,
    description TEXT,
    mime_type TEXT,
    metadata TEXT NOT NULL,         -- JSON {serviceName?, tags?, iconUrl?}
    extensions TEXT NOT NULL,       -- JSON {bazaar: {info, schema, ...}}
    settlements INTEGER NOT NULL,
    first_settled_at INTEGER NOT NULL,
    last_updated INTEGER NOT NULL,
    PRIMARY KEY (resource, method)
  );
  `,
  // 5: the EVM ledger (evm/): a quote's requirements on eip155:84532 beside its Solana ones,
  // and, for a payment settled there, its network and the signed EIP-3009 authorization (to
  // tell its fate from the token's authorizationState, and to submit it again after a crash).
  `
  ALTER TABLE quotes ADD COLUMN evm_requirements TEXT;
  ALTER TABLE payments ADD COLUMN network TEXT;
  ALTER TABLE payments ADD COLUMN evm_proof TEXT;
  ALTER TABLE facilitator_settlements ADD COLUMN evm_proof TEXT;
  `,
];

/**
 * Every database the sandbox opened, with the statements prepared on it, kept for the
 * process's life, closed or not. better-sqlite3 12's `Database` and `Statement` are
 * `node::ObjectWrap`s, and under Node 24 (seen with 24.21.0) destroying one from the
 * garbage collector aborts the process (`Assertion failed: (env) != nullptr`): a wrapper
 * that becomes garbage is a crash waiting for the next collection. `close()` finalizes the
 * SQLite handles, so what stays is a few JavaScript objects a database. Nothing here
 * may call `prepare()` or `pragma()` (a new statement each call) but `statement()`; `exec()`
 * makes no wrapper, nor does `transaction()` after its first call on a database.
 */
const statements = new Map<Database.Database, Map<string, Database.Statement>>();

/**
 * The statement for `sql` on `db`, prepared once and never let go (above); it also spares
 * compiling the SQL anew for every request.
 */
export function statement(db: Database.Database, sql: string): Database.Statement {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}

/** One transaction function per database, made once (below). */
const runners = new WeakMap<Database.Database, Database.Transaction<(fn: () => unknown) => unknown>>();

/**
 * Runs `fn` in a transaction on `db` — a savepoint when one is open already; `immediate` takes
 * the write lock first — as `db.transaction(fn)()` and `.immediate()` do, without building
 * better-sqlite3's four wrapper functions anew on every call of the hot paths.
 */
export function inTransaction<T>(db: Database.Database, fn: () => T, mode: "default" | "immediate" = "default"): T {
  let run = runners.get(db);
  if (!run) runners.set(db, (run = db.transaction((f: () => unknown) => f())));
  return (mode === "immediate" ? run.immediate(fn) : run(fn)) as T;
}

export function openDatabase(path: string, busyTimeoutMs = 5000): Database.Database {
  const db = new Database(path);
  statements.set(db, new Map());
  db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  migrate(db);
  return db;
}

/**
 * Migration 2's code: indexes the addresses of every transaction already in the log, a page
 * at a time. It is the migration's own, not the ledger's (ledger/history.ts indexes each new
 * transaction the same way): a step that ran on some databases must mean the same on the
 * next, whatever the ledger's code becomes.
 */
function backfillAddressIndex(db: Database.Database): void {
  const insert = statement(db, `INSERT OR IGNORE INTO ledger_addresses (address, seq) VALUES (?, ?)`);
  const page = statement(
    db,
    `SELECT seq, payload FROM ledger_log WHERE kind = 'tx' AND seq > ? ORDER BY seq LIMIT 500`,
  );
  let after = 0;
  for (;;) {
    const rows = page.all(after) as Array<{ seq: number; payload: string }>;
    if (rows.length === 0) return;
    for (const row of rows)
      for (const address of new Set(staticAccountsOf(decodeWireTransaction(row.payload)))) insert.run(address, row.seq);
    after = rows[rows.length - 1]!.seq;
  }
}

function migrate(db: Database.Database): void {
  const current = (statement(db, "PRAGMA user_version").get() as { user_version: number }).user_version;
  if (current > MIGRATIONS.length) {
    throw new Error(
      `sandbox database is at schema version ${current}, newer than this build knows (${MIGRATIONS.length}); upgrade paid-actions-mcp`,
    );
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      const step = MIGRATIONS[version]!;
      if (typeof step === "string") db.exec(step);
      else step(db);
      db.exec(`PRAGMA user_version = ${version + 1}`);
    })();
  }
}
