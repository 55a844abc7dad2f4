/**
 * The errors of decisions.md's table that say the service cannot serve, each provoked for
 * real against a running sandbox: 500 (a corrupt stored quote; the service keeps serving),
 * 429 (past the rate limit's burst) and 503 (storage locked by another process). Each checks
 * the status, the `{error: {code, message, requestId}}` envelope and the documented details.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { SERVER, SERVER_INPUT, expectError, freshKey, payHeaders, quoteAndSign } from "../helpers/api.js";
import { elapse } from "../helpers/wait.js";

describe("errors of decisions.md, provoked on one sandbox", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

  it("500 internal_error: a corrupt stored quote, and the service keeps serving", async () => {
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    t.sb.db.prepare(`UPDATE quotes SET requirements = ? WHERE quote_id = ?`).run("{not json", quote.quoteId);
    const res = await t.call("GET", `/quotes/${quote.quoteId}`);
    const error = expectError(res, 500, "internal_error");
    expect(error.message).not.toMatch(/SyntaxError|JSON|at .*\.ts/);
    expect(Object.keys(error).sort()).toEqual(["code", "message", "requestId"]);
    expectError(await t.call("POST", "/payments/prepare", { body: { quoteId: quote.quoteId } }), 500, "internal_error");
    // Still serving: reads and writes.
    expect((await t.call("GET", "/actions")).status).toBe(200);
    const other = await t.quote("servers.provision", SERVER_INPUT);
    expect((await t.call("GET", `/quotes/${other.quoteId}`)).status).toBe(200);
  });
});

describe("429 rate_limited", () => {
  let t: TestSandbox;
  // The sandbox's clock runs ahead of the wall clock by `skew`: Retry-After's seconds pass by
  // moving it on, not by waiting them out.
  let skew = 0;
  beforeAll(async () => {
    t = await startTestSandbox({
      now: () => Date.now() + skew,
      apiKeys: ["key-limited-0001", "key-other-00002"],
      rateLimit: { perSecond: 2, burst: 3 },
    });
  });
  afterAll(() => t.close());

  it("past the burst: 429 with Retry-After; another API key is still served; the key recovers", async () => {
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await t.call("GET", "/actions"));
    expect(results.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
    const limited = results.slice(3);
    for (const res of limited) {
      expectError(res, 429, "rate_limited");
      expect(res.headers["retry-after"]).toMatch(/^\d+$/);
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    const other = apiClient(t.sb.baseUrl, "key-other-00002");
    expect((await other("GET", "/actions")).status).toBe(200);
    // A 429 answers POSTs as well, before anything is done.
    expectError(
      await t.call("POST", "/quotes", { body: { ...SERVER, budget: { amount: "1", currency: "USDC" } } }),
      429,
      "rate_limited",
    );

    skew += Number(limited[0]!.headers["retry-after"]) * 1000;
    expect((await t.call("GET", "/actions")).status).toBe(200);
  });
});

describe("503 unavailable, storage locked by another process", () => {
  let t: TestSandbox;
  let locker: Database.Database;
  beforeAll(async () => {
    t = await startTestSandbox({ busyTimeoutMs: 100 });
    locker = new Database(join(t.sb.home, "sandbox.sqlite"));
  });
  afterAll(async () => {
    if (locker.inTransaction) locker.exec("ROLLBACK");
    locker.close();
    await t.close();
  });

  it("a state-changing request meets the write lock: 503 with Retry-After; with the lock gone, the same key succeeds", async () => {
    const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
    const key = freshKey("locked");
    const before = await t.usdc(t.wallet.address);

    locker.exec("BEGIN IMMEDIATE");
    const quoteKey = freshKey("q");
    const quoteBody = { ...SERVER, budget: { amount: "5", currency: "USDC" } };
    const lockedQuote = await t.call("POST", "/quotes", { body: quoteBody, headers: { "idempotency-key": quoteKey } });
    expectError(lockedQuote, 503, "unavailable");
    expect(Number(lockedQuote.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    const lockedExec = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid, key) });
    expectError(lockedExec, 503, "unavailable");
    expect(Number(lockedExec.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    // Reads still work while a writer holds the lock (WAL).
    expect((await t.call("GET", `/quotes/${paid.quote.quoteId}`)).status).toBe(200);
    locker.exec("COMMIT");

    expect(await t.usdc(t.wallet.address)).toBe(before);
    const quote = await t.call("POST", "/quotes", { body: quoteBody, headers: { "idempotency-key": quoteKey } });
    expect(quote.status).toBe(201);
    expect(quote.headers["idempotent-replayed"]).toBeUndefined();
    const exec = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid, key) });
    expect(exec.status, exec.text).toBe(201);
    expect(exec.headers["idempotent-replayed"]).toBeUndefined();
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    await waitForExecution(t.call, exec.body.executionId, (e) => e.status === "completed");
  });

  it("a 503 in the middle of a paid request (the lock taken while the payment settles): the same key succeeds once the lock is gone", async () => {
    // The lock is taken from a poller as soon as the request's idempotency row is claimed:
    // the request is then awaiting its settlement, and meets the lock when it writes.
    let got503: { key: string; headers: Record<string, string>; before: bigint } | undefined;
    for (let attempt = 0; attempt < 5 && !got503; attempt++) {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const key = freshKey("mid");
      const headers = payHeaders(paid, key);
      const before = await t.usdc(t.wallet.address);
      let released: Promise<void> | undefined;
      const poll = setInterval(() => {
        if (released) return;
        const row = locker.prepare(`SELECT state FROM idempotency WHERE key = ?`).get(key) as
          { state: string } | undefined;
        if (row?.state !== "running") return;
        locker.exec("BEGIN IMMEDIATE");
        released = new Promise((ok) =>
          setTimeout(() => {
            locker.exec("COMMIT");
            ok();
          }, 600),
        );
      }, 0);
      const res = await t.call("POST", "/executions", { body: SERVER, headers });
      clearInterval(poll);
      await released;
      if (res.status === 201) continue; // the lock came too late; try again
      expectError(res, 503, "unavailable");
      got503 = { key, headers, before };
    }
    expect(got503, "a 503 in the middle of the request").toBeDefined();

    // "503 unavailable: safe to retry with the same key" (decisions.md).
    let last: any;
    for (let i = 0; i < 3; i++) {
      last = await t.call("POST", "/executions", { body: SERVER, headers: got503!.headers });
      if (last.status === 201) break;
      // Only if the service still says no: a client obeys its Retry-After (the lock is gone already).
      await elapse(1000 * Number(last.headers["retry-after"] ?? "1"));
    }
    expect(last.status, `retry with the same key after the lock is gone: ${last.text}`).toBe(201);
    expect(await t.usdc(t.wallet.address)).toBe(got503!.before - 288_000n);
  });
});
