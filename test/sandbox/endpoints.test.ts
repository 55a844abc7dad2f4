/**
 * Every endpoint of service-v1.md, and decisions.md's webhooks, answers as the two
 * documents say, over real HTTP against a running sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDecimal, parseDecimal } from "../../src/domain/money.js";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import {
  ACTION_NAMES,
  AGENT_PURCHASE_INPUT,
  COMPANY_INPUT,
  SERVER_INPUT,
  STORAGE_INPUT,
  decodeBase64Json,
  expectError,
  freshDomain,
  freshKey,
  payHeaders,
  quoteAndSign,
} from "../helpers/api.js";

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{32,88}$/;

const atomic = (decimal: string) => parseDecimal(decimal)!.toString();

describe("the v1 endpoints", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

  /** The record every paid create returns: decisions.md's execution record plus the resource id. */
  function expectCreated(res: any, action: string, quoteId: string, resourceKey: string, resourcePrefix: string) {
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      executionId: expect.stringMatching(/^exe_[A-Za-z0-9]+$/),
      status: "pending",
      action,
      createdAt: expect.stringMatching(ISO_UTC),
      quoteId,
      [resourceKey]: expect.stringMatching(new RegExp(`^${resourcePrefix}_[A-Za-z0-9]+$`)),
    });
    expect(res.headers["x-request-id"]).toMatch(/^req_/);
    expect(res.headers.location).toBe(`/v1/executions/${res.body.executionId}`);
    const settle = decodeBase64Json(res.headers["payment-response"]);
    expect(settle).toMatchObject({ success: true, network: t.sb.network, payer: t.wallet.address });
    expect(settle.transaction).toMatch(BASE58);
  }

  /** Quote, sign, POST to a dedicated endpoint; checks the charge is exactly the quote. */
  async function buyVia(
    path: string,
    action: string,
    quoteInput: Record<string, unknown>,
    body: Record<string, unknown> = quoteInput,
  ) {
    const paid = await quoteAndSign(t, action, quoteInput);
    const before = await t.usdc(t.wallet.address);
    const res = await t.call("POST", path, { body, headers: payHeaders(paid) });
    expect(await t.usdc(t.wallet.address)).toBe(before - BigInt(paid.quote.paymentRequirement.accepts[0].amount));
    return { res, quote: paid.quote };
  }

  const completed = (executionId: string) => waitForExecution(t.call, executionId, (e) => e.status === "completed");

  describe("actions", () => {
    it("GET /actions lists the six actions as {items: [{name, supportsAsync}]}", async () => {
      const res = await t.call("GET", "/actions");
      expect(res.status).toBe(200);
      expect(res.headers["x-request-id"]).toMatch(/^req_/);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.body.items.map((i: any) => i.name).sort()).toEqual([...ACTION_NAMES].sort());
      for (const item of res.body.items) {
        expect(item.name).toMatch(/^[a-z0-9-]+\.[a-z0-9-]+$/);
        expect(typeof item.supportsAsync).toBe("boolean");
      }
    });

    it.each(ACTION_NAMES)("GET /actions/%s: schema (JSON Schema 2020-12), pricing, budget hints", async (name) => {
      const res = await t.call("GET", `/actions/${name}`);
      expect(res.status).toBe(200);
      const a = res.body;
      expect(a).toMatchObject({ name, description: expect.any(String), supportsAsync: expect.any(Boolean) });
      expect(a.description.length).toBeGreaterThan(10);
      expect(a.inputSchema).toMatchObject({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: expect.any(Object),
        required: expect.any(Array),
      });
      for (const field of a.inputSchema.required) expect(Object.keys(a.inputSchema.properties)).toContain(field);
      expect(["fixed", "per_unit"]).toContain(a.pricing.model);
      expect(a.pricing.currency).toBe("USDC");
      expect(a.budgetHints.typical).toMatch(DECIMAL);
      expect(a.budgetHints.max).toMatch(DECIMAL);
      expect(parseDecimal(a.budgetHints.typical)!).toBeLessThanOrEqual(parseDecimal(a.budgetHints.max)!);
    });

    it("the published schemas name the documented input fields", async () => {
      const props = async (name: string) => (await t.call("GET", `/actions/${name}`)).body.inputSchema;
      const servers = await props("servers.provision");
      expect(Object.keys(servers.properties)).toEqual(
        expect.arrayContaining(["region", "plan", "image", "durationHours", "sshKeys"]),
      );
      expect(servers.required).toEqual(expect.arrayContaining(["region", "plan", "durationHours"]));
      expect(servers.properties.durationHours).toMatchObject({ type: "integer", minimum: 1, maximum: 8760 });
      const companies = await props("companies.create");
      expect(Object.keys(companies.properties)).toEqual(
        expect.arrayContaining(["jurisdiction", "companyType", "name", "owners", "registeredAgent"]),
      );
      expect(Object.keys(companies.properties.owners.items.properties).sort()).toEqual(["country", "fullName", "type"]);
      const agents = await props("agent-services.purchase");
      expect(Object.keys(agents.properties)).toEqual(
        expect.arrayContaining(["serviceId", "task", "deliveryMode", "maxPrice"]),
      );
    });
  });

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

  describe("executions", () => {
    it("POST /executions: 201 pending at once; GET /executions/{id} goes to completed with providerMeta and output", async () => {
      const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT);
      const res = await t.call("POST", "/executions", {
        body: { action: "servers.provision", input: SERVER_INPUT },
        // A slow provider: the create still answers at once.
        headers: { ...payHeaders(paid), "x-sandbox-delay-ms": "1500" },
      });
      expectCreated(res, "servers.provision", paid.quote.quoteId, "serverId", "svr");

      const read = await t.call("GET", `/executions/${res.body.executionId}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({
        executionId: res.body.executionId,
        action: "servers.provision",
        quoteId: paid.quote.quoteId,
        createdAt: res.body.createdAt,
        providerMeta: { provider: expect.any(String), region: "eu-west-1" },
      });
      expect(["pending", "processing"]).toContain(read.body.status);
      expect(read.body.output).toBeUndefined();
      expect(read.body.updatedAt).toMatch(ISO_UTC);

      const processing = await waitForExecution(t.call, res.body.executionId, (e) => e.status !== "pending");
      expect(processing.status).toBe("processing");
      const done = await waitForExecution(t.call, res.body.executionId, (e) => e.status === "completed");
      expect(done.providerMeta).toMatchObject({ provider: "sandbox-cloud", region: "eu-west-1" });
      expect(done.output).toMatchObject({
        serverId: res.body.serverId,
        status: "running",
        region: "eu-west-1",
        plan: "small",
      });
      expect(Date.parse(done.updatedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt) + 1000);
      expect(done.error).toBeUndefined();

      const server = await t.call("GET", `/servers/${res.body.serverId}`);
      expect(server.status).toBe(200);
      expect(server.body).toMatchObject({ serverId: res.body.serverId, status: "running", ipv4: done.output.ipv4 });
    });

    it("GET /executions lists the caller's executions, newest first, filtered by status", async () => {
      const list = await t.call("GET", "/executions?limit=100");
      expect(list.status).toBe(200);
      expect(list.body.items.length).toBeGreaterThan(0);
      const created = list.body.items.map((e: any) => Date.parse(e.createdAt));
      expect([...created].sort((a, b) => b - a)).toEqual(created);
      const completedOnly = await t.call("GET", "/executions?status=completed&limit=100");
      for (const e of completedOnly.body.items) expect(e.status).toBe("completed");
    });
  });

  describe("paid dedicated endpoints: the execution record plus the resource id, run to completed", () => {
    it("POST /companies, then GET /companies/{companyId} moves to formed with documents", async () => {
      const paid = await quoteAndSign(t, "companies.create", COMPANY_INPUT);
      const res = await t.call("POST", "/companies", {
        body: COMPANY_INPUT,
        headers: { ...payHeaders(paid), "x-sandbox-delay-ms": "800" },
      });
      expectCreated(res, "companies.create", paid.quote.quoteId, "companyId", "co");
      const companyId = res.body.companyId;

      const early = await t.call("GET", `/companies/${companyId}`);
      expect(early.status).toBe(200);
      expect(early.body).toMatchObject({
        companyId,
        name: COMPANY_INPUT.name,
        jurisdiction: "US-WY",
        companyType: "llc",
        owners: COMPANY_INPUT.owners,
        registeredAgent: false,
        executionId: res.body.executionId,
        documents: [],
        providerRefs: expect.any(Object),
      });
      expect(["pending", "filing"]).toContain(early.body.formationStatus);
      expect(early.body.createdAt).toMatch(ISO_UTC);

      const done = await completed(res.body.executionId);
      expect(done.output).toMatchObject({ companyId, formationStatus: "formed" });

      const formed = await t.call("GET", `/companies/${companyId}`);
      expect(formed.body.formationStatus).toBe("formed");
      expect(formed.body.documents.length).toBeGreaterThan(0);
      for (const d of formed.body.documents) {
        expect(d).toEqual({
          kind: expect.any(String),
          name: expect.any(String),
          url: expect.stringMatching(/^https:\/\//),
        });
      }
      expect(formed.body.documents.map((d: any) => d.kind)).toContain("certificate_of_formation");
      expect(Date.parse(formed.body.updatedAt)).toBeGreaterThan(Date.parse(early.body.updatedAt));
    });

    it("POST /servers/provision, then POST /servers/{serverId}/renew extends it", async () => {
      const { res, quote } = await buyVia("/servers/provision", "servers.provision", SERVER_INPUT);
      expectCreated(res, "servers.provision", quote.quoteId, "serverId", "svr");
      const serverId = res.body.serverId;
      const provisioned = await completed(res.body.executionId);
      expect(provisioned.output).toMatchObject({
        serverId,
        status: "running",
        region: "eu-west-1",
        plan: "small",
        image: "ubuntu-24.04",
      });
      expect(provisioned.output.ipv4).toMatch(/^203\.0\.113\.\d+$/);
      const firstExpiry = Date.parse(provisioned.output.expiresAt);
      expect(Math.abs(firstExpiry - Date.parse(provisioned.updatedAt) - 24 * 3_600_000)).toBeLessThan(1000);

      const renewInput = { serverId, durationHours: 10 };
      const renew = await buyVia(`/servers/${serverId}/renew`, "servers.renew", renewInput, { durationHours: 10 });
      // The small plan's hourly rate x 10.
      expect(renew.quote.amount).toBe("0.12");
      expectCreated(renew.res, "servers.renew", renew.quote.quoteId, "serverId", "svr");
      expect(renew.res.body.serverId).toBe(serverId);
      const renewed = await completed(renew.res.body.executionId);
      expect(renewed.output).toEqual({ serverId, extendedByHours: 10, expiresAt: expect.stringMatching(ISO_UTC) });
      expect(Date.parse(renewed.output.expiresAt)).toBe(firstExpiry + 10 * 3_600_000);
      expect((await t.call("GET", `/servers/${serverId}`)).body.expiresAt).toBe(renewed.output.expiresAt);
    });

    it("POST /domains/register", async () => {
      const domain = freshDomain("dev");
      const input = { domain, years: 1 };
      const { res, quote } = await buyVia("/domains/register", "domains.register", input);
      expect(quote.amount).toBe("15.00");
      expectCreated(res, "domains.register", quote.quoteId, "domainId", "dom");
      const done = await completed(res.body.executionId);
      expect(done.output).toMatchObject({ domainId: res.body.domainId, domain, status: "active", privacy: true });
      expect(done.output.nameservers.length).toBeGreaterThan(0);
      // The name is now taken.
      const again = await t.call("POST", "/quotes", {
        body: { action: "domains.register", input, budget: { amount: "100", currency: "USDC" } },
      });
      expectError(again, 400, "invalid_request");
    });

    it("POST /storage/purchase", async () => {
      const { res, quote } = await buyVia("/storage/purchase", "storage.purchase", STORAGE_INPUT);
      expectCreated(res, "storage.purchase", quote.quoteId, "bucketId", "bkt");
      const done = await completed(res.body.executionId);
      expect(done.output).toMatchObject({
        bucketId: res.body.bucketId,
        tier: "archive",
        sizeGb: 10,
        region: "eu-west-1",
      });
      expect(done.output.endpoint).toMatch(/^https:\/\/eu-west-1\./);
      expect(done.providerMeta).toMatchObject({ provider: expect.any(String), region: "eu-west-1" });
    });

    it("POST /agent-services/purchase", async () => {
      const { res, quote } = await buyVia("/agent-services/purchase", "agent-services.purchase", AGENT_PURCHASE_INPUT);
      expectCreated(res, "agent-services.purchase", quote.quoteId, "purchaseId", "pur");
      const done = await completed(res.body.executionId);
      expect(done.output).toMatchObject({
        purchaseId: res.body.purchaseId,
        serviceId: "svc_summarize01",
        deliveryMode: "json",
      });
      expect(done.output.deliverable).toMatchObject({
        format: "json",
        result: { summary: expect.stringContaining("Summarize the v1 spec") },
      });
    });
  });

  describe("POST /agent-services/search", () => {
    const search = (body: unknown) => t.call("POST", "/agent-services/search", { body });
    const price = (s: any) => parseDecimal(s.price.amount)!;

    it("without filters: every service, priced in USDC, with guarantees", async () => {
      const res = await search({});
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeGreaterThan(5);
      for (const s of res.body.items) {
        expect(s).toMatchObject({
          serviceId: expect.stringMatching(/^svc_/),
          taskTypes: expect.any(Array),
          price: { amount: expect.stringMatching(DECIMAL), currency: "USDC" },
          guarantees: { refundOnFailure: expect.any(Boolean), maxDeliverySeconds: expect.any(Number) },
        });
      }
    });

    it("by taskType", async () => {
      const res = await search({ taskType: "translation" });
      expect(res.status).toBe(200);
      expect(res.body.items.map((s: any) => s.serviceId).sort()).toEqual(["svc_translate01", "svc_translate02"]);
      for (const s of res.body.items) expect(s.taskTypes).toContain("translation");
      expect((await search({ taskType: "no-such-task" })).body.items).toEqual([]);
    });

    it("by priceBand", async () => {
      const all = (await search({})).body.items;
      const res = await search({ priceBand: { min: "1", max: "5" } });
      expect(res.status).toBe(200);
      const inBand = all.filter((s: any) => price(s) >= 1_000_000n && price(s) <= 5_000_000n);
      expect(inBand.length).toBeGreaterThan(0);
      expect(inBand.length).toBeLessThan(all.length);
      expect(res.body.items.map((s: any) => s.serviceId).sort()).toEqual(inBand.map((s: any) => s.serviceId).sort());
      const onlyMax = await search({ priceBand: { max: "0.10" } });
      for (const s of onlyMax.body.items) expect(price(s)).toBeLessThanOrEqual(100_000n);
      expect(onlyMax.body.items.map((s: any) => s.serviceId)).toContain("svc_summarize01");
    });

    it("by guarantees, and all filters together", async () => {
      const res = await search({ guarantees: { refundOnFailure: true, maxDeliverySeconds: 600 } });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeGreaterThan(0);
      for (const s of res.body.items) {
        expect(s.guarantees.refundOnFailure).toBe(true);
        expect(s.guarantees.maxDeliverySeconds).toBeLessThanOrEqual(600);
      }
      const ids = res.body.items.map((s: any) => s.serviceId);
      expect(ids).not.toContain("svc_summarize01"); // no refund on failure
      expect(ids).not.toContain("svc_research01"); // 1800 s

      const combined = await search({
        taskType: "translation",
        priceBand: { max: "1" },
        guarantees: { refundOnFailure: true },
      });
      expect(combined.body.items.map((s: any) => s.serviceId)).toEqual(["svc_translate01"]);
    });

    it("an invalid search is 400 invalid_request", async () => {
      expectError(await search({ priceBand: { min: "cheap" } }), 400, "invalid_request");
    });
  });

  describe("webhooks", () => {
    it("POST /webhooks gives {webhookId, secret}; GET lists it without the secret; DELETE removes it", async () => {
      const created = await t.call("POST", "/webhooks", {
        body: { url: "http://127.0.0.1:9/hook", events: ["execution.updated"] },
        headers: { "idempotency-key": freshKey("wh") },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body).toMatchObject({
        webhookId: expect.stringMatching(/^wh_[A-Za-z0-9]+$/),
        secret: expect.stringMatching(/^whsec_.{16,}$/),
        url: "http://127.0.0.1:9/hook",
        events: ["execution.updated"],
      });
      const { webhookId } = created.body;

      const list = await t.call("GET", "/webhooks");
      expect(list.status).toBe(200);
      const item = list.body.items.find((w: any) => w.webhookId === webhookId);
      expect(item).toMatchObject({ webhookId, url: "http://127.0.0.1:9/hook", events: ["execution.updated"] });
      expect(item.secret).toBeUndefined();
      expect(list.text).not.toContain(created.body.secret);

      const del = await t.call("DELETE", `/webhooks/${webhookId}`);
      expect(del.status).toBe(200);
      expect(del.body).toMatchObject({ webhookId, deleted: true });
      expect((await t.call("GET", "/webhooks")).body.items.map((w: any) => w.webhookId)).not.toContain(webhookId);
      expectError(await t.call("DELETE", `/webhooks/${webhookId}`), 404, "not_found");
    });

    it("an invalid registration is 400 invalid_request", async () => {
      expectError(
        await t.call("POST", "/webhooks", { body: { url: "not a url", events: ["execution.updated"] } }),
        400,
        "invalid_request",
      );
      expectError(
        await t.call("POST", "/webhooks", { body: { url: "http://127.0.0.1:9/x", events: ["quote.created"] } }),
        400,
        "invalid_request",
      );
    });
  });
});
