import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { MIGRATIONS } from "../../src/engine/journal/schema.js";
import { Journal, PAGE_CACHE_KIB } from "../../src/engine/journal/sqlite.js";
import { newIntent } from "../helpers/journal-records.js";
import { ensureBuilt, PROJECT_ROOT } from "../helpers/process.js";

describe("the journal", () => {
  it("keeps a page cache of SQLite's default size (2,000 KiB), not better-sqlite3's 16 MB, on every opening", () => {
    const dir = mkdtempSync(join(tmpdir(), "pam-journal-"));
    const path = join(dir, "journal.sqlite");
    try {
      // What the connection would keep without the journal's setting: the process's memory
      // would grow with the journal's file, up to this, with every paid call.
      const raw = new Database(":memory:");
      expect(raw.pragma("cache_size", { simple: true })).toBe(-16000);
      raw.close();
      expect(PAGE_CACHE_KIB).toBe(2000);
      for (let opening = 0; opening < 2; opening++) {
        const j = new Journal(path);
        expect(j.pageCacheKib).toBe(PAGE_CACHE_KIB);
        j.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("several processes opening a new journal at once all succeed: a migration runs once", async () => {
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), "pam-journal-"));
    const path = join(dir, "journal.sqlite");
    const journalUrl = pathToFileURL(join(PROJECT_ROOT, "dist", "engine", "journal", "sqlite.js")).href;
    const script = `const { Journal } = await import(${JSON.stringify(journalUrl)}); new Journal(${JSON.stringify(path)}).close();`;
    try {
      const codes = await Promise.all(
        Array.from(
          { length: 16 },
          () =>
            new Promise<{ code: number | null; err: string }>((resolve) => {
              const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
                stdio: ["ignore", "ignore", "pipe"],
              });
              let err = "";
              child.stderr.on("data", (c: Buffer) => (err += c));
              child.on("exit", (code) => resolve({ code, err }));
            }),
        ),
      );
      for (const c of codes) expect(c.code, c.err).toBe(0);
      const j = new Journal(path);
      expect(j.schemaVersion).toBe(MIGRATIONS.length);
      j.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a fetch (schema 6): its kind, origin and request recorded with it, its answer's body kept apart and replaced whole", () => {
    const dir = mkdtempSync(join(tmpdir(), "pam-journal-"));
    const j = new Journal(join(dir, "journal.sqlite"));
    try {
      const request = {
        url: "https://api.example.com/data?key=s3cret",
        origin: "https://api.example.com",
        method: "GET" as const,
        headers: { authorization: "Bearer x" },
        body: null,
      };
      j.insertIntent({ ...newIntent("f1"), fetch: { origin: request.origin, request } });
      j.insertIntent(newIntent("a1"));
      expect(j.intent("f1")).toMatchObject({ kind: "fetch", origin: request.origin, request, response: null });
      expect(j.intent("a1")).toMatchObject({ kind: "action", origin: null, request: null });
      expect(j.responseBody("f1")).toBeUndefined();
      j.saveResponseBody("f1", new Uint8Array([0, 255, 1]), 1);
      j.saveResponseBody("f1", new Uint8Array([7]), 2);
      expect(j.responseBody("f1")).toEqual(new Uint8Array([7]));
    } finally {
      j.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("moving to schema 4 watches again every payment found unable to land before it (judged by a blockhash the service may have chosen)", () => {
    const dir = mkdtempSync(join(tmpdir(), "pam-journal-"));
    const path = join(dir, "journal.sqlite");
    try {
      const db = new Database(path);
      for (const m of MIGRATIONS.slice(0, 3)) db.exec(m);
      db.pragma("user_version = 3");
      const insert = db.prepare(
        `INSERT INTO payments (quote_id, intent_id, attempt, amount, payee, blockhash, signed_at, fate) VALUES (?, 'i1', 0, '288000', 'Payee', 'Hash', ?, ?)`,
      );
      insert.run("q-never", 1_000, "never");
      insert.run("q-landed", 2_000, "landed");
      insert.run("q-pending", 3_000, "pending");
      db.close();
      const j = new Journal(path);
      expect(j.schemaVersion).toBe(MIGRATIONS.length);
      expect(j.watchedPayments(10).map((p) => [p.quoteId, p.lastValidHeight, p.watch])).toEqual([
        ["q-never", null, true],
      ]);
      expect(j.payment("q-pending")).toMatchObject({ lastValidHeight: null, watch: false, blockhash: "Hash" });
      j.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
