/**
 * An EVM payment's record (schema 10), on both stores (a real PostgreSQL server and a SQLite
 * file): its authorization's nonce and validity window are kept as journaled — before the
 * proof leaves — and through updates of its fate; a journal at schema 8 gains the columns
 * with its payments as they were. The spend by network: each network's share of the caps,
 * adding up to usage, whatever the store.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_SEPOLIA, SOLANA_DEVNET } from "../../src/domain/networks.js";
import { PG_MIGRATIONS, VERSION_TABLE } from "../../src/engine/journal/pg-schema.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { MIGRATIONS } from "../../src/engine/journal/schema.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { newIntent, NOW, payment, PRICED, REQUIREMENTS, RESERVED } from "../helpers/journal-records.js";
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
  const dir = mkdtempSync(join(tmpdir(), "pam-evm-journal-"));
  dirs.push(dir);
  return join(dir, "journal.sqlite");
};

const NONCE = `0x${"5a".repeat(32)}`;
const KEY = "0x9fB29AAc15b9A4B7F17c3385939b007540f4d791";
const TREASURY = "0x1111111111111111111111111111111111111111";

/** An EVM payment as the EVM rail journals it. */
const evmPayment = (quoteId: string, intentId: string) =>
  payment(quoteId, intentId, {
    network: BASE_SEPOLIA,
    payee: TREASURY,
    payer: KEY,
    source: KEY,
    mint: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    blockhash: null,
    lastValidHeight: null,
    nonce: NONCE,
    validAfter: 0n,
    validBefore: 1_700_000_300n,
  });

/** Signs intent `id` for `p` (its quote `p.quoteId`) on `network`: reserved, then signed with its payment record. */
async function signed(j: JournalStore, id: string, p: ReturnType<typeof payment>, network: string): Promise<void> {
  await j.insertIntent(newIntent(id));
  const priced = { ...PRICED, quoteId: p.quoteId };
  expect(await j.update(id, { state: "quoted", ...priced }, NOW + 1)).toBe(true);
  const patch = {
    state: "signed" as const,
    ...RESERVED,
    quoteId: p.quoteId,
    requirements: { ...REQUIREMENTS, network },
    proof: "P",
  };
  const then = { intentId: id, patch, now: NOW + 2, expect: { state: "quoted" as const } };
  expect(await j.recordSigned(p, then)).toBe(true);
}

/** What a store must do with EVM payments and the spend by network. */
async function evmKept(j: JournalStore): Promise<void> {
  const evm = evmPayment("q-evm", "i-evm");
  await signed(j, "i-evm", evm, BASE_SEPOLIA);
  expect(await j.payment("q-evm")).toEqual(evm);
  await j.updatePayment("q-evm", { fate: "never", checkedAt: NOW + 3, watch: true });
  expect(await j.payment("q-evm")).toEqual({ ...evm, fate: "never", checkedAt: NOW + 3, watch: true });
  expect((await j.watchedPayments(10)).map((p) => [p.quoteId, p.nonce, p.validBefore])).toEqual([
    ["q-evm", NONCE, 1_700_000_300n],
  ]);

  // A Solana payment keeps none of EVM's fields.
  const sol = payment("q-sol", "i-sol", { network: SOLANA_DEVNET });
  await signed(j, "i-sol", sol, SOLANA_DEVNET);
  const read = await j.payment("q-sol");
  expect(read).toEqual(sol);
  expect(read).not.toHaveProperty("nonce");
  expect(read).not.toHaveProperty("validBefore");

  // Each network's share of the caps; together, usage.
  const now = NOW + 10_000;
  const byNetwork = await j.spendingByNetwork(now);
  expect(byNetwork).toEqual([
    { network: BASE_SEPOLIA, day: 1_500_000n, reservedDay: 1_500_000n, total: 1_500_000n, refunded: 0n, count: 1 },
    { network: SOLANA_DEVNET, day: 1_500_000n, reservedDay: 1_500_000n, total: 1_500_000n, refunded: 0n, count: 1 },
  ]);
  const usage = await j.usage(now, true);
  expect(byNetwork.reduce((s, n) => s + n.day, 0n)).toBe(usage.day);
  expect(byNetwork.reduce((s, n) => s + n.total, 0n)).toBe(usage.total);
}

describe("an EVM payment's record and the spend by network", () => {
  it("SQLite", async () => {
    const j = new Journal(sqlitePath());
    try {
      await evmKept(j);
    } finally {
      j.close();
    }
  });

  it("PostgreSQL", async () => {
    const j = await openPostgresJournal(await server.createDatabase());
    try {
      await evmKept(j);
    } finally {
      await j.close();
    }
  });
});

/** A payment journaled at schema 8, as its INSERT wrote it then. */
const SCHEMA_8_PAYMENT = `INSERT INTO payments (quote_id, intent_id, attempt, amount, payee, payer, mint, source, blockhash, last_valid_height, signed_at, fate, network)
  VALUES ('q-8', 'i-8', 0, 288000, 'Payee111', 'Payer111', 'Mint111', 'Source111', 'Hash111', 1150, ${NOW}, 'pending', '${SOLANA_DEVNET}')`;

describe("moving to schema 9", () => {
  const kept = async (j: JournalStore) => {
    const before = await j.payment("q-8");
    expect(before).toMatchObject({ quoteId: "q-8", network: SOLANA_DEVNET, blockhash: "Hash111" });
    expect(before).not.toHaveProperty("nonce");
    const evm = evmPayment("q-evm", "i-evm");
    await signed(j, "i-evm", evm, BASE_SEPOLIA);
    expect(await j.payment("q-evm")).toEqual(evm);
  };

  it("SQLite: a journal at schema 8 gains the nonce and validity columns, its payments as they were", async () => {
    const path = sqlitePath();
    const db = new Database(path);
    for (const m of MIGRATIONS.slice(0, 8)) db.exec(m);
    db.pragma("user_version = 8");
    db.exec(SCHEMA_8_PAYMENT);
    db.close();
    const j = new Journal(path);
    try {
      expect(j.schemaVersion).toBe(11); // 8 → 9 (passkeys) → 10 (nonces) → 11 (seller_words)
      await kept(j);
    } finally {
      j.close();
    }
  });

  it("PostgreSQL: a journal at schema 8 gains the nonce and validity columns, its payments as they were", async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(VERSION_TABLE);
      for (const m of PG_MIGRATIONS.slice(0, 8)) await client.query(m);
      await client.query(`INSERT INTO pam_schema (version) VALUES (8)`);
      await client.query(SCHEMA_8_PAYMENT);
    } finally {
      await client.end();
    }
    const j = await openPostgresJournal(url);
    try {
      expect((await j.health()).schemaVersion).toBe(11);
      await kept(j);
    } finally {
      await j.close();
    }
  });
});
