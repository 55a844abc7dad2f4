/**
 * The webhook registration endpoints of decisions.md over real HTTP against a running
 * sandbox: register, list without the secret, delete, and invalid registrations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { expectError, freshKey } from "../helpers/api.js";

describe("the v1 endpoints", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

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
