/**
 * What the journal's contract tests share: a patch that writes every field (each codec
 * tested), and the two stores the contract runs on — a fresh database on the test file's
 * PostgreSQL server, and a SQLite file in a temp dir — each opened for one test and closed
 * after it, whatever the test does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JournalOptions, JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import type { Intent, IntentPatch } from "../../src/engine/model/types.js";
import { NOW, U64_MAX } from "../helpers/journal-records.js";
import type { TestPostgres } from "../helpers/postgres.mjs";

/** Every field a patch can write, with values that test each codec: u64 amounts, JSON, text, numbers. */
export const FULL_PATCH: IntentPatch = {
  kind: "fetch",
  origin: "https://api.example.com",
  request: {
    url: "https://api.example.com/data?key=secret",
    origin: "https://api.example.com",
    method: "POST",
    headers: { authorization: "Bearer x" },
    body: '{"q":1}',
  },
  offer: { resource: { url: "https://api.example.com/data" }, paymentId: "pay_1", extensions: { a: { b: 1 } } },
  response: {
    status: 200,
    headers: { "content-type": "application/json" },
    contentType: "application/json",
    size: 7,
    paid: true,
  },
  intentKey: "key-x",
  attempt: 2,
  idemKey: "idem-x2",
  service: "svc2",
  action: "dns_records_create",
  input: { a: [1, 2, { b: "c" }] },
  fingerprint: "fp2",
  agentBudget: U64_MAX,
  state: "executed",
  quoteId: "q-x",
  quote: {
    quoteId: "q-x",
    action: "dns_records_create",
    amount: "0.25",
    currency: "USDC",
    expiresAt: "2030-01-01T00:00:00Z",
    paymentRequirement: { x402: true },
  } as unknown as Intent["quote"],
  amount: U64_MAX - 1n,
  payee: "Payee111",
  quoteExpiresAt: NOW + 300_000,
  quotedAt: NOW + 1,
  requirements: {
    scheme: "exact",
    network: "solana",
    amount: "250000",
    asset: "Mint",
    payTo: "Payee111",
    maxTimeoutSeconds: 60,
    extra: { feePayer: "F" },
  },
  proof: "PROOF-SECRET",
  payment: { paymentId: "p1", status: "settled" },
  paymentTx: "tx-1",
  settlement: "verified",
  executionId: "ex-1",
  execution: {
    executionId: "ex-1",
    status: "completed",
    action: "dns_records_create",
    createdAt: "2030-01-01T00:00:00Z",
  },
  execStatus: "completed",
  output: { records: [{ name: "a", ttl: 60 }] },
  refund: { amount: "0.10", currency: "USDC", transaction: "rtx" },
  refundState: "verified",
  refundCredit: 100_000n,
  refundTx: "rtx",
  refundSeenAt: NOW + 7,
  budgetState: "spent",
  budgetAmount: 9_007_199_254_740_993n,
  budgetAt: NOW + 2,
  approvalId: "ap-1",
  error: { code: "payment_failed", message: "m", context: { n: 1 } } as Intent["error"],
  attention: "look",
  callId: "call-1",
  leaseOwner: "owner-b",
  leaseUntil: NOW + 99,
  nextPollAt: NOW + 1000,
  pollIntervalMs: 5000,
};

export type Opened = { store: JournalStore; done(): Promise<void> };
export type OpenStore = (o?: JournalOptions) => Promise<Opened>;

/** The stores, by name, for describe.each; `server` is read when a test opens one (after beforeAll started it). */
export function contractStores(server: () => TestPostgres): Array<[string, OpenStore]> {
  return [
    [
      "postgres",
      async (o) => {
        const j = await openPostgresJournal(await server().createDatabase(), o);
        return { store: j, done: () => j.close() };
      },
    ],
    [
      "sqlite",
      async (o) => {
        const dir = mkdtempSync(join(tmpdir(), "pam-contract-"));
        const j = new Journal(join(dir, "journal.sqlite"), o);
        const done = async () => {
          j.close();
          rmSync(dir, { recursive: true, force: true });
        };
        return { store: j, done };
      },
    ],
  ];
}

/** withStore(fn, options): runs `fn` on a store `open` opens, and closes it whatever `fn` does. */
export function storeRunner(open: OpenStore) {
  return async function withStore(fn: (j: JournalStore) => Promise<void>, o?: JournalOptions): Promise<void> {
    const { store, done } = await open(o);
    try {
      await fn(store);
    } finally {
      await done();
    }
  };
}
