/**
 * The journal's contract, against a real PostgreSQL server (one per file, started by
 * test/helpers/postgres.mjs) and, where it costs nothing, the SQLite store too: the same
 * calls must give the same answers. What only a fleet shows is journal-pg-fleet.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IntentKeyTaken, LeaseLost, type JournalOptions, type JournalStore } from "../../src/engine/journal/port.js";
import pg from "pg";
import { PG_MIGRATIONS, VERSION_TABLE } from "../../src/engine/journal/pg-schema.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import type { Approval, Intent, IntentPatch } from "../../src/engine/model/types.js";
import { DAY, newIntent, NOW, payment, U64_MAX } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

/** Every field a patch can write, with values that test each codec: u64 amounts, JSON, text, numbers. */
const FULL_PATCH: IntentPatch = {
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

type Opened = { store: JournalStore; done(): Promise<void> };
const STORES: Array<[string, (o?: JournalOptions) => Promise<Opened>]> = [
  [
    "postgres",
    async (o) => {
      const j = await openPostgresJournal(await server.createDatabase(), o);
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

describe.each(STORES)("the journal's contract (%s)", (_kind, open) => {
  async function withStore(fn: (j: JournalStore) => Promise<void>, o?: JournalOptions): Promise<void> {
    const { store, done } = await open(o);
    try {
      await fn(store);
    } finally {
      await done();
    }
  }

  it("round-trips every field of an intent: u64 amounts, JSON, nulls, and hands each proof read to onSecret", async () => {
    const secrets: string[] = [];
    await withStore(
      async (j) => {
        await j.insertIntent(newIntent("i1", { agentBudget: U64_MAX, callId: "c1" }));
        const fresh = await j.intent("i1");
        expect(fresh).toEqual({
          ...newIntent("i1", { agentBudget: U64_MAX, callId: "c1" }),
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
      expect(await j.update("i1", { state: "quoted" }, NOW + 1, { state: "new", owner: "owner-a" })).toBe(true);
      expect(await j.update("i1", { state: "failed" }, NOW + 2, { state: "new" })).toBe(false);
      expect(await j.update("i1", { state: "failed" }, NOW + 2, { owner: "owner-z" })).toBe(false);
      expect(await j.update("nope", { state: "failed" }, NOW + 2)).toBe(false);
      expect((await j.intent("i1"))!).toMatchObject({ state: "quoted", updatedAt: NOW + 1 });

      expect(
        await j.recordSigned(payment("q1", "i1"), {
          intentId: "i1",
          patch: { state: "signed", proof: "P" },
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
          patch: { state: "signed" },
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

  it("usage, reserved and refundedTotal are exact sums past 2^53, over the rolling day and in total", async () => {
    await withStore(async (j) => {
      const big = 9_007_199_254_740_993n; // 2^53 + 1: a double cannot hold it
      const rows: Array<[string, IntentPatch]> = [
        ["r-in", { budgetState: "reserved", budgetAmount: big, budgetAt: NOW - 1000 }],
        [
          "s-in",
          {
            budgetState: "spent",
            budgetAmount: big + 2n,
            budgetAt: NOW - DAY + 1,
            refundCredit: 3n,
            refundState: "verified",
          },
        ],
        ["s-old", { budgetState: "spent", budgetAmount: 7n, budgetAt: NOW - DAY, refundCredit: 2n }],
        ["r-old", { budgetState: "reserved", budgetAmount: 11n, budgetAt: NOW - 2 * DAY }],
        ["rel", { budgetState: "released", budgetAmount: 1000n, budgetAt: NOW, refundCredit: 5n }],
        ["none", {}],
      ];
      for (const [id, patch] of rows) {
        await j.insertIntent(newIntent(id));
        await j.update(id, patch, NOW);
      }
      expect(await j.usage(NOW)).toEqual({ day: big + big + 2n - 3n, total: big + big + 2n - 3n + 5n + 11n });
      expect(await j.usage(NOW, false)).toEqual({ day: 2n * big - 1n, total: 0n });
      expect(await j.reserved()).toBe(big + 11n);
      expect(await j.reserved(NOW)).toBe(big);
      expect(await j.refundedTotal()).toBe(10n);
    });
  });

  it("spendingByAction and spendingByDay split usage, reserved and refunds exactly, by action and by UTC day", async () => {
    await withStore(async (j) => {
      const big = 9_007_199_254_740_993n;
      const day0 = Math.floor(NOW / DAY) * DAY; // midnight UTC of NOW's day
      const rows: Array<[string, string, IntentPatch]> = [
        ["a1", "b.x", { budgetState: "reserved", budgetAmount: big, budgetAt: NOW - 1000 }],
        [
          "a2",
          "b.x",
          { budgetState: "spent", budgetAmount: 30n, budgetAt: day0 - 1, refundCredit: 4n, refundState: "verified" },
        ],
        ["a3", "a.y", { budgetState: "spent", budgetAmount: 7n, budgetAt: NOW - DAY, refundCredit: 2n }],
        ["a4", "a.y", { budgetState: "released", budgetAmount: 1000n, budgetAt: NOW, refundCredit: 5n }],
        ["a5", "c.z", { budgetState: "released", budgetAmount: 9n, budgetAt: NOW }],
      ];
      for (const [id, action, patch] of rows) {
        await j.insertIntent(newIntent(id, { action }));
        await j.update(id, patch, NOW);
      }
      const byAction = await j.spendingByAction(NOW);
      expect(byAction).toEqual([
        { action: "a.y", day: 0n, reservedDay: 0n, total: 5n, refunded: 7n, count: 1 },
        { action: "b.x", day: big + 26n, reservedDay: big, total: big + 26n, refunded: 4n, count: 2 },
      ]);
      const usage = await j.usage(NOW);
      expect(byAction.reduce((s, a) => s + a.day, 0n)).toBe(usage.day);
      expect(byAction.reduce((s, a) => s + a.total, 0n)).toBe(usage.total);
      expect(byAction.reduce((s, a) => s + a.reservedDay, 0n)).toBe(await j.reserved(NOW));
      expect(byAction.reduce((s, a) => s + a.refunded, 0n)).toBe(await j.refundedTotal());
      const dayOf = (t: number) => Math.floor(t / DAY);
      const byDay = await j.spendingByDay(day0 - DAY);
      const expected = new Map<number, bigint>();
      for (const [t, n] of [
        [NOW - DAY, 5n],
        [day0 - 1, 26n],
        [NOW - 1000, big],
      ] as const)
        expected.set(dayOf(t), (expected.get(dayOf(t)) ?? 0n) + n);
      expect(byDay).toEqual([...expected].sort(([a], [b]) => a - b).map(([day, held]) => ({ day, held })));
      expect(await j.spendingByDay(NOW + 1)).toEqual([]);
    });
  });

  it("reserve writes the reservation only when decided ok, and throws LeaseLost (writing nothing) when the intent moved", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      const no = await j.reserve("i1", 5n, NOW, () => ({ ok: false, why: "cap" }), { state: "reserved" }, true, {
        state: "new",
      });
      expect(no).toEqual({ ok: false, why: "cap" });
      expect((await j.intent("i1"))!).toMatchObject({ state: "new", budgetState: "none" });
      await expect(
        Promise.resolve().then(() =>
          j.reserve("i1", 5n, NOW, () => ({ ok: true }), { state: "reserved" }, true, { state: "quoted" }),
        ),
      ).rejects.toBeInstanceOf(LeaseLost);
      expect((await j.intent("i1"))!).toMatchObject({ state: "new", budgetState: "none" });
      let seen: unknown;
      const yes = await j.reserve("i1", 5n, NOW, (u) => ((seen = u), { ok: true }), { state: "reserved" }, false, {
        state: "new",
        owner: "owner-a",
      });
      expect(yes).toEqual({ ok: true });
      expect(seen).toEqual({ day: 0n, total: 0n });
      expect((await j.intent("i1"))!).toMatchObject({
        state: "reserved",
        budgetState: "reserved",
        budgetAmount: 5n,
        budgetAt: NOW,
      });
      expect(await j.usage(NOW)).toEqual({ day: 5n, total: 5n });
    });
  });

  it("indexes each call's transcript once, newest first, with the host and home that hold it", async () => {
    await withStore(async (j) => {
      await j.indexTranscript({ callId: "call_a", createdAt: NOW, host: "host-1", home: "/h1" });
      await j.indexTranscript({ callId: "call_b", createdAt: NOW + 5, host: "host-2", home: "/h2" });
      await j.indexTranscript({ callId: "call_a", createdAt: NOW + 9, host: "host-3", home: "/h3" }); // already indexed: kept as it was
      expect(await j.transcriptIndex(10)).toEqual([
        { callId: "call_b", createdAt: NOW + 5, host: "host-2", home: "/h2" },
        { callId: "call_a", createdAt: NOW, host: "host-1", home: "/h1" },
      ]);
      expect(await j.transcriptIndex(1)).toHaveLength(1);
    });
  });

  it("approvals round-trip and are decided once", async () => {
    await withStore(async (j) => {
      const a: Approval = {
        approvalId: "ap1",
        intentId: "i1",
        quoteId: "q1",
        action: "x",
        amount: U64_MAX,
        payee: null,
        expiresAt: NOW + 1000,
        status: "pending",
        createdAt: NOW,
        decidedAt: null,
      };
      await j.insertApproval(a);
      await j.insertApproval({ ...a, approvalId: "ap2", expiresAt: NOW - 1 });
      expect(await j.approval("ap1")).toEqual(a);
      expect((await j.pendingApprovals(NOW)).map((x) => x.approvalId)).toEqual(["ap1"]);
      expect(await j.decideApproval("ap1", "pending", "approved", NOW + 1)).toBe(true);
      expect(await j.decideApproval("ap1", "pending", "declined", NOW + 2)).toBe(false);
      expect(await j.decideApproval("ap1", "approved", "used", NOW + 3)).toBe(true);
      expect(await j.approval("ap1")).toEqual({ ...a, status: "used", decidedAt: NOW + 3 });
      expect(await j.approval("nope")).toBeUndefined();
    });
  });

  it("executions page newest first by (createdAt, intentId), bytewise, with filters", async () => {
    await withStore(async (j) => {
      // Same createdAt for B, a, c: the id breaks the tie, bytewise ("B" < "a").
      const ids: Array<[string, number, string, string]> = [
        ["B", NOW, "completed", "x"],
        ["a", NOW, "failed", "y"],
        ["c", NOW, "completed", "y"],
        ["d", NOW + 1, "completed", "x"],
        ["e", NOW - 1, "processing", "x"],
      ];
      for (const [id, at, status, action] of ids) {
        await j.insertIntent(newIntent(id, { createdAt: at, action }));
        await j.update(id, { executionId: `ex-${id}`, execStatus: status as Intent["execStatus"] }, at);
      }
      await j.insertIntent(newIntent("no-exec", { createdAt: NOW + 5 }));
      const all: string[] = [];
      let cursor = { before: Number.MAX_SAFE_INTEGER, beforeId: "" };
      for (;;) {
        const page = await j.executions({ ...cursor, limit: 2 });
        if (page.length === 0) break;
        all.push(...page.map((i) => i.intentId));
        const last = page[page.length - 1]!;
        cursor = { before: last.createdAt, beforeId: last.intentId };
      }
      expect(all).toEqual(["d", "c", "a", "B", "e"]);
      expect(
        (await j.executions({ before: NOW + 10, beforeId: "", status: "completed", action: "y", limit: 10 })).map(
          (i) => i.intentId,
        ),
      ).toEqual(["c"]);
      expect((await j.executions({ before: NOW, beforeId: "c", limit: 10 })).map((i) => i.intentId)).toEqual([
        "a",
        "B",
        "e",
      ]);
    });
  });

  it("answers the reconciler's, the audit's and doctor's reads", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1", { createdAt: NOW - 10 }));
      await j.insertIntent(newIntent("i2", { service: "other" }));
      await j.insertIntent(newIntent("i3", { createdAt: NOW + 10 }));
      await j.update("i1", { state: "executed", nextPollAt: NOW + 500, refundTx: "rtx-1" }, NOW);
      await j.update("i3", { state: "paid", nextPollAt: NOW + 100, attention: "odd" }, NOW);
      expect((await j.unfinished("svc")).map((i) => i.intentId)).toEqual(["i3"]);
      expect((await j.duePolls(NOW + 100, 10)).map((i) => i.intentId)).toEqual(["i3"]);
      expect((await j.duePolls(NOW + 1000, 1)).map((i) => i.intentId)).toEqual(["i3"]);
      expect(await j.nextPollAt()).toBe(NOW + 100);
      expect(await j.refundTxOwner("rtx-1")).toBe("i1");
      expect(await j.refundTxOwner("rtx-2")).toBeUndefined();
      expect((await j.needingAttention(10)).map((i) => i.intentId)).toEqual(["i3"]);
      expect((await j.intentsSince(NOW)).map((i) => i.intentId)).toEqual(["i2", "i3"]);
      const h = await j.health();
      expect(h).toMatchObject({
        store: j.kind,
        location: j.location,
        integrity: "ok",
        schemaVersion: PG_MIGRATIONS.length,
        total: 3,
        unfinished: 2,
        attention: 1,
        following: 2,
      });

      await j.saveCatalog(
        "svc",
        [
          { name: "b", detail: { price: "1" } },
          { name: "a", detail: [1, null] },
        ],
        NOW,
      );
      await j.saveCatalog("other", [{ name: "z", detail: {} }], NOW);
      expect(await j.catalog("svc")).toEqual([
        { name: "a", detail: [1, null], fetchedAt: NOW },
        { name: "b", detail: { price: "1" }, fetchedAt: NOW },
      ]);
      await j.saveCatalog("svc", [{ name: "c", detail: "s" }], NOW + 1);
      expect(await j.catalog("svc")).toEqual([{ name: "c", detail: "s", fetchedAt: NOW + 1 }]);
      await j.saveCatalog("svc", [], NOW + 2);
      expect(await j.catalog("svc")).toEqual([]);
      expect((await j.catalog("other")).length).toBe(1);
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
