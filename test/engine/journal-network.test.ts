/**
 * A payment record's network (schema 8), on both stores (a real PostgreSQL server and a
 * SQLite file): which rail follows a payment. A journal at schema 7 gains the column with
 * its payments as they were (no network: made on the Solana network configured then); a
 * payment recorded now keeps the network it was signed for, through updates of its fate.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOLANA_DEVNET } from "../../src/domain/networks.js";
import { PG_MIGRATIONS, VERSION_TABLE } from "../../src/engine/journal/pg-schema.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { MIGRATIONS } from "../../src/engine/journal/schema.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { newIntent, NOW, payment, PRICED, RESERVED } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sqlitePath = () => {
  const dir = mkdtempSync(join(tmpdir(), "pam-network-"));
  dirs.push(dir);
  return join(dir, "journal.sqlite");
};

/** A payment journaled before schema 8, as its INSERT wrote it then. */
const OLD_PAYMENT = `INSERT INTO payments (quote_id, intent_id, attempt, amount, payee, payer, mint, source, blockhash, last_valid_height, signed_at, fate)
  VALUES ('q-old', 'i-old', 0, 288000, 'Payee111', 'Payer111', 'Mint111', 'Source111', 'Hash111', 1150, ${NOW}, 'pending')`;

/** What a store must do with networks, once at schema 8 (`old`: it was migrated with a payment of schema 7). */
async function networksKept(j: JournalStore, old: boolean): Promise<void> {
  if (old) {
    const before = await j.payment("q-old");
    expect(before).toMatchObject({ quoteId: "q-old", blockhash: "Hash111", lastValidHeight: 1_150n });
    expect(before).not.toHaveProperty("network");
  }
  await j.insertIntent(newIntent("i1"));
  expect(await j.update("i1", { state: "quoted", ...PRICED }, NOW + 1)).toBe(true);
  const signed = payment("q1", "i1", { network: SOLANA_DEVNET });
  const patch = { state: "signed" as const, ...RESERVED, proof: "P" };
  const then = { intentId: "i1", patch, now: NOW + 2, expect: { state: "quoted" as const } };
  expect(await j.recordSigned(signed, then)).toBe(true);
  expect(await j.payment("q1")).toEqual(signed);
  await j.updatePayment("q1", { fate: "landed", tx: "tx-1", checkedAt: NOW + 3 });
  expect(await j.payment("q1")).toEqual({ ...signed, fate: "landed", tx: "tx-1", checkedAt: NOW + 3 });
  expect((await j.paymentsSince(NOW)).map((p) => [p.quoteId, p.network])).toEqual(
    old
      ? [
          ["q-old", undefined],
          ["q1", SOLANA_DEVNET],
        ]
      : [["q1", SOLANA_DEVNET]],
  );
}

describe("a payment's network", () => {
  it("SQLite: a fresh journal records it", async () => {
    const j = new Journal(sqlitePath());
    try {
      await networksKept(j, false);
    } finally {
      j.close();
    }
  });

  it("PostgreSQL: a fresh journal records it", async () => {
    const j = await openPostgresJournal(await server.createDatabase());
    try {
      await networksKept(j, false);
    } finally {
      await j.close();
    }
  });
});

describe("moving to schema 8", () => {
  it("SQLite: a journal at schema 7 gains payments' network, its payments as they were", async () => {
    const path = sqlitePath();
    const db = new Database(path);
    for (const m of MIGRATIONS.slice(0, 7)) db.exec(m);
    db.pragma("user_version = 7");
    db.exec(OLD_PAYMENT);
    db.close();
    const j = new Journal(path);
    try {
      // Migrated through schema 8 to the newest this build knows.
      expect(j.schemaVersion).toBeGreaterThan(7);
      expect(j.schemaVersion).toBe(MIGRATIONS.length);
      await networksKept(j, true);
    } finally {
      j.close();
    }
  });

  it("PostgreSQL: a journal at schema 7 gains payments' network, its payments as they were", async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(VERSION_TABLE);
      for (const m of PG_MIGRATIONS.slice(0, 7)) await client.query(m);
      await client.query(`INSERT INTO pam_schema (version) VALUES (7)`);
      await client.query(OLD_PAYMENT);
    } finally {
      await client.end();
    }
    const j = await openPostgresJournal(url);
    try {
      // Migrated through schema 8 to the newest this build knows.
      expect((await j.health()).schemaVersion).toBe(PG_MIGRATIONS.length);
      expect(PG_MIGRATIONS.length).toBe(MIGRATIONS.length);
      await networksKept(j, true);
    } finally {
      await j.close();
    }
  });
});
