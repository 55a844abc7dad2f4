/**
 * The simulated provider of an execution whose delay is already over when it first runs (no
 * delay at all, as the benchmark asks, or a late run): it goes from pending to its end in one
 * write, and the processing it passed through is still said — the webhook updates are the ones
 * a delayed execution sends, and a failure is refunded as before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { SERVER_INPUT, freshKey, paidExecution, startReceiver, type Delivery } from "../helpers/api.js";

describe("an execution with no provider delay", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

  const forExecution = (executionId: string) => (d: Delivery) => d.body?.data?.execution?.executionId === executionId;

  it("passes processing through in one write, says every update, and refunds a failure", async () => {
    const receiver = await startReceiver();
    try {
      const hook = await t.call("POST", "/webhooks", {
        body: { url: receiver.url, events: ["execution.updated"] },
        headers: { "idempotency-key": freshKey("wh") },
      });
      expect(hook.status, hook.text).toBe(201);
      const statuses = (executionId: string) =>
        receiver.deliveries.filter(forExecution(executionId)).map((d) => d.body.data.execution.status as string);

      const done = await paidExecution(t, "servers.provision", SERVER_INPUT, {
        headers: { "x-sandbox-delay-ms": "0" },
      });
      const doneId = done.res.body.executionId;
      const completed = await waitForExecution(t.call, doneId, (e) => e.status === "completed");
      const server = await t.call("GET", `/servers/${completed.output.serverId}`);
      expect(server.body).toMatchObject({ status: "running", ipv4: completed.output.ipv4 });
      await receiver.waitFor((ds) => ds.filter(forExecution(doneId)).length === 3);
      expect(statuses(doneId).sort()).toEqual(["completed", "pending", "processing"]);

      const before = await t.usdc(t.wallet.address);
      const failed = await paidExecution(t, "servers.provision", SERVER_INPUT, {
        headers: { "x-sandbox-delay-ms": "0", "x-sandbox-outcome": "fail" },
      });
      const failedId = failed.res.body.executionId;
      await waitForExecution(t.call, failedId, (e) => e.status === "refunded");
      await receiver.waitFor((ds) => ds.filter(forExecution(failedId)).length === 4);
      expect(statuses(failedId).sort()).toEqual(["failed", "pending", "processing", "refunded"]);
      expect(await t.usdc(t.wallet.address)).toBe(before);
    } finally {
      await receiver.close();
    }
  });
});
