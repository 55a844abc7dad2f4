/**
 * Over real stdio with the SDK's Client: a host that cancels a paid call while its quote is
 * pending pays nothing; a misspelt per-action limit is refused (it would cap nothing), and
 * `doctor` names it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { serviceEnv } from "../helpers/engine.js";
import {
  call,
  cleanupAll,
  ensureBuilt,
  freshHome,
  runCli,
  sc,
  serverEnv,
  SMALL_SERVER,
  startServer,
} from "../helpers/mcp.js";
import { on, startProxy, type Proxy } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp e2e: cancellation", () => {
  let t: TestSandbox;
  let proxy: Proxy;
  beforeAll(async () => {
    t = await startTestSandbox();
    proxy = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""));
  });
  afterAll(async () => {
    await proxy.close();
    await t.close();
  });

  it("notifications/cancelled while the quote is pending: nothing is reserved, signed or paid; the same key buys later", async () => {
    proxy.rules.splice(0, proxy.rules.length, {
      match: on("POST", "/v1/quotes"),
      action: { kind: "delay", ms: 1_000 },
      times: 1,
    });
    const home = freshHome();
    const s = await startServer({ home, env: serviceEnv(t, home, `${proxy.url}/v1`) });
    // As a host does: list the tools first. The server has started and knows its catalog, so the
    // cancelled call reaches its (delayed) quote.
    await s.client.listTools();
    await call(s.client, "get_spending");
    const before = await t.usdc(t.wallet.address);
    const args = { ...SMALL_SERVER, image: "mcp-cancelled", intentKey: "mcp-cancelled-0001" };
    const ac = new AbortController();
    const quoting = on("POST", "/v1/quotes");
    const quotesBefore = proxy.seen.filter(quoting).length;
    const pending = s.client.callTool({ name: "servers_provision", arguments: args }, undefined, {
      signal: ac.signal,
      timeout: 20_000,
    });
    await waitFor(() => proxy.seen.filter(quoting).length > quotesBefore, { what: "the quote at the service" });
    ac.abort("the host gave up");
    await expect(pending).rejects.toThrow();
    // The delayed quote's answer reaches the server meanwhile, and the server records the cancel.
    await waitFor(() => proxy.handled.filter(quoting).length > quotesBefore, { what: "the delayed quote's answer" });
    const journal = new Journal(join(home, "journal.sqlite"));
    try {
      const intent = await waitFor(
        async () => {
          const i = await journal.intentByKey(args.intentKey);
          return i?.state === "refused" && i;
        },
        { what: "the cancelled intent to be refused in the journal" },
      );
      expect(await t.usdc(t.wallet.address)).toBe(before);
      expect(proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(0);
      expect(intent.state).toBe("refused");
      expect(intent.error?.code).toBe("cancelled");
      expect(intent.proof).toBeNull();
      expect(intent.budgetState).toBe("none");
    } finally {
      journal.close();
    }
    const later = await call(s.client, "servers_provision", args);
    expect(later.isError, JSON.stringify(later)).toBeFalsy();
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
  });
});

describe("mcp e2e: a per-action limit that names no action", () => {
  it("is config_invalid naming the key, for paying and quoting; get_spending shows it", async () => {
    const home = freshHome();
    const config = join(home, "config.json");
    writeFileSync(config, JSON.stringify({ limits: { perAction: { "server.provision": "0.1" } } }));
    const s = await startServer({ home, env: { PAID_ACTIONS_CONFIG: config } });
    const paid = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(paid.isError).toBe(true);
    expect(sc(paid).error.code).toBe("config_invalid");
    expect(sc(paid).error.message).toContain("limits.perAction.server.provision");
    expect(sc(paid).error.message).toContain("servers.provision");
    const quote = await call(s.client, "quote_action", { action: "servers.provision", input: { ...SMALL_SERVER } });
    expect(sc(quote).error.code).toBe("config_invalid");
    const spending = sc(await call(s.client, "get_spending"));
    expect(JSON.stringify(spending.configIssues)).toContain("limits.perAction.server.provision");
    await s.close();
    const doctor = await runCli(["doctor"], serverEnv(home, { PAID_ACTIONS_CONFIG: config }), 60_000);
    expect(doctor.code, doctor.stderr).toBe(1);
    expect(doctor.stdout).toMatch(
      /\[FAIL\] config: .*limits\.perAction\.server\.provision: .*did you mean servers\.provision/,
    );
  });
});
