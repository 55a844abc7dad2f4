/**
 * The errors of decisions.md's table along the paid flow, each provoked for real against a
 * running sandbox: 402 (payment required or invalid), 409 (a key in progress, a quote
 * consumed or mismatched, a payment already used), 410 (an expired quote, on a sandbox with
 * a movable clock) and 422 (an Idempotency-Key reused). Each checks the status, the
 * `{error: {code, message, requestId}}` envelope and the documented details.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import {
  COMPANY_INPUT,
  SERVER,
  SERVER_INPUT,
  decodeBase64Json,
  expectError,
  freshKey,
  paidExecution,
  payHeaders,
  quoteAndSign,
} from "../helpers/api.js";

describe("errors of decisions.md, provoked on one sandbox", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

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
