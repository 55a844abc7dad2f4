/**
 * Webhook deliveries (decisions.md): `execution.updated` events POSTed to a receiver on
 * 127.0.0.1, signed `Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
 * retried with backoff when the receiver fails.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nonPublicReason, systemResolver } from "../../src/sandbox/service/webhook-guard.js";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { pollUntil, waitFor } from "../helpers/wait.js";
import {
  SERVER_INPUT,
  expectError,
  freshKey,
  paidExecution,
  startReceiver,
  verifyWebhookSignature,
  type Delivery,
  type Receiver,
} from "../helpers/api.js";

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe("webhooks", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
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
      expect(deliveries.map((d) => d.body.data.execution.status).sort()).toEqual([
        "completed",
        "pending",
        "processing",
      ]);
      const ids = new Set<string>();
      for (const d of deliveries) {
        expect(d.method).toBe("POST");
        expect(d.headers["content-type"]).toMatch(/^application\/json/);
        expect(d.body).toEqual({
          id: expect.stringMatching(/^evt_[A-Za-z0-9]+$/),
          type: "execution.updated",
          createdAt: expect.stringMatching(ISO_UTC),
          data: {
            execution: expect.objectContaining({
              executionId,
              action: "servers.provision",
              quoteId: run.quote.quoteId,
            }),
          },
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
      expect(completed.body.data.execution.output).toMatchObject({
        serverId: run.res.body.serverId,
        status: "running",
      });

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
      const ds = await receiver.waitFor(
        (all) => all.length > 1 && all.slice(1).some((d) => d.body?.id === all[0]!.body?.id),
        10_000,
      );
      const failed = ds[0]!;
      expect(failed.answered).toBe(500);
      expect(failed.body.data.execution.executionId).toBe(run.res.body.executionId);
      const retry = ds.slice(1).find((d) => d.body.id === failed.body.id)!;
      expect(retry.answered).toBe(204);
      // The same event, byte for byte, signed again.
      expect(retry.rawBody).toBe(failed.rawBody);
      expect(retry.headers["webhook-id"]).toBe(failed.headers["webhook-id"]);
      expect(verifyWebhookSignature(hook.secret, retry.headers["webhook-signature"] as string, retry.rawBody)).toBe(
        true,
      );
      // Backoff starts at 1 s.
      const gap = retry.at - failed.at;
      expect(gap).toBeGreaterThanOrEqual(900);
      expect(gap).toBeLessThan(3_000);
      // Delivered once it succeeded: no third attempt. The scheduler only ever sends a pending
      // row, so once the row says delivered nothing more goes out for it.
      const row = await waitFor(
        () => {
          const r = t.sb.db
            .prepare(`SELECT status, attempts FROM webhook_deliveries WHERE event_id = ?`)
            .get(failed.body.id) as { status: string; attempts: number } | undefined;
          return r?.status !== "pending" && r;
        },
        { what: "the delivery's row to leave pending" },
      );
      expect(receiver.deliveries.filter((d) => d.body.id === failed.body.id)).toHaveLength(2);
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
      // Deliveries are queued in the transaction of the change they announce: with the
      // execution completed, none was queued for the deleted hook, so none can go out.
      const queued = t.sb.db
        .prepare(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?`)
        .get(hook.webhookId) as { n: number };
      expect(queued.n).toBe(0);
      expect(receiver.deliveries).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe("the webhook URL guard: receivers must be public addresses", () => {
  const PUBLIC_V4 = "93.184.216.34";
  /** DNS answers for names under .test, changeable mid-test (e.g. rebinding to loopback). */
  const dns = new Map<string, Array<{ address: string; family: 4 | 6 }>>();
  /** Names under .test from `dns`; anything else (localhost) from the system resolver. */
  const resolver = async (host: string) => {
    if (!host.endsWith(".test")) return systemResolver(host);
    const answer = dns.get(host);
    if (!answer) throw Object.assign(new Error(`no such host ${host}`), { code: "ENOTFOUND" });
    return answer;
  };
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ webhookResolver: resolver });
  });
  afterAll(() => t.close());

  const register = (url: string) =>
    t.call("POST", "/webhooks", {
      body: { url, events: ["execution.updated"] },
      headers: { "idempotency-key": freshKey("wh") },
    });

  it.each([
    ["8.8.8.8", undefined],
    ["::ffff:8.8.8.8", undefined],
    ["2606:4700::1111", undefined],
    ["64:ff9b::808:808", undefined],
    ["2002:808:808::1", undefined],
    ["2002:7f00:1::", "loopback (IPv4 127.0.0.1 through 6to4)"],
    ["::ffff:a00:1", "private (IPv4 10.0.0.1 mapped into IPv6)"],
    ["fe80::1%eth0", "link-local"],
    ["2001:db8::1", "documentation"],
    ["2001:0:4136:e378::1", "IETF protocol assignment (Teredo and others)"],
    ["ff02::1", "multicast"],
    ["4000::1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["172.32.0.1", undefined],
    ["not-an-ip", "unparseable"],
  ])("nonPublicReason(%s) is %s", (ip, reason) => {
    expect(nonPublicReason(ip)).toBe(reason);
  });

  it.each([
    ["http://127.0.0.1/", "loopback"],
    ["http://169.254.169.254/latest/meta-data/", "link-local"],
    ["http://[::1]/", "loopback"],
    ["http://10.0.0.1/", "private"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://[::ffff:7f00:1]/", "loopback"],
    ["http://localhost/", "loopback"],
    ["http://2130706433/", "loopback"],
    ["http://0x7f.1/", "loopback"],
    ["http://0.0.0.0:8080/", "unspecified"],
    ["http://[::]/", "unspecified"],
    ["http://[fe80::1]/", "link-local"],
    ["http://172.16.5.4/", "private"],
    ["http://192.168.1.1/", "private"],
    ["http://100.64.0.1/", "carrier-grade NAT"],
    ["http://[fd00::1]/", "unique local"],
    ["http://224.0.0.1/", "multicast"],
    ["https://127.0.0.1:8443/hook", "loopback"],
    ["http://[64:ff9b::7f00:1]/", "loopback"],
  ])("%s is refused with 400 invalid_request saying why (%s)", async (url, why) => {
    const res = await register(url);
    const error = expectError(res, 400, "invalid_request");
    expect(error.message).toContain(why);
    expect(error.issues).toEqual([{ path: "url", message: expect.stringContaining(why) }]);
    expect((await t.call("GET", "/webhooks")).body.items).toEqual([]);
  });

  it("a name is refused if any address it resolves to is not public, or if it does not resolve", async () => {
    dns.set("mixed.test", [
      { address: PUBLIC_V4, family: 4 },
      { address: "10.9.8.7", family: 4 },
    ]);
    dns.set("metadata.test", [{ address: "169.254.169.254", family: 4 }]);
    expect(expectError(await register("http://mixed.test/hook"), 400, "invalid_request").message).toMatch(
      /10\.9\.8\.7, a private address/,
    );
    expect(expectError(await register("http://metadata.test/hook"), 400, "invalid_request").message).toContain(
      "link-local",
    );
    expect(expectError(await register("http://nowhere.test/hook"), 400, "invalid_request").message).toMatch(
      /does not resolve/,
    );
  });

  it("a public name is accepted; a public IP literal too", async () => {
    dns.set("hooks.test", [
      { address: PUBLIC_V4, family: 4 },
      { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 },
    ]);
    for (const url of ["https://hooks.test/ingest", `http://${PUBLIC_V4}:8080/x`, "http://[2606:4700::1111]/"]) {
      const res = await register(url);
      expect(res.status, res.text).toBe(201);
      expect((await t.call("DELETE", `/webhooks/${res.body.webhookId}`)).status).toBe(200);
    }
  });

  it("checked again at delivery: a name that rebinds to loopback after registration gets nothing delivered", async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      dns.set("rebind.test", [{ address: PUBLIC_V4, family: 4 }]);
      const created = await register(`http://rebind.test:${port}/hook`);
      expect(created.status, created.text).toBe(201);
      dns.set("rebind.test", [{ address: "127.0.0.1", family: 4 }]);

      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      await waitForExecution(t.call, run.res.body.executionId, (e) => e.status === "completed");
      const { value: rows } = await pollUntil(
        () =>
          t.sb.db
            .prepare(`SELECT attempts, last_error FROM webhook_deliveries WHERE webhook_id = ?`)
            .all(created.body.webhookId) as Array<{ attempts: number; last_error: string | null }>,
        (rows) => rows.length >= 3 && rows.every((r) => r.attempts >= 1),
        { timeoutMs: 5_000, intervalMs: 50 },
      );
      expect(rows.length).toBeGreaterThanOrEqual(3);
      for (const row of rows) expect(row.last_error).toMatch(/^refused: .*127\.0\.0\.1, a loopback address/);
      expect(receiver.deliveries).toEqual([]);
      expect((await t.call("DELETE", `/webhooks/${created.body.webhookId}`)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });
});

describe("--allow-private-webhooks (allowPrivateWebhooks) lifts the guard", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    // receiver.test exists only in this resolver: a delivery reaching the receiver went to the address it returned.
    t = await startTestSandbox({
      allowPrivateWebhooks: true,
      webhookResolver: async (host) => {
        if (host === "receiver.test") return [{ address: "127.0.0.1", family: 4 }];
        if (host === "localhost") return [{ address: "127.0.0.1", family: 4 }];
        throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
      },
    });
  });
  afterAll(() => t.close());

  it.each([
    "http://127.0.0.1/",
    "http://169.254.169.254/",
    "http://[::1]/",
    "http://10.0.0.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://localhost/",
  ])("%s is accepted", async (url) => {
    const res = await t.call("POST", "/webhooks", { body: { url, events: ["execution.updated"] } });
    expect(res.status, res.text).toBe(201);
    expect((await t.call("DELETE", `/webhooks/${res.body.webhookId}`)).status).toBe(200);
  });

  it("delivers to the address the resolver gave, with the URL's own Host header", async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      const created = await t.call("POST", "/webhooks", {
        body: { url: `http://receiver.test:${port}/hook`, events: ["execution.updated"] },
      });
      expect(created.status, created.text).toBe(201);
      const run = await paidExecution(t, "servers.provision", SERVER_INPUT);
      const [d] = await receiver.waitFor((ds) =>
        ds.some((x) => x.body?.data?.execution?.executionId === run.res.body.executionId),
      );
      expect(d!.headers.host).toBe(`receiver.test:${port}`);
      expect(verifyWebhookSignature(created.body.secret, d!.headers["webhook-signature"] as string, d!.rawBody)).toBe(
        true,
      );
      expect((await t.call("DELETE", `/webhooks/${created.body.webhookId}`)).status).toBe(200);
    } finally {
      await receiver.close();
    }
  });
});
