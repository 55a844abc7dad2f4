/**
 * Every error code of decisions.md's table, each provoked for real against a running
 * sandbox: status, the `{error: {code, message, requestId}}` envelope (requestId equal to
 * X-Request-Id) and the documented details.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import {
  COMPANY_INPUT,
  SERVER_INPUT,
  decodeBase64Json,
  expectError,
  freshKey,
  paidExecution,
  payHeaders,
  quoteAndSign,
} from "../helpers/api.js";

const SERVER = { action: "servers.provision", input: SERVER_INPUT };

describe("errors of decisions.md, provoked on one sandbox", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

  describe("400 invalid_request", () => {
    it("malformed JSON", async () => {
      const res = await t.call("POST", "/quotes", {
        rawBody: '{"action": "servers.provision", ',
        headers: { "content-type": "application/json", "idempotency-key": freshKey() },
      });
      const error = expectError(res, 400, "invalid_request");
      expect(error.issues).toEqual([{ path: "", message: expect.any(String) }]);
    });

    it("a body that is not valid UTF-8", async () => {
      const res = await t.call("POST", "/quotes", {
        rawBody: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        headers: { "content-type": "application/json" },
      });
      expectError(res, 400, "invalid_request");
    });

    it("missing fields, each named in issues", async () => {
      const res = await t.call("POST", "/quotes", { body: {} });
      const error = expectError(res, 400, "invalid_request");
      const paths = (error.issues as Array<{ path: string; message: string }>).map((i) => i.path);
      expect(paths).toEqual(expect.arrayContaining(["action", "input", "budget"]));
      for (const issue of error.issues) expect(issue.message).toEqual(expect.any(String));
    });

    it("missing fields on POST /executions and /payments/confirm", async () => {
      const exec = await t.call("POST", "/executions", { body: { action: "servers.provision" } });
      expect(expectError(exec, 400, "invalid_request").issues).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: "input" })]),
      );
      const confirm = await t.call("POST", "/payments/confirm", { body: { quoteId: "qt_x" } });
      expect(expectError(confirm, 400, "invalid_request").issues).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: "paymentProof" })]),
      );
    });

    it("input that does not match the action's schema, with the failing paths", async () => {
      const res = await t.call("POST", "/quotes", {
        body: {
          action: "servers.provision",
          input: { region: "mars-1", plan: "small", durationHours: 24 },
          budget: { amount: "5", currency: "USDC" },
        },
      });
      const error = expectError(res, 400, "invalid_request");
      expect(error.issues).toEqual([{ path: "input.region", message: expect.any(String) }]);

      const extra = await t.call("POST", "/quotes", {
        body: {
          action: "servers.provision",
          input: { ...SERVER_INPUT, color: "red" },
          budget: { amount: "5", currency: "USDC" },
        },
      });
      expect(expectError(extra, 400, "invalid_request").issues.length).toBeGreaterThan(0);

      const company = await t.call("POST", "/quotes", {
        body: {
          action: "companies.create",
          input: { ...COMPANY_INPUT, owners: [{ type: "individual", fullName: "X", country: "gb" }] },
          budget: { amount: "500", currency: "USDC" },
        },
      });
      expect(expectError(company, 400, "invalid_request").issues).toEqual([
        { path: "input.owners.0.country", message: expect.any(String) },
      ]);
    });

    it.each([0, 8761, 1.5, -1])("durationHours %s is rejected", async (durationHours) => {
      const res = await t.call("POST", "/quotes", {
        body: {
          action: "servers.provision",
          input: { ...SERVER_INPUT, durationHours },
          budget: { amount: "5000", currency: "USDC" },
        },
      });
      const error = expectError(res, 400, "invalid_request");
      expect(error.issues).toEqual([{ path: "input.durationHours", message: expect.any(String) }]);
    });

    it.each([1, 8760])("durationHours %s, the bounds, is accepted", async (durationHours) => {
      const res = await t.call("POST", "/quotes", {
        body: {
          action: "servers.provision",
          input: { ...SERVER_INPUT, durationHours },
          budget: { amount: "5000", currency: "USDC" },
        },
      });
      expect(res.status, res.text).toBe(201);
    });

    it("an Idempotency-Key longer than 255 characters", async () => {
      const res = await t.call("POST", "/quotes", {
        body: { ...SERVER, budget: { amount: "5", currency: "USDC" } },
        headers: { "idempotency-key": "k".repeat(256) },
      });
      expect(expectError(res, 400, "invalid_request").issues).toEqual([
        { path: "header.Idempotency-Key", message: expect.any(String) },
      ]);
    });
  });

  it("400 unsupported_currency: a budget in another currency than USDC", async () => {
    for (const currency of ["EUR", "usdc", "SOL"]) {
      const res = await t.call("POST", "/quotes", { body: { ...SERVER, budget: { amount: "5", currency } } });
      expectError(res, 400, "unsupported_currency");
    }
  });

  describe("401 unauthorized", () => {
    it("without a key, with an unknown key, with a malformed header", async () => {
      expectError(await t.call("GET", "/actions", { noAuth: true }), 401, "unauthorized");
      const stranger = apiClient(t.sb.baseUrl, "sk_not_a_key_of_this_sandbox");
      expectError(await stranger("GET", "/actions"), 401, "unauthorized");
      expectError(
        await stranger("POST", "/quotes", { body: { ...SERVER, budget: { amount: "5", currency: "USDC" } } }),
        401,
        "unauthorized",
      );
      expectError(
        await t.call("GET", "/actions", { noAuth: true, headers: { authorization: `Basic ${t.sb.apiKey}` } }),
        401,
        "unauthorized",
      );
      expectError(
        await t.call("GET", "/actions", { noAuth: true, headers: { authorization: `Bearer ${t.sb.apiKey}x` } }),
        401,
        "unauthorized",
      );
      // The right key is served.
      expect((await t.call("GET", "/actions")).status).toBe(200);
    });
  });

  describe("402 payment_required", () => {
    it("POST /executions without quote or proof: the challenge in PAYMENT-REQUIRED and in the body", async () => {
      const res = await t.call("POST", "/executions", { body: SERVER, headers: { "idempotency-key": freshKey() } });
      const error = expectError(res, 402, "payment_required");
      const header = decodeBase64Json(res.headers["payment-required"]);
      expect(header).toEqual(error.paymentRequired);
      expect(header).toMatchObject({ x402Version: 2, resource: { url: `${t.sb.baseUrl}/executions` } });
      expect(header.accepts).toHaveLength(1);
      expect(header.accepts[0]).toMatchObject({
        scheme: "exact",
        network: t.sb.network,
        amount: "288000",
        asset: t.sb.asset,
        payTo: t.sb.keys.treasury.address,
        extra: { feePayer: t.sb.keys.feePayer.address, memo: error.quoteId },
      });
      expect(error.quoteId).toMatch(/^qt_/);
      expect(error).toMatchObject({ amount: "0.288", currency: "USDC" });
    });

    it("POST /executions with an unpaid quote and no proof: the quote's own requirements", async () => {
      const quote = await t.quote("servers.provision", SERVER_INPUT);
      const res = await t.call("POST", "/executions", { body: SERVER, headers: { "x-quote-id": quote.quoteId } });
      const error = expectError(res, 402, "payment_required");
      expect(error.quoteId).toBe(quote.quoteId);
      const challenge = decodeBase64Json(res.headers["payment-required"]);
      const { extra: hintExtra, ...binding } = challenge.accepts[0];
      const { extra: quotedExtra, ...quoted } = quote.paymentRequirement.accepts[0];
      expect(binding).toEqual(quoted);
      expect({ feePayer: hintExtra.feePayer, memo: hintExtra.memo }).toEqual({
        feePayer: quotedExtra.feePayer,
        memo: quotedExtra.memo,
      });
    });

    it("a paid dedicated endpoint without payment", async () => {
      const res = await t.call("POST", "/companies", { body: COMPANY_INPUT });
      const error = expectError(res, 402, "payment_required");
      expect(decodeBase64Json(res.headers["payment-required"]).accepts[0].amount).toBe("49000000");
      expect(error.amount).toBe("49.00");
    });
  });

  describe("402 payment_invalid", () => {
    it("a garbage proof on /payments/confirm and on POST /executions, with reason and nothing charged", async () => {
      const before = await t.usdc(t.wallet.address);
      const quote = await t.quote("servers.provision", SERVER_INPUT);
      const confirm = await t.call("POST", "/payments/confirm", {
        body: { quoteId: quote.quoteId, paymentProof: "this-is-not-a-proof" },
      });
      const e1 = expectError(confirm, 402, "payment_invalid");
      expect(e1.reason).toBe("invalid_payload");
      expect(e1.quoteId).toBe(quote.quoteId);

      const exec = await t.call("POST", "/executions", {
        body: SERVER,
        headers: {
          "x-quote-id": quote.quoteId,
          "x-payment-proof": Buffer.from('{"x402Version":2}').toString("base64"),
        },
      });
      const e2 = expectError(exec, 402, "payment_invalid");
      expect(e2.reason).toBe("invalid_payload");
      // decisions.md: a 402 carries the challenge twice, header and body.
      expect(decodeBase64Json(exec.headers["payment-required"])).toEqual(e2.paymentRequired);
      expect(await t.usdc(t.wallet.address)).toBe(before);
    });

    it("a garbage proof on POST /executions without X-Quote-Id: payment_invalid, still with a challenge to pay", async () => {
      const res = await t.call("POST", "/executions", {
        body: SERVER,
        headers: { "payment-signature": "garbage-garbage" },
      });
      const error = expectError(res, 402, "payment_invalid");
      expect(error.reason).toBe("invalid_payload");
      const challenge = decodeBase64Json(res.headers["payment-required"]);
      expect(challenge).toEqual(error.paymentRequired);
      expect(challenge.accepts[0]).toMatchObject({ amount: "288000", extra: { memo: error.quoteId } });
    });

    it("a real proof for another quote's requirements: memo_mismatch", async () => {
      const a = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const b = await t.quote("servers.provision", SERVER_INPUT);
      const res = await t.call("POST", "/payments/confirm", { body: { quoteId: b.quoteId, paymentProof: a.proof } });
      expect(expectError(res, 402, "payment_invalid").reason).toBe("memo_mismatch");
    });
  });

  describe("404 not_found", () => {
    it("unknown action", async () => {
      expectError(await t.call("GET", "/actions/servers.teleport"), 404, "not_found");
      expectError(
        await t.call("POST", "/quotes", {
          body: { action: "servers.teleport", input: {}, budget: { amount: "1", currency: "USDC" } },
        }),
        404,
        "not_found",
      );
    });

    it("unknown quote, on read, prepare, confirm and execution", async () => {
      expectError(await t.call("GET", "/quotes/qt_doesnotexist"), 404, "not_found");
      expectError(
        await t.call("POST", "/payments/prepare", { body: { quoteId: "qt_doesnotexist" } }),
        404,
        "not_found",
      );
      expectError(
        await t.call("POST", "/payments/confirm", { body: { quoteId: "qt_doesnotexist", paymentProof: "abc" } }),
        404,
        "not_found",
      );
      expectError(
        await t.call("POST", "/executions", {
          body: SERVER,
          headers: { "x-quote-id": "qt_doesnotexist", "x-payment-proof": "abc" },
        }),
        404,
        "not_found",
      );
    });

    it("unknown execution, company, server, webhook", async () => {
      expectError(await t.call("GET", "/executions/exe_doesnotexist"), 404, "not_found");
      expectError(await t.call("GET", "/companies/co_doesnotexist"), 404, "not_found");
      expectError(await t.call("GET", "/servers/svr_doesnotexist"), 404, "not_found");
      expectError(
        await t.call("POST", "/servers/svr_doesnotexist/renew", { body: { durationHours: 2 } }),
        404,
        "not_found",
      );
      expectError(
        await t.call("POST", "/quotes", {
          body: {
            action: "servers.renew",
            input: { serverId: "svr_doesnotexist", durationHours: 2 },
            budget: { amount: "1", currency: "USDC" },
          },
        }),
        404,
        "not_found",
      );
      expectError(await t.call("DELETE", "/webhooks/wh_doesnotexist"), 404, "not_found");
    });

    it("unknown route, inside and outside /v1, and an unknown method", async () => {
      expectError(await t.call("GET", "/nothing-here"), 404, "not_found");
      expectError(await t.call("DELETE", "/actions"), 404, "not_found");
      const outside = await fetch(`${t.sb.baseUrl.replace(/\/v1$/, "")}/v2/actions`, {
        headers: { authorization: `Bearer ${t.sb.apiKey}` },
      });
      const text = await outside.text();
      expectError(
        { status: outside.status, headers: Object.fromEntries(outside.headers), body: JSON.parse(text), text },
        404,
        "not_found",
      );
    });
  });

  describe("409 idempotency_in_progress", () => {
    it("two concurrent POST /executions with one key while the first settles: one 201, the other 409 (or a replay); one charge", async () => {
      let sawInProgress = false;
      // The settlement awaits signing and the ledger, so the second request meets the first
      // one running; a few rounds make sure the 409 is really seen, not assumed.
      for (let round = 0; round < 5 && !sawInProgress; round++) {
        const before = await t.usdc(t.wallet.address);
        const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
        const headers = payHeaders(paid, freshKey("race"));
        const [a, b] = await Promise.all([0, 1].map(() => t.call("POST", "/executions", { body: SERVER, headers })));
        const results = [a!, b!];
        const created = results.filter((r) => r.status === 201 && r.headers["idempotent-replayed"] !== "true");
        expect(created, results.map((r) => r.text).join("\n")).toHaveLength(1);
        const other = results.find((r) => r !== created[0])!;
        if (other.status === 409) {
          expectError(other, 409, "idempotency_in_progress");
          expect(Number(other.headers["retry-after"])).toBeGreaterThanOrEqual(1);
          sawInProgress = true;
        } else {
          expect(other.status).toBe(201);
          expect(other.headers["idempotent-replayed"]).toBe("true");
          expect(other.body).toEqual(created[0]!.body);
        }
        // Charged once; the retry after the race is a replay of the one execution.
        expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
        const retry = await t.call("POST", "/executions", { body: SERVER, headers });
        expect(retry.status).toBe(201);
        expect(retry.headers["idempotent-replayed"]).toBe("true");
        expect(retry.body.executionId).toBe(created[0]!.body.executionId);
      }
      expect(sawInProgress).toBe(true);
    });
  });

  it("409 quote_consumed: a second execution for the same paid quote under another key carries the first executionId", async () => {
    const first = await paidExecution(t, "servers.provision", SERVER_INPUT);
    const before = await t.usdc(t.wallet.address);
    const again = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(first, freshKey("second")) });
    const error = expectError(again, 409, "quote_consumed");
    expect(error.executionId).toBe(first.res.body.executionId);
    expect(error.quoteId).toBe(first.quote.quoteId);
    // Even with a freshly signed proof for the same quote: still consumed, nothing charged.
    const fresh = await t.proof(first.quote.paymentRequirement.accepts[0]);
    const third = await t.call("POST", "/executions", {
      body: SERVER,
      headers: { "x-quote-id": first.quote.quoteId, "x-payment-proof": fresh },
    });
    expect(expectError(third, 409, "quote_consumed").executionId).toBe(first.res.body.executionId);
    expect(await t.usdc(t.wallet.address)).toBe(before);
  });

  it("409 quote_mismatch: the execution body differs from the quoted intent, and nothing is charged", async () => {
    const before = await t.usdc(t.wallet.address);
    const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
    for (const body of [
      { action: "servers.provision", input: { ...SERVER_INPUT, plan: "large" } },
      { action: "servers.provision", input: { ...SERVER_INPUT, image: "debian-12" } },
      { action: "storage.purchase", input: SERVER_INPUT },
    ]) {
      const res = await t.call("POST", "/executions", { body, headers: payHeaders(paid) });
      const error = expectError(res, 409, "quote_mismatch");
      expect(error.quoteId).toBe(paid.quote.quoteId);
      expect(error.quoted).toEqual({ action: "servers.provision", input: SERVER_INPUT });
    }
    expect(await t.usdc(t.wallet.address)).toBe(before);
    // The quoted body itself goes through with the same proof.
    const ok = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid) });
    expect(ok.status).toBe(201);
  });

  it("409 payment_already_used: a settled proof presented for another quote", async () => {
    const a = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
    const confirmed = await t.call("POST", "/payments/confirm", {
      body: { quoteId: a.quote.quoteId, paymentProof: a.proof },
    });
    expect(confirmed.status).toBe(200);
    const before = await t.usdc(t.wallet.address);

    const b = await t.quote("servers.provision", SERVER_INPUT);
    const viaConfirm = await t.call("POST", "/payments/confirm", {
      body: { quoteId: b.quoteId, paymentProof: a.proof },
    });
    expect(expectError(viaConfirm, 409, "payment_already_used").quoteId).toBe(b.quoteId);
    const viaExecution = await t.call("POST", "/executions", {
      body: SERVER,
      headers: { "x-quote-id": b.quoteId, "x-payment-proof": a.proof },
    });
    expectError(viaExecution, 409, "payment_already_used");
    expect(await t.usdc(t.wallet.address)).toBe(before);
    // Quote b is still unpaid.
    expectError(
      await t.call("POST", "/executions", { body: SERVER, headers: { "x-quote-id": b.quoteId } }),
      402,
      "payment_required",
    );
  });

  describe("413 payload_too_large", () => {
    it("a body over 64 KiB with Content-Length", async () => {
      const res = await t.call("POST", "/quotes", {
        body: { ...SERVER, budget: { amount: "5", currency: "USDC" }, padding: "x".repeat(65 * 1024) },
        headers: { "idempotency-key": freshKey() },
      });
      expectError(res, 413, "payload_too_large");
    });

    it("a chunked body that grows over 64 KiB", async () => {
      const chunk = new TextEncoder().encode(`"${"x".repeat(8 * 1024)}",`);
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(new TextEncoder().encode("["));
          if (sent >= 10) return controller.close();
          sent++;
          controller.enqueue(chunk);
        },
      });
      const res = await fetch(`${t.sb.baseUrl}/quotes`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.sb.apiKey}`, "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit);
      const text = await res.text();
      expectError(
        { status: res.status, headers: Object.fromEntries(res.headers), body: JSON.parse(text), text },
        413,
        "payload_too_large",
      );
    });

    it("64 KiB exactly is still read (and judged on its content)", async () => {
      const base = JSON.stringify({ ...SERVER, budget: { amount: "5", currency: "USDC" }, padding: "" });
      const padding = "x".repeat(64 * 1024 - base.length);
      const raw = JSON.stringify({ ...SERVER, budget: { amount: "5", currency: "USDC" }, padding });
      expect(Buffer.byteLength(raw)).toBe(64 * 1024);
      const res = await t.call("POST", "/quotes", { rawBody: raw, headers: { "content-type": "application/json" } });
      expect(res.status, res.text).toBe(201);
    });
  });

  it("415 unsupported_media_type: a body sent as text/plain or without a content type", async () => {
    const raw = JSON.stringify({ ...SERVER, budget: { amount: "5", currency: "USDC" } });
    expectError(
      await t.call("POST", "/quotes", { rawBody: raw, headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
    expectError(
      await t.call("POST", "/quotes", {
        rawBody: raw,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      415,
      "unsupported_media_type",
    );
    // The same body as JSON is accepted.
    expect(
      (
        await t.call("POST", "/quotes", {
          rawBody: raw,
          headers: { "content-type": "application/json; charset=utf-8" },
        })
      ).status,
    ).toBe(201);
  });

  it("422 idempotency_key_reused: the same key with a different body, or another X-Quote-Id", async () => {
    const key = freshKey("reuse");
    const first = await t.call("POST", "/quotes", {
      body: { ...SERVER, budget: { amount: "5", currency: "USDC" } },
      headers: { "idempotency-key": key },
    });
    expect(first.status).toBe(201);
    const other = await t.call("POST", "/quotes", {
      body: { ...SERVER, budget: { amount: "6", currency: "USDC" } },
      headers: { "idempotency-key": key },
    });
    expectError(other, 422, "idempotency_key_reused");

    const q1 = await t.quote("servers.provision", SERVER_INPUT);
    const q2 = await t.quote("servers.provision", SERVER_INPUT);
    const execKey = freshKey("exec");
    // A stored outcome under the key, then the same body for another quote under the same key.
    const mismatch = await t.call("POST", "/executions", {
      body: { action: "servers.provision", input: { ...SERVER_INPUT, plan: "nano" } },
      headers: { "idempotency-key": execKey, "x-quote-id": q1.quoteId },
    });
    expectError(mismatch, 409, "quote_mismatch");
    const reused = await t.call("POST", "/executions", {
      body: { action: "servers.provision", input: { ...SERVER_INPUT, plan: "nano" } },
      headers: { "idempotency-key": execKey, "x-quote-id": q2.quoteId },
    });
    expectError(reused, 422, "idempotency_key_reused");
  });

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

describe("410 quote_expired, on a sandbox with a movable clock", () => {
  let clock = Date.now();
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ now: () => clock, quoteTtlMs: 60_000 });
  });
  afterAll(() => t.close());

  it("an expired quote is 410 on prepare, confirm and POST /executions; nothing is charged", async () => {
    const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
    const expiresAt = Date.parse(paid.quote.expiresAt);
    expect(expiresAt).toBe(clock + 60_000);
    // Valid until expiresAt itself.
    clock = expiresAt;
    expect((await t.call("POST", "/payments/prepare", { body: { quoteId: paid.quote.quoteId } })).status).toBe(200);
    clock = expiresAt + 1;

    const before = await t.usdc(t.wallet.address);
    const prepare = await t.call("POST", "/payments/prepare", { body: { quoteId: paid.quote.quoteId } });
    expect(expectError(prepare, 410, "quote_expired")).toMatchObject({
      quoteId: paid.quote.quoteId,
      expiresAt: paid.quote.expiresAt,
    });
    const confirm = await t.call("POST", "/payments/confirm", {
      body: { quoteId: paid.quote.quoteId, paymentProof: paid.proof },
    });
    expect(expectError(confirm, 410, "quote_expired").quoteId).toBe(paid.quote.quoteId);
    const withProof = await t.call("POST", "/executions", { body: SERVER, headers: payHeaders(paid) });
    expectError(withProof, 410, "quote_expired");
    const withoutProof = await t.call("POST", "/executions", {
      body: SERVER,
      headers: { "x-quote-id": paid.quote.quoteId },
    });
    expectError(withoutProof, 410, "quote_expired");
    const dedicated = await t.call("POST", "/servers/provision", { body: SERVER_INPUT, headers: payHeaders(paid) });
    expectError(dedicated, 410, "quote_expired");
    expect(await t.usdc(t.wallet.address)).toBe(before);
  });
});

describe("429 rate_limited", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({
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

    await new Promise((r) => setTimeout(r, Number(limited[0]!.headers["retry-after"]) * 1000));
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
      await new Promise((r) => setTimeout(r, 1000 * Number(last.headers["retry-after"] ?? "1")));
    }
    expect(last.status, `retry with the same key after the lock is gone: ${last.text}`).toBe(201);
    expect(await t.usdc(t.wallet.address)).toBe(got503!.before - 288_000n);
  });
});
