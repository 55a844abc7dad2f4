/**
 * The journal's contract, part one, against a real PostgreSQL server (one per file, started
 * by test/helpers/postgres.mjs) and the SQLite store too: the same calls must give the same
 * answers. What is written for an intent and its payments: every field round-trips, updates
 * are compare-and-set, one proof per quote, a payment's watch, leases; and PostgreSQL's
 * migration that watches payments again. Part two (sums and reads) is
 * journal-pg-reads.test.ts; what only a fleet shows is journal-pg-fleet.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IntentKeyTaken } from "../../src/engine/journal/port.js";
import pg from "pg";
import { PG_MIGRATIONS, VERSION_TABLE } from "../../src/engine/journal/pg-schema.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { newIntent, NOW, payment, PRICED, RESERVED, SIGNED, U64_MAX } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { contractStores, FULL_PATCH, storeRunner } from "./journal-pg.fixtures.js";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(contractStores(() => server))("the journal's contract (%s)", (_kind, open) => {
  const withStore = storeRunner(open);

  it("round-trips every field of an intent: u64 amounts, JSON, nulls, and hands each proof read to onSecret", async () => {
    const secrets: string[] = [];
    await withStore(
      async (j) => {
        await j.insertIntent(newIntent("i1", { agentBudget: U64_MAX, callId: "c1" }));
        const fresh = await j.intent("i1");
        expect(fresh).toEqual({
          ...newIntent("i1", { agentBudget: U64_MAX, callId: "c1" }),
          kind: "action",
          origin: null,
          request: null,
          offer: null,
          response: null,
          attempt: 0,
          state: "new",
          quoteId: null,
          quote: null,
          amount: null,
          payee: null,
          quoteExpiresAt: null,
          quotedAt: null,
          requirements: null,
          proof: null,
          payment: null,
          paymentTx: null,
          settlement: "none",
          executionId: null,
          execution: null,
          execStatus: null,
          output: null,
          refund: null,
          refundState: "none",
          refundCredit: 0n,
          refundTx: null,
          refundSeenAt: null,
          budgetState: "none",
          budgetAmount: null,
          budgetAt: null,
          approvalId: null,
          error: null,
          attention: null,
          nextPollAt: null,
          pollIntervalMs: null,
          updatedAt: NOW,
        });
        expect(await j.update("i1", FULL_PATCH, NOW + 5)).toBe(true);
        const full = { ...FULL_PATCH, intentId: "i1", createdAt: NOW, updatedAt: NOW + 5 };
        expect(await j.intent("i1")).toEqual(full);
        expect(await j.intentByKey("key-x")).toEqual(full);
        expect(await j.intentByExecution("ex-1")).toEqual(full);
        expect(await j.intent("nope")).toBeUndefined();
        // A fetch's answer body, kept apart and replaced whole.
        expect(await j.responseBody("i1")).toBeUndefined();
        await j.saveResponseBody("i1", new Uint8Array([0, 1, 2, 255]), NOW);
        await j.saveResponseBody("i1", new Uint8Array([9, 0, 9]), NOW + 1);
        expect(await j.responseBody("i1")).toEqual(new Uint8Array([9, 0, 9]));
      },
      { onSecret: (s) => secrets.push(s) },
    );
    expect(secrets).toEqual(["PROOF-SECRET", "PROOF-SECRET", "PROOF-SECRET"]);
  });

  it("an intent key recorded twice throws IntentKeyTaken", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      const err = await Promise.resolve()
        .then(() => j.insertIntent(newIntent("i2", { intentKey: "key-i1" })))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IntentKeyTaken);
      expect((err as IntentKeyTaken).intentKey).toBe("key-i1");
      expect(await j.intent("i2")).toBeUndefined();
    });
  });

  it("update is a compare-and-set on state and owner; with a payment patch, both land or neither", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      expect(await j.update("i1", { state: "quoted", ...PRICED }, NOW + 1, { state: "new", owner: "owner-a" })).toBe(
        true,
      );
      expect(await j.update("i1", { state: "failed" }, NOW + 2, { state: "new" })).toBe(false);
      expect(await j.update("i1", { state: "failed" }, NOW + 2, { owner: "owner-z" })).toBe(false);
      expect(await j.update("nope", { state: "failed" }, NOW + 2)).toBe(false);
      expect((await j.intent("i1"))!).toMatchObject({ state: "quoted", updatedAt: NOW + 1 });

      expect(
        await j.recordSigned(payment("q1", "i1"), {
          intentId: "i1",
          patch: { state: "signed", ...RESERVED, proof: "P" },
          now: NOW + 3,
          expect: { state: "quoted" },
        }),
      ).toBe(true);
      const pay = { quoteId: "q1", patch: { fate: "landed" as const, tx: "tx-1", checkedAt: NOW + 4 } };
      expect(await j.update("i1", { state: "paid" }, NOW + 4, { state: "quoted" }, pay)).toBe(false);
      expect((await j.payment("q1"))!).toMatchObject({ fate: "pending", tx: null, checkedAt: null });
      expect((await j.intent("i1"))!.state).toBe("signed");
      expect(await j.update("i1", { state: "paid" }, NOW + 4, { state: "signed", owner: "owner-a" }, pay)).toBe(true);
      expect(await j.payment("q1")).toEqual(payment("q1", "i1", { fate: "landed", tx: "tx-1", checkedAt: NOW + 4 }));
      expect((await j.intent("i1"))!.state).toBe("paid");
    });
  });

  it("keeps a message carrying a NUL character (a service's words can): SQLite as is, PostgreSQL as U+FFFD", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      expect(await j.update("i1", { attention: "the service said \u0000 here", state: "attention" }, NOW + 1)).toBe(
        true,
      );
      const attention = (await j.intent("i1"))!.attention!;
      expect(attention.replace("\u0000", "\uFFFD")).toBe("the service said \uFFFD here");
    });
  });

  it("recordSigned writes nothing when the intent moved, and refuses a second proof for one quote", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      expect(
        await j.recordSigned(payment("q1", "i1"), {
          intentId: "i1",
          patch: { state: "signed" },
          now: NOW + 1,
          expect: { state: "reserved" },
        }),
      ).toBe(false);
      expect(await j.payment("q1")).toBeUndefined();
      expect((await j.intent("i1"))!.state).toBe("new");

      expect(
        await j.recordSigned(payment("q1", "i1", { amount: U64_MAX }), {
          intentId: "i1",
          patch: { state: "signed", ...SIGNED },
          now: NOW + 1,
          expect: { state: "new" },
        }),
      ).toBe(true);
      expect((await j.payment("q1"))!.amount).toBe(U64_MAX);
      await expect(
        Promise.resolve().then(() =>
          j.recordSigned(payment("q1", "i1", { blockhash: "other" }), {
            intentId: "i1",
            patch: { state: "failed" },
            now: NOW + 2,
            expect: {},
          }),
        ),
      ).rejects.toThrow();
      expect((await j.payment("q1"))!.blockhash).toBe("Hash111");
      expect((await j.intent("i1"))!.state).toBe("signed");
      await j.updatePayment("q1", { sentAt: NOW + 3 });
      await j.updatePayment("q1", {});
      expect((await j.paymentsSince(NOW)).map((p) => [p.quoteId, p.sentAt])).toEqual([["q1", NOW + 3]]);
      expect(await j.paymentsSince(NOW + 11)).toEqual([]);
    });
  });

  it("keeps a payment's last valid height (u64) and its watch; lists only the watched ones, oldest first", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      const write = (p: ReturnType<typeof payment>, at: number) =>
        j.recordSigned(p, { intentId: "i1", patch: {}, now: at, expect: {} });
      expect(await write(payment("q1", "i1", { lastValidHeight: U64_MAX, signedAt: NOW + 30 }), NOW + 1)).toBe(true);
      expect(await write(payment("q2", "i1", { lastValidHeight: null, signedAt: NOW + 20 }), NOW + 2)).toBe(true);
      expect(await write(payment("q3", "i1", { signedAt: NOW + 10 }), NOW + 3)).toBe(true);
      expect(await j.payment("q1")).toMatchObject({ lastValidHeight: U64_MAX, watch: false });
      expect((await j.payment("q2"))!.lastValidHeight).toBeNull();
      expect(await j.watchedPayments(10)).toEqual([]);
      await j.updatePayment("q1", { fate: "never", watch: true });
      await j.updatePayment("q2", { fate: "never", watch: true, lastValidHeight: 42n });
      expect((await j.watchedPayments(10)).map((p) => [p.quoteId, p.lastValidHeight, p.watch])).toEqual([
        ["q2", 42n, true],
        ["q1", U64_MAX, true],
      ]);
      expect((await j.watchedPayments(1)).map((p) => p.quoteId)).toEqual(["q2"]);
      await j.update(
        "i1",
        { state: "attention" },
        NOW + 4,
        {},
        { quoteId: "q2", patch: { fate: "landed", watch: false } },
      );
      expect((await j.watchedPayments(10)).map((p) => p.quoteId)).toEqual(["q1"]);
    });
  });

  it("a lease is claimed only when free, expired or already ours; renew and release only by its owner", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      expect(await j.claim("i1", "owner-b", NOW, 30_000)).toBe(false);
      expect(await j.claim("i1", "owner-a", NOW, 30_000)).toBe(true);
      expect(await j.renew("i1", "owner-b", NOW, 30_000)).toBe(false);
      expect(await j.renew("i1", "owner-a", NOW + 10_000, 30_000)).toBe(true);
      expect(await j.claim("i1", "owner-b", NOW + 39_000, 30_000)).toBe(false);
      expect(await j.claim("i1", "owner-b", NOW + 40_001, 30_000)).toBe(true);
      expect(await j.renew("i1", "owner-a", NOW + 40_002, 30_000)).toBe(false);
      await j.release("i1", "owner-a");
      expect((await j.intent("i1"))!).toMatchObject({ leaseOwner: "owner-b", leaseUntil: NOW + 70_001 });
      await j.release("i1", "owner-b");
      expect((await j.intent("i1"))!).toMatchObject({ leaseOwner: null, leaseUntil: null });
      expect(await j.claim("i1", "owner-c", NOW, 1)).toBe(true);
    });
  });
});

describe("PostgreSQL migrations", () => {
  it("moving to schema 4 watches again every payment found unable to land before it (judged by a blockhash the service may have chosen)", async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(VERSION_TABLE);
      for (const m of PG_MIGRATIONS.slice(0, 3)) await client.query(m);
      await client.query(`INSERT INTO pam_schema (version) VALUES (3)`);
      for (const [quoteId, signedAt, fate] of [
        ["q-never", 1_000, "never"],
        ["q-landed", 2_000, "landed"],
        ["q-pending", 3_000, "pending"],
      ] as const) {
        await client.query(
          `INSERT INTO payments (quote_id, intent_id, attempt, amount, payee, blockhash, signed_at, fate) VALUES ($1, 'i1', 0, 288000, 'Payee', 'Hash', $2, $3)`,
          [quoteId, signedAt, fate],
        );
      }
    } finally {
      await client.end();
    }
    const j = await openPostgresJournal(url);
    try {
      expect((await j.health()).schemaVersion).toBe(PG_MIGRATIONS.length);
      expect((await j.watchedPayments(10)).map((p) => [p.quoteId, p.lastValidHeight, p.watch])).toEqual([
        ["q-never", null, true],
      ]);
      expect(await j.payment("q-pending")).toMatchObject({ lastValidHeight: null, watch: false, blockhash: "Hash" });
    } finally {
      await j.close();
    }
  });
});
