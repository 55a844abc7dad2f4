/**
 * The journal's contract, part two, against a real PostgreSQL server (one per file, started
 * by test/helpers/postgres.mjs) and the SQLite store too: the same calls must give the same
 * answers. The sums the budget reads (usage, spending by action and by day, the reservation
 * made on them, all exact past 2^53) and the lists the console, the reconciler, the audit and
 * doctor read. Part one (what is written for an intent) is journal-pg-intents.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseLost } from "../../src/engine/journal/port.js";
import { PG_MIGRATIONS } from "../../src/engine/journal/pg-schema.js";
import type { Approval, Intent, IntentPatch } from "../../src/engine/model/types.js";
import { DAY, EXECUTED, newIntent, NOW, PRICED, REQUIREMENTS, SIGNED, U64_MAX } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { contractStores, storeRunner } from "./journal-pg.fixtures.js";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(contractStores(() => server))("the journal's contract (%s)", (_kind, open) => {
  const withStore = storeRunner(open);

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
      // paid_fetch's purchases are shared out by origin.
      const origin = "https://api.example.com";
      const request = { url: `${origin}/x`, origin, method: "GET" as const, headers: {}, body: null };
      await j.insertIntent(newIntent("f1", { action: "paid_fetch", fetch: { origin, request } }));
      await j.update("f1", { budgetState: "spent", budgetAmount: 11n, budgetAt: NOW - 10 }, NOW);
      const byAction = await j.spendingByAction(NOW);
      expect(byAction).toEqual([
        { kind: "action", action: "a.y", day: 0n, reservedDay: 0n, total: 5n, refunded: 7n, count: 1 },
        { kind: "action", action: "b.x", day: big + 26n, reservedDay: big, total: big + 26n, refunded: 4n, count: 2 },
        { kind: "fetch", action: origin, day: 11n, reservedDay: 0n, total: 11n, refunded: 0n, count: 1 },
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
        [NOW - 10, 11n],
      ] as const)
        expected.set(dayOf(t), (expected.get(dayOf(t)) ?? 0n) + n);
      expect(byDay).toEqual([...expected].sort(([a], [b]) => a - b).map(([day, held]) => ({ day, held })));
      expect(await j.spendingByDay(NOW + 1)).toEqual([]);
    });
  });

  it("reserve writes the reservation only when decided ok, and throws LeaseLost (writing nothing) when the intent moved", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1"));
      const reserved = { state: "reserved", ...PRICED, requirements: REQUIREMENTS } as const;
      const no = await j.reserve("i1", 5n, NOW, () => ({ ok: false, why: "cap" }), reserved, true, {
        state: "new",
      });
      expect(no).toEqual({ ok: false, why: "cap" });
      expect((await j.intent("i1"))!).toMatchObject({ state: "new", budgetState: "none" });
      await expect(
        Promise.resolve().then(() =>
          j.reserve("i1", 5n, NOW, () => ({ ok: true }), reserved, true, { state: "quoted" }),
        ),
      ).rejects.toBeInstanceOf(LeaseLost);
      expect((await j.intent("i1"))!).toMatchObject({ state: "new", budgetState: "none" });
      let seen: unknown;
      const yes = await j.reserve("i1", 5n, NOW, (u) => ((seen = u), { ok: true }), reserved, false, {
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

  it("purchases page the fetch intents newest first by (createdAt, intentId), bytewise, by origin when asked", async () => {
    await withStore(async (j) => {
      const A = "https://a.example";
      const B = "http://127.0.0.1:8080";
      const fetches: Array<[string, number, string]> = [
        ["B", NOW, A],
        ["a", NOW, B],
        ["c", NOW, A],
        ["d", NOW + 1, B],
        ["e", NOW - 1, A],
      ];
      for (const [id, at, origin] of fetches) {
        const request = { url: `${origin}/r?k=v`, origin, method: "GET" as const, headers: {}, body: null };
        await j.insertIntent(newIntent(id, { createdAt: at, action: "paid_fetch", fetch: { origin, request } }));
      }
      // Actions are not purchases, whatever they bought; an executed action stays out too.
      await j.insertIntent(newIntent("act", { createdAt: NOW + 5 }));
      await j.update("act", { executionId: "ex-act", execStatus: "completed" }, NOW);
      const all: string[] = [];
      let cursor = { before: Number.MAX_SAFE_INTEGER, beforeId: "~" };
      for (;;) {
        const page = await j.purchases({ ...cursor, limit: 2 });
        if (page.length === 0) break;
        all.push(...page.map((i) => i.intentId));
        const last = page[page.length - 1]!;
        cursor = { before: last.createdAt, beforeId: last.intentId };
      }
      expect(all).toEqual(["d", "c", "a", "B", "e"]);
      const first = (await j.purchases({ before: NOW + 10, beforeId: "", limit: 1 }))[0]!;
      expect(first).toMatchObject({ intentId: "d", kind: "fetch", origin: B, action: "paid_fetch" });
      expect(first.request).toEqual({ url: `${B}/r?k=v`, origin: B, method: "GET", headers: {}, body: null });
      expect(
        (await j.purchases({ before: NOW + 10, beforeId: "", limit: 10, origin: A })).map((i) => i.intentId),
      ).toEqual(["c", "B", "e"]);
      expect((await j.purchases({ before: NOW, beforeId: "c", limit: 10, origin: A })).map((i) => i.intentId)).toEqual([
        "B",
        "e",
      ]);
      expect(await j.purchases({ before: NOW + 10, beforeId: "", limit: 10, origin: "https://none.example" })).toEqual(
        [],
      );
      expect((await j.executions({ before: NOW + 10, beforeId: "", limit: 10 })).map((i) => i.intentId)).toEqual([
        "act",
      ]);
    });
  });

  it("lists due polls by their schedule, and moves a pass's polls in one write unless another writer moved them", async () => {
    await withStore(async (j) => {
      for (const id of ["i1", "i2", "i3", "i4"]) await j.insertIntent(newIntent(id));
      await j.update("i1", { state: "executed", ...EXECUTED, nextPollAt: NOW + 10, pollIntervalMs: 1000 }, NOW);
      await j.update("i2", { state: "executed", ...EXECUTED, nextPollAt: NOW + 20, pollIntervalMs: 2000 }, NOW);
      await j.update("i3", { state: "executed", ...EXECUTED, nextPollAt: NOW + 30, settlement: "claimed" }, NOW);
      await j.update("i4", { state: "paid", ...SIGNED, nextPollAt: NOW + 40, settlement: "claimed" }, NOW);
      expect(await j.duePolls(NOW + 40, 10)).toEqual([
        { intentId: "i1", nextPollAt: NOW + 10, pollIntervalMs: 1000, settlementClaimed: false },
        { intentId: "i2", nextPollAt: NOW + 20, pollIntervalMs: 2000, settlementClaimed: false },
        // Only an executed intent's claimed settlement is ours to check.
        { intentId: "i3", nextPollAt: NOW + 30, pollIntervalMs: null, settlementClaimed: true },
        { intentId: "i4", nextPollAt: NOW + 40, pollIntervalMs: null, settlementClaimed: false },
      ]);
      expect(await j.reschedule([], NOW + 40)).toBe(0);
      // i2 was moved by someone else since it was read, i3 stopped: both left as they are.
      await j.update("i2", { nextPollAt: NOW + 25 }, NOW + 35);
      await j.update("i3", { nextPollAt: null }, NOW + 35);
      const moved = await j.reschedule(
        [
          { intentId: "i1", nextPollAt: NOW + 2040, pollIntervalMs: 2000, seenNextPollAt: NOW + 10 },
          { intentId: "i2", nextPollAt: NOW + 4040, pollIntervalMs: 4000, seenNextPollAt: NOW + 20 },
          { intentId: "i3", nextPollAt: NOW + 1040, pollIntervalMs: 1000, seenNextPollAt: NOW + 30 },
          { intentId: "i4", nextPollAt: NOW + 1040, pollIntervalMs: 1000, seenNextPollAt: NOW + 30 },
          { intentId: "i5", nextPollAt: NOW + 1040, pollIntervalMs: 1000, seenNextPollAt: NOW + 30 },
        ],
        NOW + 40,
      );
      expect(moved).toBe(1);
      expect(await j.intent("i1")).toMatchObject({ nextPollAt: NOW + 2040, pollIntervalMs: 2000, updatedAt: NOW + 40 });
      expect(await j.intent("i2")).toMatchObject({ nextPollAt: NOW + 25, pollIntervalMs: 2000, updatedAt: NOW + 35 });
      expect(await j.intent("i3")).toMatchObject({ nextPollAt: null, pollIntervalMs: null, updatedAt: NOW + 35 });
      expect(await j.intent("i4")).toMatchObject({ nextPollAt: NOW + 40, pollIntervalMs: null });
      expect((await j.duePolls(NOW + 2040, 10)).map((p) => p.intentId)).toEqual(["i2", "i4", "i1"]);
    });
  });

  it("answers the reconciler's, the audit's and doctor's reads", async () => {
    await withStore(async (j) => {
      await j.insertIntent(newIntent("i1", { createdAt: NOW - 10 }));
      await j.insertIntent(newIntent("i2", { service: "other" }));
      await j.insertIntent(newIntent("i3", { createdAt: NOW + 10 }));
      await j.update("i1", { state: "executed", ...EXECUTED, nextPollAt: NOW + 500, refundTx: "rtx-1" }, NOW);
      await j.update(
        "i3",
        { state: "paid", ...SIGNED, budgetState: "spent", nextPollAt: NOW + 100, attention: "odd" },
        NOW,
      );
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
