/**
 * The execution endpoints of service-v1.md over real HTTP against a running sandbox: POST and
 * GET /executions, and every paid dedicated endpoint (companies, servers and their renewal,
 * domains, storage, agent services) run to completed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import {
  AGENT_PURCHASE_INPUT,
  BASE58,
  COMPANY_INPUT,
  ISO_UTC,
  SERVER_INPUT,
  STORAGE_INPUT,
  decodeBase64Json,
  expectError,
  freshDomain,
  payHeaders,
  quoteAndSign,
} from "../helpers/api.js";

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
});
