/**
 * Stripe-style idempotency (decisions.md) over real HTTP: replays, key reuse, concurrent
 * requests and which outcomes are stored. (Scope per API key and how long a key lasts:
 * idempotency-key-scope-and-lifetime.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import {
  QUOTE_BODY,
  SERVER,
  SERVER_INPUT,
  decodeBase64Json,
  expectError,
  freshKey,
  paidExecution,
  payHeaders,
  quoteAndSign,
} from "../helpers/api.js";
describe("idempotency", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

  const count = (table: "quotes" | "executions" | "payments") =>
    (t.sb.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

  describe("replay", () => {
    it("the same key and body after completion: the stored 201 and body, Idempotent-Replayed, no second charge or execution", async () => {
      const first = await paidExecution(t, "servers.provision", SERVER_INPUT);
      expect(first.res.headers["idempotent-replayed"]).toBeUndefined();
      await waitForExecution(t.call, first.res.body.executionId, (e) => e.status === "completed");
      const balance = await t.usdc(t.wallet.address);
      const executions = count("executions");
      const payments = count("payments");

      for (let i = 0; i < 2; i++) {
        const replay = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(first, first.key) });
        expect(replay.status).toBe(201);
        expect(replay.headers["idempotent-replayed"]).toBe("true");
        // The stored body: status still the "pending" of the create, the same ids.
        expect(replay.body).toEqual(first.res.body);
        expect(replay.headers["payment-response"]).toBe(first.res.headers["payment-response"]);
        expect(replay.headers["x-request-id"]).not.toBe(first.res.headers["x-request-id"]);
      }
      expect(await t.usdc(t.wallet.address)).toBe(balance);
      expect(count("executions")).toBe(executions);
      expect(count("payments")).toBe(payments);
      const mine = (await t.call("GET", "/executions?limit=100")).body.items.filter(
        (e: any) => e.quoteId === first.quote.quoteId,
      );
      expect(mine).toHaveLength(1);
    });

    it("a replay through a dedicated endpoint gives the same resource", async () => {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const headers = payHeaders(paid);
      const first = await t.call("POST", "/servers/provision", { body: SERVER_INPUT, headers });
      expect(first.status).toBe(201);
      const balance = await t.usdc(t.wallet.address);
      const replay = await t.call("POST", "/servers/provision", { body: SERVER_INPUT, headers });
      expect(replay.status).toBe(201);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body.serverId).toBe(first.body.serverId);
      expect(replay.body.executionId).toBe(first.body.executionId);
      expect(await t.usdc(t.wallet.address)).toBe(balance);
    });

    it("POST /quotes replayed: the same quote, no second one; a body with keys in another order is the same request", async () => {
      const key = freshKey("q");
      const first = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(first.status).toBe(201);
      const quotes = count("quotes");
      const reordered = {
        budget: { currency: "USDC", amount: "5" },
        input: { durationHours: 24, plan: "small", region: "eu-west-1" },
        action: "servers.provision",
      };
      const replay = await t.call("POST", "/quotes", { body: reordered, headers: { "idempotency-key": key } });
      expect(replay.status).toBe(201);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body).toEqual(first.body);
      expect(count("quotes")).toBe(quotes);
    });
  });

  describe("key reuse", () => {
    it("the same key with another body is 422, and the first outcome still replays", async () => {
      const key = freshKey("reuse");
      const first = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(first.status).toBe(201);
      const quotes = count("quotes");
      for (const body of [
        { ...QUOTE_BODY, budget: { amount: "6", currency: "USDC" } },
        { ...QUOTE_BODY, input: { ...SERVER_INPUT, plan: "nano" } },
        {
          action: "storage.purchase",
          input: { tier: "object", sizeGb: 1, durationMonths: 1, region: "eu-west-1" },
          budget: { amount: "5", currency: "USDC" },
        },
      ]) {
        expectError(
          await t.call("POST", "/quotes", { body, headers: { "idempotency-key": key } }),
          422,
          "idempotency_key_reused",
        );
      }
      expect(count("quotes")).toBe(quotes);
      const replay = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body.quoteId).toBe(first.body.quoteId);
    });

    it("the key is scoped by path: the same key on another endpoint is another request", async () => {
      const key = freshKey("path");
      const quote = await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } });
      expect(quote.status).toBe(201);
      const prepare = await t.call("POST", "/payments/prepare", {
        body: { quoteId: quote.body.quoteId },
        headers: { "idempotency-key": key },
      });
      expect(prepare.status).toBe(200);
      expect(prepare.headers["idempotent-replayed"]).toBeUndefined();
    });
  });

  describe("concurrent requests with one key", () => {
    it("POST /quotes x6 at once: one quote; the others replay it or are told it is in progress", async () => {
      const key = freshKey("cq");
      const quotes = count("quotes");
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": key } }),
        ),
      );
      const fresh = results.filter((r) => r.status === 201 && r.headers["idempotent-replayed"] !== "true");
      expect(fresh).toHaveLength(1);
      for (const r of results) {
        if (r === fresh[0]) continue;
        if (r.status === 409) expectError(r, 409, "idempotency_in_progress");
        else {
          expect(r.status).toBe(201);
          expect(r.headers["idempotent-replayed"]).toBe("true");
          expect(r.body.quoteId).toBe(fresh[0]!.body.quoteId);
        }
      }
      expect(count("quotes")).toBe(quotes + 1);
    });

    it("POST /executions x4 at once while the payment settles: one execution, one charge", async () => {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const headers = payHeaders(paid);
      const balance = await t.usdc(t.wallet.address);
      const results = await Promise.all(
        Array.from({ length: 4 }, () => t.call("POST", "/executions", { body: SERVER, headers })),
      );
      const fresh = results.filter((r) => r.status === 201 && r.headers["idempotent-replayed"] !== "true");
      expect(fresh, results.map((r) => r.text).join("\n")).toHaveLength(1);
      // Whether the others meet the first one running (409) or finished (replay) is timing;
      // errors-payment.test.ts makes sure the 409 is really seen. Either way: one execution, one charge.
      for (const r of results) {
        if (r === fresh[0]) continue;
        if (r.status === 409) {
          expectError(r, 409, "idempotency_in_progress");
        } else {
          expect(r.headers["idempotent-replayed"]).toBe("true");
          expect(r.body).toEqual(fresh[0]!.body);
        }
      }
      expect(await t.usdc(t.wallet.address)).toBe(balance - 288_000n);
      const rows = t.sb.db.prepare(`SELECT execution_id FROM executions WHERE quote_id = ?`).all(paid.quote.quoteId);
      expect(rows).toEqual([{ execution_id: fresh[0]!.body.executionId }]);
      // Once the first has finished, the same key replays it.
      const after = await t.call("POST", "/executions", { body: SERVER, headers });
      expect(after.headers["idempotent-replayed"]).toBe("true");
      expect(after.body.executionId).toBe(fresh[0]!.body.executionId);
    });
  });

  describe("which outcomes are stored", () => {
    it("a 4xx is stored and replayed as it was (its original requestId included)", async () => {
      const key = freshKey("bad");
      const body = { ...QUOTE_BODY, input: { ...SERVER_INPUT, durationHours: 0 } };
      const first = await t.call("POST", "/quotes", { body, headers: { "idempotency-key": key } });
      const error = expectError(first, 400, "invalid_request");
      const replay = await t.call("POST", "/quotes", { body, headers: { "idempotency-key": key } });
      expect(replay.status).toBe(400);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body).toEqual(first.body);
      expect(replay.body.error.requestId).toBe(error.requestId);
      expect(replay.headers["x-request-id"]).not.toBe(error.requestId);
    });

    it("a stored 4xx is replayed even after its cause went away", async () => {
      const created: string[] = [];
      let limited: any;
      const key = freshKey("wh-limit");
      const body = { url: "http://127.0.0.1:9/over-the-limit", events: ["execution.updated"] };
      for (let i = 0; i < 25 && !limited; i++) {
        const res = await t.call("POST", "/webhooks", {
          body: { url: `http://127.0.0.1:9/hook-${i}`, events: ["execution.updated"] },
        });
        if (res.status === 201) {
          created.push(res.body.webhookId);
          continue;
        }
        expectError(res, 400, "invalid_request");
        limited = await t.call("POST", "/webhooks", { body, headers: { "idempotency-key": key } });
        expectError(limited, 400, "invalid_request");
      }
      expect(limited).toBeDefined();
      expect((await t.call("DELETE", `/webhooks/${created[0]}`)).status).toBe(200);
      const replay = await t.call("POST", "/webhooks", { body, headers: { "idempotency-key": key } });
      expect(replay.status).toBe(400);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      // With a new key, the same registration now succeeds.
      const fresh = await t.call("POST", "/webhooks", { body, headers: { "idempotency-key": freshKey("wh") } });
      expect(fresh.status).toBe(201);
      for (const id of [...created.slice(1), fresh.body.webhookId]) await t.call("DELETE", `/webhooks/${id}`);
    });

    it("the 402 payment branch is not stored: pay, retry with the same key, 201", async () => {
      const quote = await t.quote("servers.provision", SERVER_INPUT);
      const key = freshKey("pay-later");
      const unpaid = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { "idempotency-key": key, "x-quote-id": quote.quoteId },
      });
      expectError(unpaid, 402, "payment_required");
      const proof = await t.proof(decodeBase64Json(unpaid.headers["payment-required"]).accepts[0]);
      const paid = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { "idempotency-key": key, "x-quote-id": quote.quoteId, "x-payment-proof": proof },
      });
      expect(paid.status, paid.text).toBe(201);
      expect(paid.headers["idempotent-replayed"]).toBeUndefined();
      const replay = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { "idempotency-key": key, "x-quote-id": quote.quoteId, "x-payment-proof": proof },
      });
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.body.executionId).toBe(paid.body.executionId);
    });

    it("a stock x402 client: 402 without a quote, pay the challenge, retry with the same key and PAYMENT-SIGNATURE", async () => {
      const key = freshKey("x402");
      const unpaid = await t.call("POST", "/executions", { body: SERVER, headers: { "idempotency-key": key } });
      const error = expectError(unpaid, 402, "payment_required");
      const balance = await t.usdc(t.wallet.address);
      const proof = await t.proof(decodeBase64Json(unpaid.headers["payment-required"]).accepts[0]);
      const paid = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { "idempotency-key": key, "payment-signature": proof },
      });
      expect(paid.status, paid.text).toBe(201);
      expect(paid.body.quoteId).toBe(error.quoteId);
      expect(await t.usdc(t.wallet.address)).toBe(balance - 288_000n);
    });

    it("a rejected proof (402 payment_invalid) is not stored: a good proof with the same key goes through", async () => {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const key = freshKey("bad-proof");
      const bad = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { ...payHeaders(paid, key), "x-payment-proof": "bm90IGEgcHJvb2Y=" },
      });
      expectError(bad, 402, "payment_invalid");
      const good = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid, key) });
      expect(good.status, good.text).toBe(201);
      expect(good.headers["idempotent-replayed"]).toBeUndefined();
    });

    it("a transient 409 idempotency_in_progress is not stored: once the other request is done, the same key gets the real outcome", async () => {
      // Two keys, one quote and proof, at once: the second meets the first one's payment
      // still settling. Its key must not keep answering "still running; retry shortly".
      let seen = false;
      for (let round = 0; round < 5 && !seen; round++) {
        const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
        const keys = [freshKey("one"), freshKey("two")];
        const results = await Promise.all(
          keys.map((k) => t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid, k) })),
        );
        const winner = results.findIndex((r) => r.status === 201);
        expect(winner, results.map((r) => r.text).join("\n")).toBeGreaterThanOrEqual(0);
        const loser = 1 - winner;
        if (results[loser]!.body?.error?.code !== "idempotency_in_progress") continue;
        seen = true;
        const retry = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid, keys[loser]) });
        const error = expectError(retry, 409, "quote_consumed");
        expect(error.executionId).toBe(results[winner]!.body.executionId);
      }
      expect(seen).toBe(true);
    });

    it("a 5xx is not stored: once the fault is gone, the same key runs again", async () => {
      const quote = await t.quote("servers.provision", SERVER_INPUT);
      const stored = (
        t.sb.db.prepare(`SELECT requirements FROM quotes WHERE quote_id = ?`).get(quote.quoteId) as {
          requirements: string;
        }
      ).requirements;
      t.sb.db.prepare(`UPDATE quotes SET requirements = '{broken' WHERE quote_id = ?`).run(quote.quoteId);
      const key = freshKey("5xx");
      const failed = await t.call("POST", "/payments/prepare", {
        body: { quoteId: quote.quoteId },
        headers: { "idempotency-key": key },
      });
      expectError(failed, 500, "internal_error");
      t.sb.db.prepare(`UPDATE quotes SET requirements = ? WHERE quote_id = ?`).run(stored, quote.quoteId);
      const retry = await t.call("POST", "/payments/prepare", {
        body: { quoteId: quote.quoteId },
        headers: { "idempotency-key": key },
      });
      expect(retry.status, retry.text).toBe(200);
      expect(retry.headers["idempotent-replayed"]).toBeUndefined();
      expect(retry.body.quoteId).toBe(quote.quoteId);
    });
  });
});
