/**
 * The service's free reads, asked of the Engine (the MCP surface and the doctor ask it, not
 * the v1 API) against the reference service over HTTP: the catalog with each action's
 * detail, the catalog's names, a formed company's record, the agent-service marketplace —
 * each refusal with its stable code — and, with no service configured, nothing asked.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { COMPANY_INPUT } from "../helpers/api.js";
import { engineFixture, refusal, type EngineFixture } from "../helpers/engine.js";
import { startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";

describe("engine: the service's free reads", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("the catalog: every action the service lists, with its detail, sorted by name; and its names", async () => {
    f = await engineFixture({ t });
    const listed = await t.call("GET", "/actions");
    const names = (listed.body.items as Array<{ name: string }>).map((a) => a.name);

    const catalog = (await f.pa.engine.fetchCatalog())!;
    expect(catalog.map((e) => e.name)).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    for (const entry of catalog) {
      const detail = await t.call("GET", `/actions/${encodeURIComponent(entry.name)}`);
      expect(entry.detail, entry.name).toEqual(detail.body);
    }

    expect(await f.pa.engine.actionNames()).toEqual({ ok: true, names });
  });

  it("the catalog's names: the service's refusal in words, with its status", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_API_KEY: "sk_sandbox_not_the_key" } });
    const answer = await f.pa.engine.actionNames();
    expect(answer).toMatchObject({ ok: false, status: 401 });
    expect(answer?.ok === false && answer.problem).toMatch(/^GET \/actions answered HTTP 401 /);
    await expect(f.pa.engine.fetchCatalog()).rejects.toThrow(/HTTP 401/);
  });

  it("a company formed with companies.create, as the service records it; an unknown one is not_found", async () => {
    f = await engineFixture({
      t,
      env: { PAID_ACTIONS_MAX_PER_CALL: "100", PAID_ACTIONS_MAX_PER_DAY: "100", PAID_ACTIONS_APPROVAL_ABOVE: "100" },
    });
    const paid = await f.pa.engine.pay({ action: "companies.create", input: COMPANY_INPUT });
    const done = await waitForExecution(t.call, paid.executionId, (e) => e.status === "completed");
    const companyId = done.output.companyId as string;

    const company = await f.pa.engine.company(companyId);
    expect(company).toMatchObject({ companyId, name: COMPANY_INPUT.name, formationStatus: "formed" });
    expect(company).toEqual((await t.call("GET", `/companies/${companyId}`)).body);

    const missing = await refusal(f.pa.engine.company("co_doesnotexist"));
    expect(missing.code).toBe("not_found");
    expect(missing.message).toMatch(/^company co_doesnotexist: HTTP 404 not_found/);
  });

  it("the agent-service marketplace: what the service finds; a query it refuses is invalid_input", async () => {
    f = await engineFixture({ t });
    const query = { taskType: "translation", limit: 5 };
    const found = await f.pa.engine.searchAgentServices(query);
    expect(found.items.length).toBeGreaterThan(0);
    expect(found).toEqual((await t.call("POST", "/agent-services/search", { body: query })).body);

    const refused = await refusal(f.pa.engine.searchAgentServices({ limit: "many" }));
    expect(refused.code).toBe("invalid_input");
    expect(refused.message).toMatch(/^search refused \(HTTP 400 /);
  });

  it("with no service configured: no catalog, no names, and the reads refused config_invalid naming the key", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_PER_DAY: "lots" } });
    expect(f.pa.configResult.ok).toBe(false);
    expect(await f.pa.engine.fetchCatalog()).toBeUndefined();
    expect(await f.pa.engine.actionNames()).toBeUndefined();
    for (const read of [f.pa.engine.company("co_x"), f.pa.engine.searchAgentServices({})]) {
      const e = await refusal(read);
      expect(e.code).toBe("config_invalid");
      expect(e.message).toContain("PAID_ACTIONS_MAX_PER_DAY");
    }
    expect(f.proxy.seen).toHaveLength(0);
  });
});
