/**
 * The built server over real stdio, as a host sees it: the tool list, a paid call, an
 * over-budget refusal and bad input.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  cleanupAll,
  COMPANY,
  ensureBuilt,
  sc,
  serviceGet,
  SMALL_SERVER,
  SMALL_SERVER_PRICE,
  sandboxInfo,
  startServer,
  text,
  usdc,
} from "../helpers/mcp.js";

const PAID_TOOLS = [
  "servers_provision",
  "servers_renew",
  "companies_create",
  "domains_register",
  "storage_purchase",
  "agent_services_purchase",
];
const MIRROR_TOOLS = [
  "quote_action",
  "get_execution",
  "list_executions",
  "wait_for_execution",
  "get_spending",
  "search_agent_services",
  "get_company",
  "search_paid_resources",
] as const;
/**
 * Each mirror tool's openWorldHint: true for a tool that asks the service or the network
 * (read-only or not), false for one this server's journal answers alone.
 */
const OPEN_WORLD: Record<(typeof MIRROR_TOOLS)[number], boolean> = {
  quote_action: true,
  get_execution: true,
  list_executions: false,
  wait_for_execution: true,
  get_spending: false,
  search_agent_services: true,
  get_company: true,
  search_paid_resources: true,
};
/** Tools beyond the catalog that can spend money. */
const FETCH_TOOLS = ["paid_fetch"];
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp e2e: tools", () => {
  it("lists one paid tool per catalog action, with the action's schema plus budget/intentKey/approvalId, and read-only mirror tools", async () => {
    const s = await startServer();
    const { tools } = await s.client.listTools();
    const names = tools.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(TOOL_NAME);
    expect([...names].sort()).toEqual([...PAID_TOOLS, ...MIRROR_TOOLS, ...FETCH_TOOLS].sort());

    // One tool per action of the service's catalog, named by the documented rule.
    const catalog = (await serviceGet(s.home, "/actions")) as { items: { name: string }[] };
    const expectedPaid = catalog.items.map((a) => a.name.toLowerCase().replace(/[.-]/g, "_")).sort();
    expect(expectedPaid).toEqual([...PAID_TOOLS].sort());

    for (const action of catalog.items) {
      const name = action.name.toLowerCase().replace(/[.-]/g, "_");
      const tool = tools.find((t) => t.name === name)!;
      expect(tool, name).toBeDefined();
      expect(tool.title, name).toBeTruthy();
      expect(tool.annotations, name).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      }); // two identical calls without an intentKey are two purchases
      expect(tool.annotations?.title, name).toBeTruthy();
      expect(tool.execution, name).toBeUndefined(); // no task support advertised (the v2 SDK has none)
      expect(tool.description, name).toMatch(/sandbox/i);
      expect(tool.description, name).toMatch(/spends money/i);

      // Input schema: exactly the service's, plus three optional extras.
      const detail = await serviceGet(s.home, `/actions/${encodeURIComponent(action.name)}`);
      const { properties: serviceProps = {}, ...serviceRest } = detail.inputSchema as Record<string, any>;
      // The tool's schema is compared without the service's $schema.
      delete serviceRest.$schema;
      const { properties: toolProps = {}, ...toolRest } = tool.inputSchema as Record<string, any>;
      expect(toolRest, name).toEqual(serviceRest);
      for (const [prop, schema] of Object.entries(serviceProps))
        expect(toolProps[prop], `${name}.${prop}`).toEqual(schema);
      expect(Object.keys(toolProps).sort(), name).toEqual(
        [...Object.keys(serviceProps), "budget", "intentKey", "approvalId"].sort(),
      );
      for (const extra of ["budget", "intentKey", "approvalId"])
        expect(toolRest.required ?? [], name).not.toContain(extra);
      expect(toolProps.budget).toMatchObject({ type: "object", required: ["amount", "currency"] });
      expect(toolProps.budget.properties.amount.type).toBe("string");
      expect(toolProps.budget.properties.currency.const).toBe("USDC");
      expect(toolProps.intentKey.type).toBe("string");
      expect(toolProps.approvalId.type).toBe("string");
    }

    const fetch = tools.find((t) => t.name === "paid_fetch")!;
    expect(fetch.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false, openWorldHint: true });
    expect(fetch.description).toMatch(/SPEND MONEY/);
    expect(Object.keys((fetch.inputSchema.properties ?? {}) as object).sort()).toEqual(
      ["approvalId", "body", "budget", "headers", "intentKey", "method", "url"].sort(),
    );
    expect(fetch.inputSchema.required).toEqual(["url"]);

    for (const name of MIRROR_TOOLS) {
      const tool = tools.find((t) => t.name === name)!;
      expect(tool.annotations?.readOnlyHint, name).toBe(true);
      expect(tool.annotations?.destructiveHint ?? false, name).toBe(false);
      expect(tool.annotations?.openWorldHint, name).toBe(OPEN_WORLD[name]);
      expect(tool.title ?? tool.annotations?.title, name).toBeTruthy();
      expect(tool.description, name).toMatch(/sandbox/i);
      expect(tool.inputSchema.type, name).toBe("object");
    }
    const wait = tools.find((t) => t.name === "wait_for_execution")!;
    expect((wait.inputSchema.properties as any).timeoutSeconds.maximum).toBe(100);
  });

  it("a paid call returns at once, even with a 20 s provider, with the execution's facts structured and as text", async () => {
    const s = await startServer({ delayMs: 20_000 });
    await s.client.listTools(); // as a host does: also arms the SDK's output-schema validation

    const started = Date.now();
    const result = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    const elapsed = Date.now() - started;
    expect(result.isError ?? false, text(result)).toBe(false);
    expect(elapsed).toBeLessThan(5_000);

    const r = sc(result);
    expect(r.executionId).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(["pending", "processing"]).toContain(r.status);
    expect(r.action).toBe("servers.provision");
    expect(r.quote).toMatchObject({ amount: SMALL_SERVER_PRICE, currency: "USDC" });
    expect(typeof r.quote.quoteId).toBe("string");
    expect(r.quote.quoteId.length).toBeGreaterThan(0);
    expect(typeof r.payment.transaction).toBe("string");
    expect(r.payment.transaction.length).toBeGreaterThan(40);
    expect(r.payment.amount).toBe(SMALL_SERVER_PRICE);
    // The service signed its offer and its receipt (x402 offer-receipt), with the key sandbox.json publishes.
    const { sellerKey } = sandboxInfo(s.home) as { sellerKey?: { kid: string } };
    expect(r.payment.seller).toEqual({ signed: true, offer: "verified", receipt: "verified", signer: sellerKey!.kid });
    expect(r.resourceUri).toBe(`paid-actions://executions/${r.executionId}`);
    expect(typeof r.next).toBe("string");
    expect(r.next).toContain(r.executionId);
    expect(r.next).toMatch(/wait_for_execution|get_execution/);
    expect(r.sandbox).toBe(true);

    // The same facts as text, for hosts that show the model only text.
    const t = text(result);
    for (const fact of [
      r.executionId,
      r.status,
      r.action,
      r.quote.quoteId,
      SMALL_SERVER_PRICE,
      "USDC",
      r.payment.transaction,
      r.resourceUri,
    ]) {
      expect(t).toContain(fact);
    }
    expect(t).toMatch(/sandbox/i);

    // The payment is real at the service and counted in the human's limits.
    const atService = await serviceGet(s.home, `/executions/${r.executionId}`);
    expect(atService.executionId).toBe(r.executionId);
    const spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentLast24h) + usdc(spending.reserved)).toBeCloseTo(0.288, 6);

    // The journal knows it while the provider is still working.
    const listed = sc(await call(s.client, "list_executions"));
    expect(listed.items.map((i: any) => i.executionId)).toEqual([r.executionId]);
    expect(listed).toHaveProperty("nextCursor");
  });

  it("a retry with the same intentKey lands on the same execution and pays once", async () => {
    const s = await startServer({ delayMs: 500 });
    const intentKey = "e2e-intent-0001";
    const first = sc(await call(s.client, "servers_provision", { ...SMALL_SERVER, intentKey }));
    const again = await call(s.client, "servers_provision", { ...SMALL_SERVER, intentKey });
    expect(again.isError ?? false, text(again)).toBe(false);
    expect(sc(again).executionId).toBe(first.executionId);
    expect(sc(again).payment.transaction).toBe(first.payment.transaction);
    expect(sc(again).payment.seller).toEqual(first.payment.seller);
    expect(first.payment.seller).toMatchObject({ signed: true });
    // The same key for a different purchase is refused, not paid.
    const other = await call(s.client, "servers_provision", { ...SMALL_SERVER, durationHours: 48, intentKey });
    expect(other.isError).toBe(true);
    expect(sc(other).error.code).toBe("intent_conflict");
    expect(usdc(sc(await call(s.client, "get_spending")).spentTotal)).toBeCloseTo(0.288, 6);
    expect((await serviceGet(s.home, "/executions")).items.map((e: any) => e.executionId)).toEqual([first.executionId]);
  });

  it("an over-budget call is a tool error (budget_exceeded, whatToDo), and pays nothing", async () => {
    const s = await startServer({ delayMs: 500 });
    await s.client.listTools();
    const result = await call(s.client, "companies_create", { ...COMPANY });
    expect(result.isError).toBe(true);
    const error = sc(result).error;
    expect(error.code).toBe("budget_exceeded");
    expect(typeof error.message).toBe("string");
    expect(typeof error.whatToDo).toBe("string");
    expect(error.whatToDo.length).toBeGreaterThan(10);
    expect(text(result)).toContain("budget_exceeded");
    expect(text(result)).toMatch(/sandbox/i);

    const spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentLast24h)).toBe(0);
    expect(usdc(spending.reserved)).toBe(0);
    expect(usdc(spending.spentTotal)).toBe(0);
    expect((await serviceGet(s.home, "/executions")).items).toEqual([]);
  });

  it("bad input is a tool error with code invalid_input, never a protocol error, and pays nothing", async () => {
    const s = await startServer({ delayMs: 500 });
    await s.client.listTools();
    const bad: Array<[string, Record<string, unknown>]> = [
      ["servers_provision", { region: 5, plan: "small", durationHours: "twenty-four" }],
      ["servers_provision", { region: "eu-west-1", plan: "small" }],
      ["servers_provision", { ...SMALL_SERVER, durationHours: 24.5 }],
      ["servers_provision", { ...SMALL_SERVER, surprise: true }],
      ["servers_provision", { ...SMALL_SERVER, budget: { amount: "1.00", currency: "EUR" } }],
      ["servers_provision", { ...SMALL_SERVER, budget: "lots" }],
      ["servers_provision", { ...SMALL_SERVER, intentKey: "short" }],
      ["servers_provision", { ...SMALL_SERVER, approvalId: 42 }],
      ["companies_create", { ...COMPANY, owners: "Ada" }],
      ["quote_action", { action: 7, input: [] }],
      ["get_execution", { executionId: 12 }],
      ["list_executions", { limit: "ten" }],
      ["wait_for_execution", { executionId: "exe_x", timeoutSeconds: "soon" }],
    ];
    for (const [name, args] of bad) {
      const result = await call(s.client, name, args);
      expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(sc(result)?.error?.code, `${name} ${JSON.stringify(args)}: ${text(result)}`).toBe("invalid_input");
    }
    // The connection is still fine, and nothing was paid or recorded at the service.
    const spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentTotal)).toBe(0);
    expect(usdc(spending.reserved)).toBe(0);
    expect((await serviceGet(s.home, "/executions")).items).toEqual([]);
    const ok = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(ok.isError ?? false, text(ok)).toBe(false);
  });
});
