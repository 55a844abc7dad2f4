/**
 * Stripe-style idempotency (decisions.md) over real HTTP: an Idempotency-Key is scoped per
 * API key, and lasts at least 24 h and across a restart of the service on the same home.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { QUOTE_BODY, SERVER, SERVER_INPUT, freshKey, paidExecution, payHeaders } from "../helpers/api.js";
describe("idempotency keys are scoped per API key", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ apiKeys: ["key-alpha-0001", "key-beta-0002"] });
  });
  afterAll(() => t.close());

  it("the same Idempotency-Key under two API keys: two independent requests", async () => {
    const alpha = apiClient(t.sb.baseUrl, "key-alpha-0001");
    const beta = apiClient(t.sb.baseUrl, "key-beta-0002");
    const key = freshKey("shared");
    const a = await alpha("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
    const b = await beta("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(b.body.quoteId).not.toBe(a.body.quoteId);
    // Another body under the same key is no reuse for the other API key either.
    const key2 = freshKey("shared2");
    expect((await alpha("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key2 } })).status).toBe(
      201,
    );
    const other = await beta("POST", "/quotes", {
      body: { ...QUOTE_BODY, budget: { amount: "9", currency: "USDC" } },
      headers: { "idempotency-key": key2 },
    });
    expect(other.status).toBe(201);
    // Each replays its own.
    const replayA = await alpha("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
    expect(replayA.headers["idempotent-replayed"]).toBe("true");
    expect(replayA.body.quoteId).toBe(a.body.quoteId);
    const replayB = await beta("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
    expect(replayB.body.quoteId).toBe(b.body.quoteId);
  });
});

describe("idempotency keys last", () => {
  it("at least 24 h", async () => {
    let clock = Date.now();
    const t = await startTestSandbox({ now: () => clock });
    try {
      const key = freshKey("day");
      const first = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(first.status).toBe(201);
      clock += 24 * 3_600_000 + 60_000;
      const replay = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body.quoteId).toBe(first.body.quoteId);
    } finally {
      await t.close();
    }
  });

  it("across a restart of the service on the same home", async () => {
    const home = mkdtempSync(join(tmpdir(), "pam-idem-restart-"));
    try {
      const first = await startTestSandbox({ home });
      let executionId: string;
      let key: string;
      let headers: Record<string, string>;
      let balance: bigint;
      try {
        const paid = await paidExecution(first, "servers.provision", SERVER_INPUT);
        executionId = paid.res.body.executionId;
        key = paid.key;
        headers = payHeaders(paid, key);
        await waitForExecution(first.call, executionId, (e) => e.status === "completed");
        balance = await first.usdc(first.wallet.address);
      } finally {
        await first.close();
      }

      const second = await startTestSandbox({ home });
      try {
        const replay = await second.call("POST", "/executions", { body: SERVER, headers });
        expect(replay.status, replay.text).toBe(201);
        expect(replay.headers["idempotent-replayed"]).toBe("true");
        expect(replay.body.executionId).toBe(executionId);
        expect(await second.usdc(second.wallet.address)).toBe(balance);
        expect((await second.call("GET", `/executions/${executionId}`)).body.status).toBe("completed");
      } finally {
        await second.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
