/**
 * The catalog endpoints of service-v1.md over real HTTP against a running sandbox: the
 * actions with their schemas, pricing and budget hints, and the agent-services search.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDecimal } from "../../src/domain/money.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { ACTION_NAMES, DECIMAL, expectError } from "../helpers/api.js";

describe("the v1 endpoints", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ allowPrivateWebhooks: true });
  });
  afterAll(() => t.close());

  describe("actions", () => {
    it("GET /actions lists the six actions as {items: [{name, supportsAsync}]}", async () => {
      const res = await t.call("GET", "/actions");
      expect(res.status).toBe(200);
      expect(res.headers["x-request-id"]).toMatch(/^req_/);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.body.items.map((i: any) => i.name).sort()).toEqual([...ACTION_NAMES].sort());
      for (const item of res.body.items) {
        expect(item.name).toMatch(/^[a-z0-9-]+\.[a-z0-9-]+$/);
        expect(typeof item.supportsAsync).toBe("boolean");
      }
    });

    it.each(ACTION_NAMES)("GET /actions/%s: schema (JSON Schema 2020-12), pricing, budget hints", async (name) => {
      const res = await t.call("GET", `/actions/${name}`);
      expect(res.status).toBe(200);
      const a = res.body;
      expect(a).toMatchObject({ name, description: expect.any(String), supportsAsync: expect.any(Boolean) });
      expect(a.description.length).toBeGreaterThan(10);
      expect(a.inputSchema).toMatchObject({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: expect.any(Object),
        required: expect.any(Array),
      });
      for (const field of a.inputSchema.required) expect(Object.keys(a.inputSchema.properties)).toContain(field);
      expect(["fixed", "per_unit"]).toContain(a.pricing.model);
      expect(a.pricing.currency).toBe("USDC");
      expect(a.budgetHints.typical).toMatch(DECIMAL);
      expect(a.budgetHints.max).toMatch(DECIMAL);
      expect(parseDecimal(a.budgetHints.typical)!).toBeLessThanOrEqual(parseDecimal(a.budgetHints.max)!);
    });

    it("the published schemas name the documented input fields", async () => {
      const props = async (name: string) => (await t.call("GET", `/actions/${name}`)).body.inputSchema;
      const servers = await props("servers.provision");
      expect(Object.keys(servers.properties)).toEqual(
        expect.arrayContaining(["region", "plan", "image", "durationHours", "sshKeys"]),
      );
      expect(servers.required).toEqual(expect.arrayContaining(["region", "plan", "durationHours"]));
      expect(servers.properties.durationHours).toMatchObject({ type: "integer", minimum: 1, maximum: 8760 });
      const companies = await props("companies.create");
      expect(Object.keys(companies.properties)).toEqual(
        expect.arrayContaining(["jurisdiction", "companyType", "name", "owners", "registeredAgent"]),
      );
      expect(Object.keys(companies.properties.owners.items.properties).sort()).toEqual(["country", "fullName", "type"]);
      const agents = await props("agent-services.purchase");
      expect(Object.keys(agents.properties)).toEqual(
        expect.arrayContaining(["serviceId", "task", "deliveryMode", "maxPrice"]),
      );
    });
  });

  describe("POST /agent-services/search", () => {
    const search = (body: unknown) => t.call("POST", "/agent-services/search", { body });
    const price = (s: any) => parseDecimal(s.price.amount)!;

    it("without filters: every service, priced in USDC, with guarantees", async () => {
      const res = await search({});
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeGreaterThan(5);
      for (const s of res.body.items) {
        expect(s).toMatchObject({
          serviceId: expect.stringMatching(/^svc_/),
          taskTypes: expect.any(Array),
          price: { amount: expect.stringMatching(DECIMAL), currency: "USDC" },
          guarantees: { refundOnFailure: expect.any(Boolean), maxDeliverySeconds: expect.any(Number) },
        });
      }
    });

    it("by taskType", async () => {
      const res = await search({ taskType: "translation" });
      expect(res.status).toBe(200);
      expect(res.body.items.map((s: any) => s.serviceId).sort()).toEqual(["svc_translate01", "svc_translate02"]);
      for (const s of res.body.items) expect(s.taskTypes).toContain("translation");
      expect((await search({ taskType: "no-such-task" })).body.items).toEqual([]);
    });

    it("by priceBand", async () => {
      const all = (await search({})).body.items;
      const res = await search({ priceBand: { min: "1", max: "5" } });
      expect(res.status).toBe(200);
      const inBand = all.filter((s: any) => price(s) >= 1_000_000n && price(s) <= 5_000_000n);
      expect(inBand.length).toBeGreaterThan(0);
      expect(inBand.length).toBeLessThan(all.length);
      expect(res.body.items.map((s: any) => s.serviceId).sort()).toEqual(inBand.map((s: any) => s.serviceId).sort());
      const onlyMax = await search({ priceBand: { max: "0.10" } });
      for (const s of onlyMax.body.items) expect(price(s)).toBeLessThanOrEqual(100_000n);
      expect(onlyMax.body.items.map((s: any) => s.serviceId)).toContain("svc_summarize01");
    });

    it("by guarantees, and all filters together", async () => {
      const res = await search({ guarantees: { refundOnFailure: true, maxDeliverySeconds: 600 } });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeGreaterThan(0);
      for (const s of res.body.items) {
        expect(s.guarantees.refundOnFailure).toBe(true);
        expect(s.guarantees.maxDeliverySeconds).toBeLessThanOrEqual(600);
      }
      const ids = res.body.items.map((s: any) => s.serviceId);
      expect(ids).not.toContain("svc_summarize01"); // no refund on failure
      expect(ids).not.toContain("svc_research01"); // 1800 s

      const combined = await search({
        taskType: "translation",
        priceBand: { max: "1" },
        guarantees: { refundOnFailure: true },
      });
      expect(combined.body.items.map((s: any) => s.serviceId)).toEqual(["svc_translate01"]);
    });

    it("an invalid search is 400 invalid_request", async () => {
      expectError(await search({ priceBand: { min: "cheap" } }), 400, "invalid_request");
    });
  });
});
