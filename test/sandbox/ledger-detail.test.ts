/**
 * What the ledger keeps of a landed transaction (`ledger_log.detail`, src/sandbox/ledger/
 * history.ts landedDetail) is the text the ledger wrote before it was converted field by field
 * (a JSON.stringify replacer turning bigints into decimal strings), so logs written by either
 * read back the same; and the store's one transaction runner (src/sandbox/db.ts inTransaction)
 * commits, rolls back and nests as better-sqlite3's own transaction functions do.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { landedDetail, reviveLanded, type LandedTransaction } from "../../src/sandbox/ledger/history.js";
import { inTransaction, openDatabase, statement } from "../../src/sandbox/db.js";

const landed: LandedTransaction = {
  signature: "5".repeat(88),
  slot: 9_007_199_254_740_993n,
  blockTime: 1_764_000_000,
  wire: "AQID",
  messageHash: "ab".repeat(32),
  fee: 10_000n,
  logs: ["Program ComputeBudget111111111111111111111111111111 invoke [1]", 'a "quoted" log\\line'],
  computeUnits: 6_393n,
  preBalances: [5_000_000_000n, 2_039_280n, 0n],
  postBalances: [4_999_990_000n, 2_039_280n, 0n],
  preTokenBalances: [{ accountIndex: 1, mint: "Mint111", owner: "Owner111", amount: 18_446_744_073_709_551_615n }],
  postTokenBalances: [{ accountIndex: 1, mint: "Mint111", owner: "Owner111", amount: 0n }],
};

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

describe("a landed transaction's detail", () => {
  it("is the text the replacer wrote, and reads back to the same transaction", () => {
    const before = JSON.stringify(landed, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    expect(landedDetail(landed)).toBe(before);
    expect(reviveLanded(landedDetail(landed))).toEqual(landed);
  });
});

describe("the store's transaction runner", () => {
  const open = () => {
    const home = mkdtempSync(join(tmpdir(), "pam-intx-"));
    homes.push(home);
    return openDatabase(join(home, "sandbox.sqlite"));
  };
  const put = (db: ReturnType<typeof open>, key: string) =>
    statement(db, `INSERT INTO meta (key, value) VALUES (?, 'x')`).run(key);
  const has = (db: ReturnType<typeof open>, key: string) =>
    statement(db, `SELECT 1 AS found FROM meta WHERE key = ?`).get(key) !== undefined;

  it("commits what it ran, rolls all of it back on a throw, and nests as a savepoint undone alone", () => {
    const db = open();
    expect(inTransaction(db, () => (put(db, "a"), db.inTransaction))).toBe(true);
    expect(has(db, "a")).toBe(true);
    expect(db.inTransaction).toBe(false);

    expect(() =>
      inTransaction(db, () => {
        put(db, "b");
        throw new Error("undo");
      }),
    ).toThrow("undo");
    expect(has(db, "b")).toBe(false);

    inTransaction(
      db,
      () => {
        put(db, "c");
        try {
          inTransaction(db, () => {
            put(db, "d");
            throw new Error("undo the inner one");
          });
        } catch {
          // the savepoint alone
        }
        put(db, "e");
      },
      "immediate",
    );
    expect([has(db, "c"), has(db, "d"), has(db, "e")]).toEqual([true, false, true]);
    db.close();
  });
});
