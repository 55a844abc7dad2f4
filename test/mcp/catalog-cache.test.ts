/**
 * The catalog survives a service that is briefly away, and a cached catalog answers
 * tools/list at once: the server is served in this process (serve() over a linked
 * in-memory transport) against a real sandbox behind a programmable proxy.
 */
import { afterEach, describe, expect, it } from "vitest";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";
import { startInProcess } from "../helpers/inproc.js";

const DOWN = {
  match: () => true,
  action: { kind: "status" as const, status: 503, body: { error: { code: "unavailable", message: "down" } } },
};

async function listTools(env: Record<string, string>, era: "legacy" | "modern" = "legacy") {
  const s = await startInProcess({ env, era });
  try {
    const started = performance.now();
    const { tools } = await s.client.listTools();
    return { tools: tools.map((t) => t.name), source: s.surface.catalog.source, ms: performance.now() - started };
  } finally {
    await s.close();
  }
}

describe("the catalog survives a service that is briefly away", () => {
  let f: EngineFixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("a server that fetched the catalog once lists the same paid tools from the journal when the service does not answer", async () => {
    f = await engineFixture({ configFile: { http: { timeoutMs: 300, maxAttempts: 1 } } });
    const env = f.env as Record<string, string>;
    const first = await listTools(env);
    expect(first.source).toBe("service");
    expect(first.tools).toContain("servers_provision");

    // The service goes away: every request now fails.
    f.proxy.rules.push(DOWN);
    const second = await listTools(env, "modern");
    expect(second.source).toBe("cache");
    expect(second.tools).toEqual(first.tools);
  });

  it("a cached catalog answers tools/list before the service does; the service's copy then replaces it", async () => {
    f = await engineFixture();
    const env = f.env as Record<string, string>;
    await listTools(env);
    // The service now takes 3 s to list its actions.
    f.proxy.rules.push({
      match: (r) => r.method === "GET" && r.path === "/v1/actions",
      action: { kind: "delay", ms: 3_000 },
      times: 1,
    });
    const s = await startInProcess({ env, era: "legacy" });
    try {
      const started = performance.now();
      const { tools } = await s.client.listTools();
      expect(performance.now() - started).toBeLessThan(1_500);
      expect(tools.map((t) => t.name)).toContain("servers_provision");
      expect(s.surface.catalog.source).toBe("cache");
      await expect.poll(() => s.surface.catalog.source, { timeout: 10_000 }).toBe("service");
    } finally {
      await s.close();
    }
  });

  it("with no cache and no service, the server still starts and lists its free tools", async () => {
    f = await engineFixture({ configFile: { http: { timeoutMs: 300, maxAttempts: 1 } }, rules: [DOWN] });
    const listed = await listTools(f.env as Record<string, string>);
    expect(listed.source).toBe("none");
    expect(listed.tools).toContain("get_spending");
    expect(listed.tools).not.toContain("servers_provision");
  });
});
