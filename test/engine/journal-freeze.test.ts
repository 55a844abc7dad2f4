/**
 * The freeze in the journal, on both stores (a real PostgreSQL server and a SQLite file): one
 * freeze per journal, kept as first given however often it is asked for again; lifted once;
 * while it holds, the store records no signed proof (nothing written); a freeze waits for a
 * proof being recorded at that moment; a journal at schema 4 gains it unfrozen.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PG_MIGRATIONS, VERSION_TABLE } from "../../src/engine/journal/pg-schema.js";
import { LOCK } from "../../src/engine/journal/pg-sql.js";
import { PaymentsFrozen, type Freeze, type JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { MIGRATIONS } from "../../src/engine/journal/schema.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { newIntent, NOW, payment, RESERVED } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { waitFor } from "../helpers/wait.js";

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
  const dir = mkdtempSync(join(tmpdir(), "pam-freeze-"));
  dirs.push(dir);
  return join(dir, "journal.sqlite");
};

const STORES: Array<[string, () => Promise<JournalStore>]> = [
  ["postgres", async () => openPostgresJournal(await server.createDatabase())],
  ["sqlite", async () => new Journal(sqlitePath())],
];

const FIRST: Freeze = { reason: "card stolen — stop everything", since: NOW, by: "terminal" };
const SECOND: Freeze = { reason: "again", since: NOW + 5_000, by: "host-b/4242" };

describe.each(STORES)("the freeze (%s)", (_kind, open) => {
  it("is one per journal: a second freeze keeps the first as it was; unfreeze lifts it once", async () => {
    const j = await open();
    try {
      expect(await j.frozen()).toBeUndefined();
      expect(await j.freeze(FIRST)).toEqual({ freeze: FIRST, already: false });
      expect(await j.frozen()).toEqual(FIRST);
      expect(await j.freeze(SECOND)).toEqual({ freeze: FIRST, already: true });
      expect(await j.frozen()).toEqual(FIRST);
      expect(await j.unfreeze()).toEqual(FIRST);
      expect(await j.frozen()).toBeUndefined();
      expect(await j.unfreeze()).toBeUndefined();
      const noReason = { reason: null, since: NOW + 9, by: "host-a/1" };
      expect(await j.freeze(noReason)).toEqual({ freeze: noReason, already: false });
      expect(await j.frozen()).toEqual(noReason);
    } finally {
      await j.close();
    }
  });

  it("while frozen, recording a signed proof throws PaymentsFrozen and writes nothing; once lifted it records", async () => {
    const j = await open();
    try {
      await j.insertIntent(newIntent("i1"));
      await j.update("i1", { state: "reserved", ...RESERVED }, NOW + 1);
      await j.freeze(FIRST);
      const signed = {
        intentId: "i1",
        patch: { state: "signed" as const, proof: "PROOF" },
        now: NOW + 2,
        expect: { state: "reserved" as const },
      };
      const err = await Promise.resolve()
        .then(() => j.recordSigned(payment("q1", "i1"), signed))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentsFrozen);
      expect((err as PaymentsFrozen).freeze).toEqual(FIRST);
      expect(await j.payment("q1")).toBeUndefined();
      expect(await j.intent("i1")).toMatchObject({ state: "reserved", proof: null, updatedAt: NOW + 1 });

      await j.unfreeze();
      expect(await j.recordSigned(payment("q1", "i1"), signed)).toBe(true);
      expect(await j.intent("i1")).toMatchObject({ state: "signed", proof: "PROOF" });
    } finally {
      await j.close();
    }
  });
});

describe("the freeze and proofs being recorded (PostgreSQL, many servers)", () => {
  it("a freeze waits for a proof being recorded at that moment, and returns once it is in", async () => {
    const url = await server.createDatabase();
    const j = await openPostgresJournal(url, { applicationName: "pam-freeze-waits" });
    // Another server, in the middle of recording a proof: it holds the lock shared.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query("SELECT pg_advisory_xact_lock_shared($1)", [LOCK.freeze]);
      let done = false;
      const freezing = Promise.resolve(j.freeze(FIRST)).then((r) => ((done = true), r));
      // The freeze is seen waiting on the lock in the server itself, not assumed to after a while.
      await waitFor(
        async () =>
          (
            await other.query(
              `SELECT 1 FROM pg_stat_activity WHERE application_name = 'pam-freeze-waits' AND wait_event_type = 'Lock'`,
            )
          ).rowCount === 1,
        { what: "the freeze to wait on the lock" },
      );
      expect(done).toBe(false);
      await other.query("COMMIT");
      expect(await freezing).toEqual({ freeze: FIRST, already: false });
      expect(await j.frozen()).toEqual(FIRST);
    } finally {
      await other.end();
      await j.close();
    }
  });
});

describe("moving to schema 5", () => {
  it("SQLite: a journal at schema 4 gains the freeze, unfrozen", async () => {
    const path = sqlitePath();
    const db = new Database(path);
    for (const m of MIGRATIONS.slice(0, 4)) db.exec(m);
    db.pragma("user_version = 4");
    db.close();
    const j = new Journal(path);
    try {
      expect(j.schemaVersion).toBe(MIGRATIONS.length);
      expect(j.frozen()).toBeUndefined();
      expect(j.freeze(FIRST).already).toBe(false);
    } finally {
      j.close();
    }
  });

  it("PostgreSQL: a journal at schema 4 gains the freeze, unfrozen", async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(VERSION_TABLE);
      for (const m of PG_MIGRATIONS.slice(0, 4)) await client.query(m);
      await client.query(`INSERT INTO pam_schema (version) VALUES (4)`);
    } finally {
      await client.end();
    }
    const j = await openPostgresJournal(url);
    try {
      expect((await j.health()).schemaVersion).toBe(PG_MIGRATIONS.length);
      expect(await j.frozen()).toBeUndefined();
      expect((await j.freeze(FIRST)).already).toBe(false);
    } finally {
      await j.close();
    }
  });
});
