/**
 * The quote and payment endpoints of service-v1.md over real HTTP against a running sandbox:
 * POST /quotes and its prices, POST /payments/prepare and /payments/confirm, with the ledger
 * moving exactly the quoted amount.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDecimal, parseDecimal } from "../../src/domain/money.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import {
  AGENT_PURCHASE_INPUT,
  BASE58,
  COMPANY_INPUT,
  ISO_UTC,
  SERVER_INPUT,
  STORAGE_INPUT,
  freshDomain,
  freshKey,
  quoteAndSign,
} from "../helpers/api.js";

const atomic = (decimal: string) => parseDecimal(decimal)!.toString();

describe("the v1 endpoints", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

  describe("quotes and payments", () => {
    it("POST /quotes: 201 with the quote fields, the x402 requirement and withinBudget", async () => {
      const before = Date.now();
      const res = await t.call("POST", "/quotes", {
        body: { action: "servers.provision", input: SERVER_INPUT, budget: { amount: "1.00", currency: "USDC" } },
        headers: { "idempotency-key": freshKey("q") },
      });
      expect(res.status, res.text).toBe(201);
      const q = res.body;
      expect(q).toMatchObject({
        quoteId: expect.stringMatching(/^qt_[A-Za-z0-9]+$/),
        action: "servers.provision",
        amount: "0.288",
        currency: "USDC",
        withinBudget: true,
      });
      expect(q.expiresAt).toMatch(ISO_UTC);
      // Five minutes by default.
      const lifetime = Date.parse(q.expiresAt) - before;
      expect(lifetime).toBeGreaterThan(299_000);
      expect(lifetime).toBeLessThanOrEqual(301_000);
      expect(q.paymentRequirement).toMatchObject({
        scheme: "x402",
        resource: "/executions",
        network: "solana",
        x402Version: 2,
      });
      expect(q.paymentRequirement.accepts).toHaveLength(1);
      expect(q.paymentRequirement.accepts[0]).toEqual({
        scheme: "exact",
        network: t.sb.network,
        amount: "288000",
        asset: t.sb.asset,
        payTo: t.sb.keys.treasury.address,
        maxTimeoutSeconds: expect.any(Number),
        extra: expect.objectContaining({
          feePayer: t.sb.keys.feePayer.address,
          memo: q.quoteId,
          decimals: 6,
          recentBlockhash: expect.stringMatching(BASE58),
        }),
      });
      expect(t.sb.network).toMatch(/^solana:[1-9A-HJ-NP-Za-km-z]+$/);

      const again = await t.call("GET", `/quotes/${q.quoteId}`);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ quoteId: q.quoteId, amount: q.amount, expiresAt: q.expiresAt });
    });

    it("POST /quotes returns the quote even above the budget, with withinBudget false", async () => {
      for (const [budget, within] of [
        ["0.287999", false],
        ["0.288", true],
        ["0.01", false],
      ] as const) {
        const res = await t.call("POST", "/quotes", {
          body: { action: "servers.provision", input: SERVER_INPUT, budget: { amount: budget, currency: "USDC" } },
        });
        expect(res.status, res.text).toBe(201);
        expect(res.body).toMatchObject({ amount: "0.288", withinBudget: within });
        expect(res.body.paymentRequirement.accepts[0].amount).toBe("288000");
      }
    });

    it("prices follow the published pricing of each action", async () => {
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ["servers.provision", { ...SERVER_INPUT, plan: "medium", durationHours: 10 }, "0.45"],
        ["companies.create", COMPANY_INPUT, "49.00"],
        ["companies.create", { ...COMPANY_INPUT, jurisdiction: "US-DE", registeredAgent: true }, "138.00"],
        ["domains.register", { domain: freshDomain("com"), years: 2 }, "24.00"],
        ["storage.purchase", STORAGE_INPUT, "0.08"],
        ["agent-services.purchase", AGENT_PURCHASE_INPUT, "0.10"],
      ];
      for (const [action, input, amount] of cases) {
        const q = await t.quote(action, input);
        expect({ action, amount: q.amount }).toEqual({ action, amount });
        expect(q.paymentRequirement.accepts[0].amount).toBe(atomic(amount));
        expect(formatDecimal(BigInt(q.paymentRequirement.accepts[0].amount))).toBe(amount);
      }
    });

    it("POST /payments/prepare: {quoteId, paymentRequired} as x402 v2, bound to the quote", async () => {
      const quote = await t.quote("servers.provision", SERVER_INPUT);
      const res = await t.call("POST", "/payments/prepare", {
        body: { quoteId: quote.quoteId },
        headers: { "idempotency-key": freshKey("prep") },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.quoteId).toBe(quote.quoteId);
      const pr = res.body.paymentRequired;
      expect(pr).toMatchObject({ x402Version: 2, resource: { url: `${t.sb.baseUrl}/executions` } });
      expect(pr.accepts).toHaveLength(1);
      const { extra, ...binding } = pr.accepts[0];
      const { extra: quotedExtra, ...quoted } = quote.paymentRequirement.accepts[0];
      expect(binding).toEqual(quoted);
      expect(extra).toMatchObject({
        feePayer: quotedExtra.feePayer,
        memo: quote.quoteId,
        recentBlockhash: expect.stringMatching(BASE58),
      });
    });

    it("a proof built from the prepared challenge (a fresher hint) pays the quote", async () => {
      const quote = await t.quote("storage.purchase", STORAGE_INPUT);
      const prepared = await t.call("POST", "/payments/prepare", { body: { quoteId: quote.quoteId } });
      const proof = await t.proof(prepared.body.paymentRequired.accepts[0]);
      const confirm = await t.call("POST", "/payments/confirm", {
        body: { quoteId: quote.quoteId, paymentProof: proof },
      });
      expect(confirm.status, confirm.text).toBe(200);
      expect(confirm.body.status).toBe("settled");
    });

    it("POST /payments/confirm: 200 settled payment; the ledger moved exactly the amount; confirm again is the same payment", async () => {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const payer = await t.usdc(t.wallet.address);
      const treasury = await t.usdc(t.sb.keys.treasury.address);
      const res = await t.call("POST", "/payments/confirm", {
        body: { quoteId: paid.quote.quoteId, paymentProof: paid.proof },
        headers: { "idempotency-key": freshKey("confirm") },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        paymentId: expect.stringMatching(/^pay_[A-Za-z0-9]+$/),
        quoteId: paid.quote.quoteId,
        status: "settled",
        amount: "0.288",
        currency: "USDC",
        network: t.sb.network,
        transaction: expect.stringMatching(BASE58),
        payer: t.wallet.address,
      });
      expect(await t.usdc(t.wallet.address)).toBe(payer - 288_000n);
      expect(await t.usdc(t.sb.keys.treasury.address)).toBe(treasury + 288_000n);

      // The same proof again (new key): the same payment, nothing settled twice.
      const again = await t.call("POST", "/payments/confirm", {
        body: { quoteId: paid.quote.quoteId, paymentProof: paid.proof },
      });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(res.body);
      expect(await t.usdc(t.wallet.address)).toBe(payer - 288_000n);

      // The quote is paid: an execution needs no proof now.
      const exec = await t.call("POST", "/executions", {
        body: { action: "servers.provision", input: SERVER_INPUT },
        headers: { "x-quote-id": paid.quote.quoteId, "idempotency-key": freshKey("exec") },
      });
      expect(exec.status, exec.text).toBe(201);
      expect(await t.usdc(t.wallet.address)).toBe(payer - 288_000n);
    });
  });
});
