/**
 * The sandbox's WAL checkpoints on a worker thread (src/sandbox/checkpoints.ts), on a real
 * SQLite file: the request thread's connection stops checkpointing, the worker copies the WAL
 * into the database file, closing lets go of the file before the connection closes; and a
 * worker that cannot start, fails a checkpoint or exits gives the checkpoints back to the
 * request thread, said in the log.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { startCheckpoints } from "../../src/sandbox/checkpoints.js";
import { openDatabase, statement } from "../../src/sandbox/db.js";
import { waitFor } from "../helpers/wait.js";

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function open() {
  const home = mkdtempSync(join(tmpdir(), "pam-checkpoints-"));
  homes.push(home);
  const path = join(home, "sandbox.sqlite");
  const db = openDatabase(path);
  const lines: string[] = [];
  return { path, db, lines, log: (line: string) => lines.push(line) };
}

const autocheckpoint = (db: Database.Database) =>
  statement(db, "PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number };

/** Writes `rows` rows of 4 KB, one commit each: about one WAL page per row. */
function write(db: Database.Database, rows: number, from = 0): void {
  const insert = statement(db, `INSERT INTO meta (key, value) VALUES (?, ?)`);
  for (let i = from; i < from + rows; i++) insert.run(`k${i}`, "x".repeat(4000));
}

describe("WAL checkpoints on a worker thread", () => {
  it("the request thread's connection stops checkpointing and the worker copies the WAL into the file", async () => {
    const { path, db, lines, log } = open();
    const checkpoints = startCheckpoints(db, { path, log, everyMs: 10 });
    expect(checkpoints.offThread).toBe(true);
    expect(autocheckpoint(db).wal_autocheckpoint).toBe(0);
    const before = statSync(path).size;
    // Past SQLite's own threshold (1,000 pages): nothing on this thread would copy them now.
    write(db, 1500);
    await waitFor(() => statSync(path).size >= before + 1500 * 4096, {
      timeoutMs: 15_000,
      what: "the worker's checkpoint of 1,500 pages",
    });
    // A complete checkpoint lets this thread's next commit restart the WAL (write it again from
    // its start): 1,200 more rows leave it well short of the 1.8 times its size they would make
    // appended to it. (A round written while a checkpoint is still copying appends: the file's
    // size, what is waited for, grows before the copy ends.)
    const walAfterFirst = statSync(`${path}-wal`).size;
    for (let round = 0; round < 4; round++) {
      write(db, 300, 1500 + round * 300);
      await waitFor(() => statSync(path).size >= before + (1800 + round * 300) * 4096, {
        timeoutMs: 15_000,
        what: `the worker's checkpoint of round ${round}`,
      });
    }
    expect(statSync(`${path}-wal`).size).toBeLessThan(walAfterFirst * 1.5);
    expect((statement(db, `SELECT COUNT(*) AS n FROM meta WHERE key LIKE 'k%'`).get() as { n: number }).n).toBe(2700);
    expect(checkpoints.offThread).toBe(true);
    expect(lines).toEqual([]);

    // Closing waits for the worker's connection: this one is then the last, and closing it removes the WAL.
    checkpoints.close();
    db.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("a worker that cannot start leaves the checkpoints to the request thread, said once", async () => {
    const { path, db, lines, log } = open();
    const checkpoints = startCheckpoints(db, { path, log, workerSource: `throw new Error("no thread today")` });
    await waitFor(() => !checkpoints.offThread, { what: "the checkpoints back on the request thread" });
    expect(autocheckpoint(db).wal_autocheckpoint).toBe(1000);
    expect(lines).toEqual([expect.stringMatching(/back on the request thread: the worker failed \(no thread today\)/)]);
    checkpoints.close();
    db.close();
  });

  it("a checkpoint that fails gives them back to the request thread, which still writes and checkpoints", async () => {
    const { path, db, lines, log } = open();
    const failing = `require("node:worker_threads").parentPort.postMessage({ failed: "disk I/O error" });
      setInterval(() => undefined, 1000);`;
    const checkpoints = startCheckpoints(db, { path, log, workerSource: failing });
    await waitFor(() => !checkpoints.offThread, { what: "the checkpoints back on the request thread" });
    expect(autocheckpoint(db).wal_autocheckpoint).toBe(1000);
    expect(lines).toEqual([
      expect.stringMatching(/back on the request thread: a checkpoint failed \(disk I\/O error\)/),
    ]);
    const before = statSync(path).size;
    write(db, 1500);
    expect(statSync(path).size).toBeGreaterThan(before);
    checkpoints.close();
    db.close();
  });

  it("a worker that exits on its own gives them back too", async () => {
    const { path, db, lines, log } = open();
    const checkpoints = startCheckpoints(db, { path, log, workerSource: `process.exit(3)` });
    await waitFor(() => !checkpoints.offThread, { what: "the checkpoints back on the request thread" });
    expect(autocheckpoint(db).wal_autocheckpoint).toBe(1000);
    expect(lines).toEqual([expect.stringMatching(/back on the request thread: the worker exited \(code 3\)/)]);
    checkpoints.close();
    db.close();
  });
});
