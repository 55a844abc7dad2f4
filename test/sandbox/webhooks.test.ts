/**
 * Webhook deliveries (decisions.md): `execution.updated` events POSTed to a receiver on
 * 127.0.0.1, signed `Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
 * retried with backoff when the receiver fails.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { SERVER_INPUT, freshKey, paidExecution, startReceiver, verifyWebhookSignature, type Delivery, type Receiver } from "../helpers/api.js";

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe("webhooks", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

  async function register(receiver: Receiver): Promise<{ webhookId: string; secret: string }> {
    const res = await t.call("POST", "/webhooks", {
      body: { url: receiver.url, events: ["execution.updated"] },
      headers: { "idempotency-key": freshKey("wh") },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.secret).toMatch(/^whsec_/);
    return res.body;
  }

  const forExecution = (executionId: string) => (d: Delivery) => d.body?.data?.execution?.executionId === executionId;

  it("a paid execution's pending, processing and completed updates arrive, each signed with the registration's secret", async () => {
    const receiver = await startReceiver();
    try {
      const hook = await register(receiver);
      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      const executionId = run.res.body.executionId;
      const mine = forExecution(executionId);
      await receiver.waitFor((ds) => ds.filter(mine).some((d) => d.body.data.execution.status === "completed"));
      const record = await waitForExecution(t.call, executionId, (e) => e.status === "completed");

      const deliveries = receiver.deliveries.filter(mine);
      expect(deliveries.map((d) => d.body.data.execution.status).sort()).toEqual(["completed", "pending", "processing"]);
      const ids = new Set<string>();
      for (const d of deliveries) {
        expect(d.method).toBe("POST");
        expect(d.headers["content-type"]).toMatch(/^application\/json/);
        expect(d.body).toEqual({
          id: expect.stringMatching(/^evt_[A-Za-z0-9]+$/),
          type: "execution.updated",
          createdAt: expect.stringMatching(ISO_UTC),
          data: { execution: expect.objectContaining({ executionId, action: "servers.provision", quoteId: run.quote.quoteId }) },
        });
        expect(d.headers["webhook-id"]).toBe(d.body.id);
        ids.add(d.body.id);

        const signature = d.headers["webhook-signature"] as string;
        expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
        const ts = Number(/^t=(\d+)/.exec(signature)![1]);
        expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(60);
        expect(verifyWebhookSignature(hook.secret, signature, d.rawBody)).toBe(true);
        // Exactly the documented construction.
        const v1 = createHmac("sha256", hook.secret).update(`${ts}.${d.rawBody}`).digest("hex");
        expect(signature).toBe(`t=${ts},v1=${v1}`);
      }
      expect(ids.size).toBe(3);

      // The completed event carries the execution as GET /executions/{id} shows it.
      const completed = deliveries.find((d) => d.body.data.execution.status === "completed")!;
      expect(completed.body.data.execution).toEqual(record);
      expect(completed.body.data.execution.output).toMatchObject({ serverId: run.res.body.serverId, status: "running" });

      expect((await t.call("DELETE", `/webhooks/${hook.webhookId}`)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it("a tampered body, another secret or another timestamp does not verify", async () => {
    const receiver = await startReceiver();
    try {
      const hook = await register(receiver);
      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      const [d] = await receiver.waitFor((ds) => ds.some(forExecution(run.res.body.executionId)));
      const signature = d!.headers["webhook-signature"] as string;
      expect(verifyWebhookSignature(hook.secret, signature, d!.rawBody)).toBe(true);

      const tampered = d!.rawBody.replace(/"status":"(pending|processing|completed)"/, '"status":"refunded"');
      expect(tampered).not.toBe(d!.rawBody);
      expect(verifyWebhookSignature(hook.secret, signature, tampered)).toBe(false);
      expect(verifyWebhookSignature(hook.secret, signature, `${d!.rawBody} `)).toBe(false);
      expect(verifyWebhookSignature(`${hook.secret}x`, signature, d!.rawBody)).toBe(false);
      const ts = Number(/^t=(\d+)/.exec(signature)![1]);
      expect(verifyWebhookSignature(hook.secret, signature.replace(`t=${ts}`, `t=${ts + 1}`), d!.rawBody)).toBe(false);

      await waitForExecution(t.call, run.res.body.executionId, (e) => e.status === "completed");
      expect((await t.call("DELETE", `/webhooks/${hook.webhookId}`)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it("a receiver that answers 500 first is retried after about a second, and the delivery succeeds", async () => {
    // Fails the first delivery it ever gets, accepts everything after.
    const receiver = await startReceiver((_d, index) => (index === 0 ? 500 : 204));
    try {
      const hook = await register(receiver);
      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      const ds = await receiver.waitFor((all) => all.length > 1 && all.slice(1).some((d) => d.body?.id === all[0]!.body?.id), 10_000);
      const failed = ds[0]!;
      expect(failed.answered).toBe(500);
      expect(failed.body.data.execution.executionId).toBe(run.res.body.executionId);
      const retry = ds.slice(1).find((d) => d.body.id === failed.body.id)!;
      expect(retry.answered).toBe(204);
      // The same event, byte for byte, signed again.
      expect(retry.rawBody).toBe(failed.rawBody);
      expect(retry.headers["webhook-id"]).toBe(failed.headers["webhook-id"]);
      expect(verifyWebhookSignature(hook.secret, retry.headers["webhook-signature"] as string, retry.rawBody)).toBe(true);
      // Backoff starts at 1 s.
      const gap = retry.at - failed.at;
      expect(gap).toBeGreaterThanOrEqual(900);
      expect(gap).toBeLessThan(3_000);
      // Delivered once it succeeded: no third attempt.
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.deliveries.filter((d) => d.body.id === failed.body.id)).toHaveLength(2);
      const row = t.sb.db.prepare(`SELECT status, attempts FROM webhook_deliveries WHERE event_id = ?`).get(failed.body.id);
      expect(row).toEqual({ status: "delivered", attempts: 2 });

      expect((await t.call("DELETE", `/webhooks/${hook.webhookId}`)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it("after DELETE /webhooks/{id}, nothing more is delivered", async () => {
    const receiver = await startReceiver();
    try {
      const hook = await register(receiver);
      expect((await t.call("DELETE", `/webhooks/${hook.webhookId}`)).status).toBe(200);
      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      await waitForExecution(t.call, run.res.body.executionId, (e) => e.status === "completed");
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.deliveries).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
