/**
 * The journal's schema on PostgreSQL: SQLite's migrations (schema.ts), version for version,
 * in PostgreSQL's types, so a journal is at the same schema version in either store.
 *
 * - Amounts are NUMERIC(39, 0): exact integers, summed exactly by the server, read back as
 *   decimal strings (what rows.ts expects). 39 digits hold any u64 sum many times over.
 * - Times (ms since the epoch) and durations are BIGINT; pg hands int8 back as a string and
 *   postgres.ts turns it into a number in one place (every value is below 2^53).
 * - JSON is TEXT, as in SQLite: rows.ts parses it, and what was written is read back as is.
 * - Text compares and sorts bytewise (COLLATE "C"), as SQLite does, whatever the database's
 *   locale: the executions cursor (created_at, intent_id) pages the same way in both stores.
 *
 * All of a database's missing migrations run in one transaction, under an advisory lock:
 * servers starting at once wait for the first, then find the schema current.
 *
 * Migration 2's fix-ups of version-1 SQLite data are left out: no PostgreSQL journal was ever
 * at version 1 with data, since this store starts at this build.
 */

import type pg from "pg";
import { SchemaTooNew } from "./port.js";
import { LOCK, rows, transaction } from "./pg-sql.js";

const T = `TEXT COLLATE "C"`;
const MONEY = "NUMERIC(39, 0)";

/** The schema version, one row, read and written under the migration lock. */
export const VERSION_TABLE = `CREATE TABLE pam_schema (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row), version INTEGER NOT NULL)`;

export const PG_MIGRATIONS: string[] = [
  // 1: intents, approvals, the catalog cache.
  `
  CREATE TABLE meta (key ${T} PRIMARY KEY, value ${T} NOT NULL);

  CREATE TABLE intents (
    intent_id ${T} PRIMARY KEY,
    intent_key ${T} NOT NULL CONSTRAINT intents_intent_key UNIQUE,
    attempt INTEGER NOT NULL DEFAULT 0,
    idem_key ${T} NOT NULL CONSTRAINT intents_idem_key UNIQUE,
    service ${T} NOT NULL,
    action ${T} NOT NULL,
    input ${T} NOT NULL,
    fingerprint ${T} NOT NULL,
    agent_budget ${MONEY},
    state ${T} NOT NULL,
    quote_id ${T},
    quote ${T},
    amount ${MONEY},
    payee ${T},
    quote_expires_at BIGINT,
    quoted_at BIGINT,
    requirements ${T},
    proof ${T},
    payment ${T},
    payment_tx ${T},
    execution_id ${T},
    execution ${T},
    exec_status ${T},
    output ${T},
    refund ${T},
    budget_state ${T} NOT NULL DEFAULT 'none',
    budget_amount ${MONEY},
    budget_at BIGINT,
    approval_id ${T},
    error ${T},
    attention ${T},
    call_id ${T},
    lease_owner ${T},
    lease_until BIGINT,
    next_poll_at BIGINT,
    poll_interval_ms BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  );
  CREATE INDEX intents_budget ON intents(budget_state, budget_at) WHERE budget_state IN ('reserved', 'spent');
  CREATE INDEX intents_unfinished ON intents(state) WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'paid');
  CREATE INDEX intents_polling ON intents(next_poll_at) WHERE next_poll_at IS NOT NULL;
  CREATE INDEX intents_created ON intents(created_at DESC, intent_id DESC);
  CREATE INDEX intents_execution ON intents(execution_id) WHERE execution_id IS NOT NULL;
  CREATE INDEX intents_exec_status ON intents(exec_status, created_at DESC);
  CREATE INDEX intents_action ON intents(action, created_at DESC);

  CREATE TABLE approvals (
    approval_id ${T} PRIMARY KEY,
    intent_id ${T} NOT NULL,
    quote_id ${T} NOT NULL,
    action ${T} NOT NULL,
    amount ${MONEY} NOT NULL,
    payee ${T},
    expires_at BIGINT NOT NULL,
    status ${T} NOT NULL,
    created_at BIGINT NOT NULL,
    decided_at BIGINT
  );

  CREATE TABLE catalog (
    service ${T} NOT NULL,
    name ${T} NOT NULL,
    detail ${T} NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (service, name)
  );
  `,
  // 2: money truth from the chain. Every signed proof is kept by its memo (the quote id) with
  // its fate; settlements and refunds carry what our own RPC showed.
  `
  ALTER TABLE intents ADD COLUMN settlement ${T} NOT NULL DEFAULT 'none';
  ALTER TABLE intents ADD COLUMN refund_state ${T} NOT NULL DEFAULT 'none';
  ALTER TABLE intents ADD COLUMN refund_credit ${MONEY} NOT NULL DEFAULT 0;
  ALTER TABLE intents ADD COLUMN refund_tx ${T};
  ALTER TABLE intents ADD COLUMN refund_seen_at BIGINT;
  DROP INDEX intents_unfinished;
  CREATE INDEX intents_unfinished ON intents(state) WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'unsettled', 'paid');
  CREATE INDEX intents_attention ON intents(created_at DESC) WHERE state = 'attention' OR attention IS NOT NULL;
  CREATE UNIQUE INDEX intents_refund_tx ON intents(refund_tx) WHERE refund_tx IS NOT NULL;

  CREATE TABLE payments (
    quote_id ${T} PRIMARY KEY,
    intent_id ${T} NOT NULL,
    attempt INTEGER NOT NULL,
    amount ${MONEY} NOT NULL,
    payee ${T} NOT NULL,
    payer ${T},
    mint ${T},
    blockhash ${T},
    signed_at BIGINT NOT NULL,
    sent_at BIGINT,
    fate ${T} NOT NULL DEFAULT 'pending',
    tx ${T},
    claimed_tx ${T},
    checked_at BIGINT
  );
  CREATE INDEX payments_intent ON payments(intent_id);
  CREATE INDEX payments_signed ON payments(signed_at);
  `,
  // 3: the index of tool-call transcripts (the files stay in each server's home).
  `
  CREATE TABLE transcripts (
    call_id TEXT COLLATE "C" PRIMARY KEY,
    created_at BIGINT NOT NULL,
    host TEXT COLLATE "C" NOT NULL,
    home TEXT COLLATE "C" NOT NULL
  );
  CREATE INDEX transcripts_created ON transcripts(created_at DESC, call_id DESC);
  `,
  // 4: a payment's lifetime as our own RPC vouched for it, the watch on payments found unable
  // to land (those found so before this version are watched again), and the token account
  // it moves money from.
  `
  ALTER TABLE payments ADD COLUMN last_valid_height ${MONEY};
  ALTER TABLE payments ADD COLUMN watch INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE payments ADD COLUMN source ${T};
  UPDATE payments SET watch = 1 WHERE fate = 'never';
  CREATE INDEX payments_watch ON payments(signed_at) WHERE watch = 1;
  `,
  // 5: the freeze, a person's stop on new payments: at most one row, frozen while it exists
  // (payment_freeze: FREEZE is a reserved word here).
  `
  CREATE TABLE payment_freeze (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    reason ${T},
    frozen_at BIGINT NOT NULL,
    frozen_by ${T} NOT NULL
  );
  `,
  // 6: x402 resources bought with paid_fetch, beside the actions (see schema.ts).
  `
  ALTER TABLE intents ADD COLUMN kind ${T} NOT NULL DEFAULT 'action';
  ALTER TABLE intents ADD COLUMN origin ${T};
  ALTER TABLE intents ADD COLUMN request ${T};
  ALTER TABLE intents ADD COLUMN offer ${T};
  ALTER TABLE intents ADD COLUMN response ${T};
  CREATE INDEX intents_origin ON intents(origin, created_at DESC) WHERE origin IS NOT NULL;
  CREATE INDEX intents_kind ON intents(kind, created_at DESC, intent_id DESC);

  CREATE TABLE response_bodies (
    intent_id ${T} PRIMARY KEY,
    body BYTEA NOT NULL,
    stored_at BIGINT NOT NULL
  );
  `,
  // 7: the budget's index covers the amounts it sums (see schema.ts).
  `
  DROP INDEX intents_budget;
  CREATE INDEX intents_budget ON intents(budget_state, budget_at) INCLUDE (budget_amount, refund_credit)
    WHERE budget_state IN ('reserved', 'spent');
  `,
  // 8: the network each payment was signed for (see schema.ts).
  `
  ALTER TABLE payments ADD COLUMN network ${T};
  `,
  // 9: passkeys, and the assertion an approval was given with (see schema.ts).
  `
  CREATE TABLE passkeys (
    credential_id ${T} PRIMARY KEY,
    public_key ${T} NOT NULL,
    algorithm INTEGER NOT NULL,
    rp_id ${T} NOT NULL,
    sign_count BIGINT NOT NULL DEFAULT 0,
    label ${T},
    owner ${T},
    owner_signature ${T},
    created_at BIGINT NOT NULL,
    removed_at BIGINT
  );
  ALTER TABLE approvals ADD COLUMN assertion ${T};
  `,
  // 10: an EVM payment's authorization nonce and validity window (see schema.ts).
  `
  ALTER TABLE payments ADD COLUMN nonce ${T};
  ALTER TABLE payments ADD COLUMN valid_after ${MONEY};
  ALTER TABLE payments ADD COLUMN valid_before ${MONEY};
  CREATE INDEX payments_nonce ON payments(nonce) WHERE nonce IS NOT NULL;
  `,
  // 11: the seller's signed offer and receipt on a purchase (see schema.ts).
  `
  CREATE TABLE seller_words (
    intent_id ${T} PRIMARY KEY,
    offer ${T},
    receipt ${T},
    updated_at BIGINT NOT NULL
  );
  `,
];

/**
 * Applies the migrations this database lacks, under the migration lock; returns the schema
 * version now. Throws SchemaTooNew (nothing changed) for a database newer than this build.
 */
export async function migrate(pool: pg.Pool, location: string): Promise<number> {
  return transaction(pool, async (c) => {
    await c.query("SELECT pg_advisory_xact_lock($1)", [LOCK.migrate]);
    const [exists] = await rows(c, `SELECT to_regclass('pam_schema') IS NOT NULL AS yes`);
    if (!exists?.yes) await c.query(VERSION_TABLE);
    const [row] = await rows(c, `SELECT version FROM pam_schema`);
    const found = (row?.version as number | undefined) ?? 0;
    if (found > PG_MIGRATIONS.length) throw new SchemaTooNew(found, PG_MIGRATIONS.length, location);
    // A journal already current needs no DDL (and so no CREATE privilege) at all.
    if (found === PG_MIGRATIONS.length) return found;
    for (let v = found; v < PG_MIGRATIONS.length; v++) await c.query(PG_MIGRATIONS[v]!);
    await c.query(
      `INSERT INTO pam_schema (version) VALUES ($1) ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version`,
      [PG_MIGRATIONS.length],
    );
    return PG_MIGRATIONS.length;
  });
}
