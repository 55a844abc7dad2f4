import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { createMcpServer } from "../../src/mcp/server.js";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";

async function listTools(f: EngineFixture) {
  const mcp = await createMcpServer({ pa: f.pa, version: "test", log: () => undefined });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  const { tools } = await client.listTools();
  await client.close();
  await mcp.close();
  return { tools: tools.map((t) => t.name), source: mcp.catalog.source };
}

describe("the catalog survives a service that is briefly away", () => {
  let f: EngineFixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("a server that fetched the catalog once lists the same paid tools from the journal when the service does not answer", async () => {
    f = await engineFixture({ configFile: { http: { timeoutMs: 300, maxAttempts: 1 } } });
    const first = await listTools(f);
    expect(first.source).toBe("service");
    expect(first.tools).toContain("servers_provision");

    // The service goes away: every request now fails.
    f.proxy.rules.push({ match: () => true, action: { kind: "status", status: 503, body: { error: { code: "unavailable", message: "down" } } } });
    await f.reopen();
    const second = await listTools(f);
    expect(second.source).toBe("cache");
    expect(second.tools.sort()).toEqual(first.tools.sort());
  });

  it("with no cache and no service, the server still starts and lists its free tools", async () => {
    f = await engineFixture({
      configFile: { http: { timeoutMs: 300, maxAttempts: 1 } },
      rules: [{ match: () => true, action: { kind: "status", status: 503, body: { error: { code: "unavailable", message: "down" } } } }],
    });
    const listed = await listTools(f);
    expect(listed.source).toBe("none");
    expect(listed.tools).toContain("get_spending");
    expect(listed.tools).not.toContain("servers_provision");
  });
});
