/**
 * The journal on PostgreSQL, what only a fleet can show (on a real server started by
 * test/helpers/postgres.mjs): several stores, each with its own pool as separate servers
 * would have, migrating, reserving and deciding at once on one database; and the password
 * never shown.
 */
import { createServer } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../../src/engine/journal/pg-schema.js";
import { SchemaTooNew } from "../../src/engine/journal/port.js";
import { JournalUnavailable, openPostgresJournal, redactUrl } from "../../src/engine/journal/postgres.js";
import { newIntent, NOW } from "../helpers/journal-records.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { pollUntil } from "../helpers/wait.js";

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
});
afterAll(async () => {
  await server?.stop();
});

describe("the journal on PostgreSQL, shared by a fleet", () => {
  it("five servers opening a fresh database at once all succeed: the migrations run once", async () => {
    const url = await server.createDatabase();
    const opened = await Promise.allSettled(Array.from({ length: 5 }, () => openPostgresJournal(url, { poolSize: 2 })));
    const stores = opened.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    try {
      expect(opened.map((o) => (o.status === "rejected" ? String(o.reason) : "ok"))).toEqual([
        "ok",
        "ok",
        "ok",
        "ok",
        "ok",
      ]);
      for (const s of stores) expect((await s.health()).schemaVersion).toBe(PG_MIGRATIONS.length);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const { rows } = await c.query(`SELECT version FROM pam_schema`);
      const tables = await c.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`);
      await c.end();
      expect(rows).toEqual([{ version: PG_MIGRATIONS.length }]);
      expect(tables.rows.map((r: { tablename: string }) => r.tablename)).toEqual([
        "approvals",
        "catalog",
        "intents",
        "meta",
        "pam_schema",
        "passkeys",
        "payment_freeze",
        "payments",
        "response_bodies",
        "seller_words",
        "transcripts",
      ]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("refuses a database at a newer schema version than this build knows, and leaves no connection open", async () => {
    const url = await server.createDatabase();
    await (await openPostgresJournal(url)).close();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`UPDATE pam_schema SET version = 99`);
      const err = await openPostgresJournal(url, { applicationName: "pam-too-new" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaTooNew);
      expect(err).toMatchObject({ found: 99, known: PG_MIGRATIONS.length });
      expect((err as Error).message).toContain(redactUrl(url));
      expect((err as Error).message).not.toContain(encodeURIComponent(server.password));
      // The pool has ended; the server notices each backend's exit a moment later.
      const open = async () =>
        (await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pam-too-new'`))
          .rows[0].n as number;
      await expect.poll(open, { timeout: 3_000, interval: 50 }).toBe(0);
    } finally {
      await c.end();
    }
  });

  it("8 servers × 25 concurrent reservations against a cap that admits 60: exactly 60 succeed, to the unit", async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all(Array.from({ length: 8 }, () => openPostgresJournal(url)));
    try {
      const amount = 1_000_003n;
      const cap = 60n * amount;
      const ids = Array.from({ length: 200 }, (_, i) => `r${i}`);
      await Promise.all(ids.map((id) => stores[0]!.insertIntent(newIntent(id, { leaseOwner: `owner-${id}` }))));
      const results = await Promise.all(
        ids.map((id, i) =>
          stores[i % 8]!.reserve(id, amount, NOW, (u) => ({ ok: u.day + amount <= cap }), { state: "reserved" }, true, {
            state: "new",
            owner: `owner-${id}`,
          }),
        ),
      );
      expect(results.filter((r) => r.ok).length).toBe(60);
      expect(await stores[3]!.usage(NOW)).toEqual({ day: cap, total: cap });
      expect(await stores[5]!.reserved(NOW)).toBe(cap);
      expect((await stores[7]!.health()).unfinished).toBe(200);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("an approval decided by 10 callers on 3 servers at once is decided once", async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all(Array.from({ length: 3 }, () => openPostgresJournal(url, { poolSize: 4 })));
    try {
      await stores[0]!.insertApproval({
        approvalId: "ap",
        intentId: "i",
        quoteId: "q",
        action: "x",
        amount: 1n,
        payee: "P",
        expiresAt: NOW + 1,
        status: "pending",
        createdAt: NOW,
        decidedAt: null,
      });
      const won = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          stores[i % 3]!.decideApproval("ap", "pending", i % 2 ? "approved" : "declined", NOW + i),
        ),
      );
      expect(won.filter(Boolean).length).toBe(1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("a reservation stuck behind a holder of the budget lock gives up after the statement timeout, writing nothing", async () => {
    const url = await server.createDatabase();
    const j = await openPostgresJournal(url, { statementTimeoutMs: 300, applicationName: "pam-timeout" });
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await j.insertIntent(newIntent("i1"));
      // The key the store uses: "pam_budg" in ASCII.
      await holder.query(`SELECT pg_advisory_lock(${0x70616d5f62756467n})`);
      const started = Date.now();
      const waiting = Promise.resolve(
        j.reserve("i1", 5n, NOW, () => ({ ok: true }), { state: "reserved" }, true, { state: "new" }),
      ).catch((e: unknown) => e);
      // Seen waiting on the lock in the server itself (polled well within the 300 ms timeout).
      const { value: blocked } = await pollUntil(
        () =>
          holder.query(
            `SELECT wait_event_type FROM pg_stat_activity WHERE application_name = 'pam-timeout' AND state = 'active'`,
          ),
        (r) => r.rows[0]?.wait_event_type === "Lock",
        { timeoutMs: 250, intervalMs: 10 },
      );
      expect(blocked.rows).toEqual([{ wait_event_type: "Lock" }]);
      expect(await waiting).toMatchObject({ code: "57014" }); // query_canceled: statement timeout
      expect(Date.now() - started).toBeLessThan(5_000);
      await holder.query(`SELECT pg_advisory_unlock_all()`);
      expect((await j.intent("i1"))!).toMatchObject({ state: "new", budgetState: "none" });
      expect(
        (await j.reserve("i1", 5n, NOW, () => ({ ok: true }), { state: "reserved" }, true, { state: "new" })).ok,
      ).toBe(true);
    } finally {
      await holder.end();
      await j.close();
    }
  });

  it("a live lease is not broken for looking like a dead pid: its owner may run on another machine", async () => {
    const url = await server.createDatabase();
    const j = await openPostgresJournal(url);
    try {
      await j.insertIntent(newIntent("i1", { leaseOwner: "2147483646-elsewhere", leaseUntil: NOW + 60_000 }));
      expect(await j.claim("i1", "owner-b", NOW, 30_000)).toBe(false);
      expect(await j.claim("i1", "owner-b", NOW + 60_001, 30_000)).toBe(true);
    } finally {
      await j.close();
    }
  });

  it("two servers rewriting one service's catalog at once both succeed, and one whole catalog remains", async () => {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([openPostgresJournal(url), openPostgresJournal(url)]);
    try {
      const list = (tag: string) => Array.from({ length: 20 }, (_, i) => ({ name: `n${i}`, detail: { tag } }));
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a! : b!).saveCatalog("svc", list(`t${i}`), NOW + i)),
      );
      const found = await a!.catalog("svc");
      expect(found.length).toBe(20);
      expect(new Set(found.map((r) => JSON.stringify(r.detail))).size).toBe(1);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
    }
  });

  it("never shows the password: not in location, health, nor the message of a failed connection", async () => {
    const url = await server.createDatabase();
    const forms = [server.password, encodeURIComponent(server.password)];
    const j = await openPostgresJournal(url);
    try {
      expect(j.location).toBe(url.replace(`:${encodeURIComponent(server.password)}@`, "@"));
      for (const f of forms) {
        expect(j.location).not.toContain(f);
        expect(JSON.stringify(await j.health())).not.toContain(f);
      }
    } finally {
      await j.close();
    }

    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });
    const wrongPort = url.replace(`:${server.port}/`, `:${closedPort}/`);
    const refused = await openPostgresJournal(wrongPort).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(JournalUnavailable);
    expect((refused as JournalUnavailable).code).toBe("ECONNREFUSED");
    expect((refused as Error).message).toContain(`127.0.0.1:${closedPort}`);
    for (const f of forms) expect((refused as Error).message).not.toContain(f);

    const wrongPassword = "hunter2/not@it";
    const denied = await openPostgresJournal(
      url.replace(encodeURIComponent(server.password), encodeURIComponent(wrongPassword)),
    ).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(JournalUnavailable);
    expect((denied as JournalUnavailable).code).toBe("28P01");
    for (const f of [wrongPassword, encodeURIComponent(wrongPassword)])
      expect((denied as Error).message).not.toContain(f);
  });

  it("redactUrl drops the password from a URL's authority and its parameters, and from a key=value string", () => {
    expect(redactUrl("postgres://u:s3cret@db.example:5432/pam?sslmode=verify-full")).toBe(
      "postgres://u@db.example:5432/pam?sslmode=verify-full",
    );
    expect(redactUrl("postgresql://u@h/db?password=s3cret&application_name=x")).toBe(
      "postgresql://u@h/db?application_name=x",
    );
    expect(redactUrl("postgres://u:s3cret@/db?host=/run/postgresql")).not.toContain("s3cret");
    expect(redactUrl("host=h user=u password=s3cret dbname=pam")).toBe("host=h user=u password=*** dbname=pam");
  });
});
