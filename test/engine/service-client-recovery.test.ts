/**
 * The service client when the service cannot be reached at all: it asks `onUnreachable`
 * once per request, and a recovery that succeeded earns one immediate extra attempt at
 * wherever the base URL now points (the embedded sandbox taken over on another port).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createServiceClient } from "../../src/engine/service/client.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((ok) => s.close(() => ok()))));
});

async function listen(handler: (status: (code: number) => void) => void = (status) => status(200)): Promise<string> {
  const server = createServer((_req, res) =>
    handler((code) => {
      res.writeHead(code, { "content-type": "application/json" });
      res.end(
        code === 200
          ? JSON.stringify({ ok: true })
          : JSON.stringify({ error: { code: "unavailable", message: "down" } }),
      );
    }),
  );
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", () => ok()));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

/** A loopback URL nothing listens on: connections are refused. */
async function refusedUrl(): Promise<string> {
  const url = await listen();
  const server = servers.pop()!;
  await new Promise<void>((ok) => server.close(() => ok()));
  return url;
}

const Ok = z.object({ ok: z.literal(true) });

describe("service client: an unreachable service", () => {
  it("asks to recover, then tries once more at once at the base URL as it is now, beyond maxAttempts", async () => {
    let target = await refusedUrl();
    const live = await listen();
    const sleeps: number[] = [];
    let asked = 0;
    const client = createServiceClient({
      baseUrl: () => target,
      apiKey: "sk_test_recovery_key",
      timeoutMs: 2_000,
      maxAttempts: 1,
      sleep: async (ms) => void sleeps.push(ms),
      onUnreachable: async () => {
        asked++;
        target = live;
        return true;
      },
    });
    const res = await client.call("GET", "/health", { schema: Ok });
    expect(res.ok).toBe(true);
    expect(asked).toBe(1);
    expect(sleeps).toEqual([]);
    expect(client.baseUrl).toBe(live);
  });

  it("asks once per request; a failed recovery leaves the usual retries, and an HTTP error never asks", async () => {
    const refused = await refusedUrl();
    let asked = 0;
    const options = {
      apiKey: "sk_test_recovery_key",
      timeoutMs: 2_000,
      maxAttempts: 3,
      sleep: async () => undefined,
      onUnreachable: async () => {
        asked++;
        return false;
      },
    };
    const down = createServiceClient({ ...options, baseUrl: refused });
    await expect(down.call("GET", "/health", { schema: Ok })).rejects.toMatchObject({
      code: "service_unavailable",
      message: expect.stringContaining("after 3 attempts"),
    });
    expect(asked).toBe(1);

    const failing = createServiceClient({ ...options, baseUrl: await listen((status) => status(503)) });
    await expect(failing.call("GET", "/health", { schema: Ok })).rejects.toMatchObject({ code: "service_unavailable" });
    expect(asked).toBe(1);
  });
});
