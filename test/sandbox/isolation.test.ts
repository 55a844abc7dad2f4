/**
 * Cross-key isolation: what one API key creates (quotes, payments, executions, companies,
 * servers, webhooks and their deliveries) does not exist for another key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, startTestSandbox, waitForExecution, type Call, type TestSandbox } from "../helpers/sandbox.js";
import {
  COMPANY_INPUT,
  SERVER_INPUT,
  expectError,
  freshKey,
  paidExecution,
  payHeaders,
  quoteAndSign,
  startReceiver,
} from "../helpers/api.js";

const ALPHA = "key-alpha-0001";
const BETA = "key-beta-0002";
const SERVER = { action: "servers.provision", input: SERVER_INPUT };

describe("isolation between API keys", () => {
  let t: TestSandbox;
  let alpha: Call;
  let beta: Call;
  beforeAll(async () => {
    t = await startTestSandbox({ apiKeys: [ALPHA, BETA], allowPrivateWebhooks: true });
    alpha = apiClient(t.sb.baseUrl, ALPHA);
    beta = apiClient(t.sb.baseUrl, BETA);
  });
  afterAll(() => t.close());

  it("another key's quote is 404 on read, prepare, confirm and execution, and nothing is charged", async () => {
    const paid = await quoteAndSign(t, "servers.provision", SERVER_INPUT); // t.call is alpha
    const { quoteId } = paid.quote;
    const balance = await t.usdc(t.wallet.address);

    expectError(await beta("GET", `/quotes/${quoteId}`), 404, "not_found");
    expectError(await beta("POST", "/payments/prepare", { body: { quoteId } }), 404, "not_found");
    expectError(
      await beta("POST", "/payments/confirm", { body: { quoteId, paymentProof: paid.proof } }),
      404,
      "not_found",
    );
    expectError(await beta("POST", "/executions", { body: SERVER, headers: payHeaders(paid) }), 404, "not_found");
    expectError(
      await beta("POST", "/servers/provision", { body: SERVER_INPUT, headers: payHeaders(paid) }),
      404,
      "not_found",
    );
    expect(await t.usdc(t.wallet.address)).toBe(balance);

    // The owner still can.
    expect((await alpha("GET", `/quotes/${quoteId}`)).status).toBe(200);
    const own = await alpha("POST", "/executions", { body: SERVER, headers: payHeaders(paid) });
    expect(own.status, own.text).toBe(201);
  });

  it("another key's execution is 404, and GET /executions lists only one's own", async () => {
    const a = await paidExecution(t, "servers.provision", SERVER_INPUT, { call: alpha });
    const b = await paidExecution(t, "servers.provision", SERVER_INPUT, { call: beta });
    const aId = a.res.body.executionId;
    const bId = b.res.body.executionId;

    expectError(await beta("GET", `/executions/${aId}`), 404, "not_found");
    expectError(await alpha("GET", `/executions/${bId}`), 404, "not_found");
    expect((await alpha("GET", `/executions/${aId}`)).status).toBe(200);
    expect((await beta("GET", `/executions/${bId}`)).status).toBe(200);

    const alphaIds = (await alpha("GET", "/executions?limit=100")).body.items.map((e: any) => e.executionId);
    const betaIds = (await beta("GET", "/executions?limit=100")).body.items.map((e: any) => e.executionId);
    expect(alphaIds).toContain(aId);
    expect(alphaIds).not.toContain(bId);
    expect(betaIds).toEqual([bId]);
    for (const status of ["pending", "processing", "completed"]) {
      const filtered = (await beta("GET", `/executions?status=${status}&limit=100`)).body.items.map(
        (e: any) => e.executionId,
      );
      for (const id of filtered) expect(id).toBe(bId);
    }

    // A proof settled for alpha's quote cannot pay a quote of beta's.
    const betaQuote = await beta("POST", "/quotes", { body: { ...SERVER, budget: { amount: "5", currency: "USDC" } } });
    const reuse = await beta("POST", "/payments/confirm", {
      body: { quoteId: betaQuote.body.quoteId, paymentProof: a.proof },
    });
    expectError(reuse, 409, "payment_already_used");
  });

  it("another key's company is 404", async () => {
    const paid = await quoteAndSign(t, "companies.create", COMPANY_INPUT);
    const res = await alpha("POST", "/companies", { body: COMPANY_INPUT, headers: payHeaders(paid) });
    expect(res.status, res.text).toBe(201);
    const { companyId } = res.body;
    expect((await alpha("GET", `/companies/${companyId}`)).status).toBe(200);
    expectError(await beta("GET", `/companies/${companyId}`), 404, "not_found");
    await waitForExecution(alpha, res.body.executionId, (e) => e.status === "completed");
    expectError(await beta("GET", `/companies/${companyId}`), 404, "not_found");
  });

  it("another key's server cannot be read, quoted for renewal or renewed", async () => {
    const provisioned = await paidExecution(t, "servers.provision", SERVER_INPUT, { call: alpha });
    const serverId = provisioned.res.body.serverId;
    await waitForExecution(alpha, provisioned.res.body.executionId, (e) => e.status === "completed");

    expectError(await beta("GET", `/servers/${serverId}`), 404, "not_found");
    const renewInput = { serverId, durationHours: 5 };
    expectError(
      await beta("POST", "/quotes", {
        body: { action: "servers.renew", input: renewInput, budget: { amount: "5", currency: "USDC" } },
      }),
      404,
      "not_found",
    );
    expectError(await beta("POST", `/servers/${serverId}/renew`, { body: { durationHours: 5 } }), 404, "not_found");

    // With alpha's own renewal quote and proof: still 404 for beta, and nothing charged.
    const renewal = await quoteAndSign(t, "servers.renew", renewInput);
    const balance = await t.usdc(t.wallet.address);
    expectError(
      await beta("POST", `/servers/${serverId}/renew`, { body: { durationHours: 5 }, headers: payHeaders(renewal) }),
      404,
      "not_found",
    );
    expect(await t.usdc(t.wallet.address)).toBe(balance);
    // Alpha renews it.
    const own = await alpha("POST", `/servers/${serverId}/renew`, {
      body: { durationHours: 5 },
      headers: payHeaders(renewal),
    });
    expect(own.status, own.text).toBe(201);
    expect(own.body.serverId).toBe(serverId);
  });

  it("another key's webhook is neither listed nor deletable, and gets none of the other key's events", async () => {
    const alphaReceiver = await startReceiver();
    const betaReceiver = await startReceiver();
    try {
      const aHook = await alpha("POST", "/webhooks", {
        body: { url: alphaReceiver.url, events: ["execution.updated"] },
      });
      const bHook = await beta("POST", "/webhooks", { body: { url: betaReceiver.url, events: ["execution.updated"] } });
      expect([aHook.status, bHook.status]).toEqual([201, 201]);

      const betaList = (await beta("GET", "/webhooks")).body.items.map((w: any) => w.webhookId);
      expect(betaList).toEqual([bHook.body.webhookId]);
      expect((await alpha("GET", "/webhooks")).body.items.map((w: any) => w.webhookId)).toEqual([aHook.body.webhookId]);
      expectError(await beta("DELETE", `/webhooks/${aHook.body.webhookId}`), 404, "not_found");
      expect((await alpha("GET", "/webhooks")).body.items.map((w: any) => w.webhookId)).toContain(aHook.body.webhookId);

      const run = await paidExecution(t, "servers.provision", SERVER_INPUT, { call: alpha, key: freshKey("wh-run") });
      const executionId = run.res.body.executionId;
      await alphaReceiver.waitFor((ds) =>
        ds.some(
          (d) => d.body?.data?.execution?.executionId === executionId && d.body.data.execution.status === "completed",
        ),
      );
      // Deliveries are queued in the transaction of the change they announce, for every hook at
      // once, and kept once delivered: alpha's completed one has arrived, so beta's hook would
      // have its rows by now. None: nothing was or will be sent to beta.
      const betaQueued = t.sb.db
        .prepare(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?`)
        .get(bHook.body.webhookId) as { n: number };
      expect(betaQueued.n).toBe(0);
      expect(betaReceiver.deliveries).toEqual([]);

      expect((await alpha("DELETE", `/webhooks/${aHook.body.webhookId}`)).status).toBe(200);
      expect((await beta("DELETE", `/webhooks/${bHook.body.webhookId}`)).status).toBe(200);
    } finally {
      await alphaReceiver.close();
      await betaReceiver.close();
    }
  });
});
