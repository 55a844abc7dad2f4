/**
 * The errors of decisions.md's table that refuse the request itself, each provoked for real
 * against a running sandbox: 400 (malformed, invalid or unsupported), 401, 404, 413 and 415.
 * Each checks the status, the `{error: {code, message, requestId}}` envelope (requestId equal
 * to X-Request-Id) and the documented details.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { COMPANY_INPUT, SERVER, SERVER_INPUT, expectError, freshKey } from "../helpers/api.js";

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
});
