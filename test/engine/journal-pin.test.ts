/**
 * The journal's memory of approval PINs, on both stores (a real PostgreSQL server and a SQLite
 * file): a record per host and home, replaced when set again, forgotten for that home only,
 * kept across a reopen, beside (not instead of) the other facts of the `meta` table; a
 * damaged record is an error, never "no PIN".
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { NOW } from "../helpers/journal-records.js";
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

/** A store, how to open it again, and how to write its `meta` table behind its back. */
interface Opened {
  open(): Promise<JournalStore>;
  rawMeta(key: string, value: string): Promise<void>;
}

const STORES: Array<[string, () => Promise<Opened>]> = [
  [
    "postgres",
    async () => {
      const url = await server.createDatabase();
      return {
        open: () => openPostgresJournal(url),
        rawMeta: async (key, value) => {
          const c = new pg.Client({ connectionString: url });
          await c.connect();
          try {
            await c.query(`INSERT INTO meta (key, value) VALUES ($1, $2)`, [key, value]);
          } finally {
            await c.end();
          }
        },
      };
    },
  ],
  [
    "sqlite",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "pam-pin-journal-"));
      dirs.push(dir);
      const path = join(dir, "journal.sqlite");
      return {
        open: async () => new Journal(path),
        rawMeta: async (key, value) => {
          const db = new Database(path);
          try {
            db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?)`).run(key, value);
          } finally {
            db.close();
          }
        },
      };
    },
  ],
];

const A = { host: "host-a", home: "/home/agent/.paid-actions", setAt: NOW };
const B = { host: "host-b", home: "/home/agent/.paid-actions", setAt: NOW + 1_000 };
/** A home whose path holds what a LIKE pattern or JSON would trip on. */
const ODD = { host: "host-a", home: `/tmp/a_b%c"d\\e ü`, setAt: NOW + 2_000 };

describe.each(STORES)("the memory of approval PINs (%s)", (_kind, make) => {
  it("remembers a PIN per host and home, replaces a home's record when set again, forgets one home only, and keeps them across a reopen", async () => {
    const s = await make();
    let j = await s.open();
    try {
      expect(await j.pinRecords()).toEqual([]);
      await j.recordPin(B);
      await j.recordPin(A);
      await j.recordPin(ODD);
      // Same path on two hosts: two records, oldest first.
      expect(await j.pinRecords()).toEqual([A, B, ODD]);
      await j.recordPin({ ...A, setAt: NOW + 5_000 });
      expect(await j.pinRecords()).toEqual([B, ODD, { ...A, setAt: NOW + 5_000 }]);

      await j.forgetPin("host-a", A.home);
      expect(await j.pinRecords()).toEqual([B, ODD]);
      await j.forgetPin("host-c", A.home);
      expect(await j.pinRecords()).toEqual([B, ODD]);

      await j.close();
      j = await s.open();
      expect(await j.pinRecords()).toEqual([B, ODD]);
      await j.forgetPin(ODD.host, ODD.home);
      await j.forgetPin(B.host, B.home);
      expect(await j.pinRecords()).toEqual([]);
    } finally {
      await j.close();
    }
  });

  it("other facts of the meta table are not records; a damaged record is an error, not 'no PIN'", async () => {
    const s = await make();
    const first = await s.open();
    await first.close();
    await s.rawMeta("approval_pin_other", "{}");
    await s.rawMeta("something-else", "1");
    const j = await s.open();
    try {
      expect(await j.pinRecords()).toEqual([]);
      await j.recordPin(A);
      expect(await j.pinRecords()).toEqual([A]);
    } finally {
      await j.close();
    }
    await s.rawMeta(`approval-pin:["x","y"]`, "not json");
    const damaged = await s.open();
    try {
      await expect(async () => damaged.pinRecords()).rejects.toThrow();
    } finally {
      await damaged.close();
    }
  });
});
