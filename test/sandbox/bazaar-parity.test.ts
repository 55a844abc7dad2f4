/**
 * The sandbox's own Bazaar code (src/sandbox/resources/bazaar.ts, src/sandbox/facilitator/bazaar.ts)
 * against the stock @x402/extensions it was ported from, a devDependency here: the 402 of each
 * paid resource declares byte for byte what the stock `declareDiscoveryExtension` and
 * `bazaarResourceServerExtension` build; the declaration and the enrichment agree for other
 * configurations too; and the catalog extracts the same discovery info as the stock
 * `extractDiscoveryInfo` from valid, missing and malformed declarations.
 */
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import {
  bazaarResourceServerExtension as stockEnrichment,
  declareDiscoveryExtension as stockDeclare,
  extractDiscoveryInfo as stockExtract,
  type DeclareDiscoveryExtensionConfig,
} from "@x402/extensions/bazaar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractDiscoveryInfo } from "../../src/sandbox/facilitator/bazaar.js";
import {
  bazaarResourceServerExtension,
  declareDiscoveryExtension,
  type HttpDiscoveryConfig,
} from "../../src/sandbox/resources/bazaar.js";
import { PAID_RESOURCES } from "../../src/sandbox/resources/catalog.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

/** The transport context the stock HTTP resource server hands an extension. */
const httpContext = (method: string, path: string) => ({
  method,
  path,
  routePattern: path,
  adapter: { getPath: () => path },
});

const stockDeclaration = (config: HttpDiscoveryConfig) =>
  stockDeclare(config as DeclareDiscoveryExtensionConfig).bazaar;

describe("the 402 of the sandbox's paid resources", () => {
  let t: TestSandbox;
  let root: string;
  beforeAll(async () => {
    t = await startTestSandbox();
    root = t.sb.facilitatorUrl.replace(/\/facilitator$/, "");
  });
  afterAll(async () => {
    await t?.close();
  });

  const requests: Record<string, [string, RequestInit]> = {
    "/x402/weather": ["/x402/weather?city=Oslo", {}],
    "/x402/summarize": [
      "/x402/summarize",
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "Hi." }) },
    ],
  };

  it.each(PAID_RESOURCES.map((r) => [`${r.method} ${r.path}`, r] as const))(
    "%s declares extensions.bazaar exactly as the stock declaration, enriched by the stock extension",
    async (_name, resource) => {
      const [path, init] = requests[resource.path]!;
      const res = await fetch(`${root}${path}`, init);
      expect(res.status).toBe(402);
      const header = res.headers.get("payment-required")!;
      const challenge = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
      const expected = stockEnrichment.enrichDeclaration!(
        stockDeclaration(resource.discovery),
        httpContext(resource.method, resource.path),
      );
      expect(challenge.extensions.bazaar).toEqual(expected);
      expect(JSON.stringify(challenge.extensions.bazaar)).toBe(JSON.stringify(expected));
    },
  );
});

describe("declaring and enriching, as the stock package does", () => {
  const configs: Record<string, HttpDiscoveryConfig> = {
    "empty query": {},
    "query with an output schema": {
      input: { q: "x", n: 2 },
      inputSchema: { properties: { q: { type: "string" }, n: { type: "integer" } }, required: ["q"] },
      output: { example: { ok: true }, schema: { properties: { ok: { type: "boolean" } } } },
    },
    "query with a falsy example (no output)": { input: { q: "x" }, output: { example: 0 } },
    "json body": { bodyType: "json", input: { text: "a" }, inputSchema: { properties: { text: { type: "string" } } } },
    "form-data body, no input": { bodyType: "form-data" },
    "text body with output": { bodyType: "text", input: {}, output: { example: { summary: "s" } } },
    ...Object.fromEntries(PAID_RESOURCES.map((r) => [r.path, r.discovery])),
  };

  it.each(Object.entries(configs))("%s: the same declaration, key for key", (_name, config) => {
    const ours = declareDiscoveryExtension(config);
    const stock = stockDeclare(config as DeclareDiscoveryExtensionConfig);
    expect(JSON.stringify(ours)).toBe(JSON.stringify(stock));
  });

  it.each(Object.entries(configs))("%s: the same enrichment for GET and POST", (_name, config) => {
    for (const method of ["GET", "POST"]) {
      const ctx = httpContext(method, "/r");
      const ours = bazaarResourceServerExtension.enrichDeclaration!(declareDiscoveryExtension(config).bazaar, ctx);
      const stock = stockEnrichment.enrichDeclaration!(stockDeclaration(config), ctx);
      expect(JSON.stringify(ours)).toBe(JSON.stringify(stock));
    }
  });

  it("leaves a declaration alone outside HTTP, and an MCP tool's", () => {
    const declaration = declareDiscoveryExtension({ input: { q: "x" } }).bazaar;
    expect(bazaarResourceServerExtension.enrichDeclaration!(declaration, { toolName: "t" })).toBe(declaration);
    const mcp = stockDeclare({ toolName: "t", inputSchema: { type: "object" } }).bazaar;
    expect(bazaarResourceServerExtension.enrichDeclaration!(mcp, httpContext("GET", "/r"))).toBe(mcp);
  });
});

describe("extracting discovery info from a settled payment, as the stock package does", () => {
  const requirements = {
    scheme: "exact",
    network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
    amount: "1000",
    asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    payTo: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
    maxTimeoutSeconds: 60,
    extra: {},
  } as PaymentRequirements;
  const payload = (extensions?: Record<string, unknown>, resource: Record<string, unknown> = {}): PaymentPayload =>
    ({
      x402Version: 2,
      resource: { url: "https://api.example.com/weather?city=Oslo", description: "Weather", ...resource },
      accepted: requirements,
      payload: { transaction: "AAAA" },
      ...(extensions ? { extensions } : {}),
    }) as PaymentPayload;
  const enriched = (config: HttpDiscoveryConfig, method: string) =>
    stockEnrichment.enrichDeclaration!(stockDeclaration(config), httpContext(method, "/weather")) as Record<
      string,
      unknown
    >;
  const weather = enriched(PAID_RESOURCES[0]!.discovery, "GET");
  const summarize = enriched(PAID_RESOURCES[1]!.discovery, "POST");
  const withInfo = (declaration: Record<string, unknown>, info: unknown) => ({ ...declaration, info });
  const mcp = stockDeclare({ toolName: "forecast", description: "A forecast", inputSchema: { type: "object" } }).bazaar;
  const zodLike = {
    info: { input: { type: "http", method: "GET", queryParams: { unit: "c" } } },
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $defs: { unit: { type: "string", enum: ["c", "f"] } },
      type: "object",
      properties: {
        input: {
          type: "object",
          properties: {
            type: { const: "http" },
            method: { anyOf: [{ const: "GET" }, { const: "HEAD" }] },
            queryParams: {
              type: "object",
              properties: { unit: { $ref: "#/$defs/unit" } },
              additionalProperties: false,
            },
          },
          required: ["type", "method"],
        },
      },
    },
  };

  const cases: Record<string, PaymentPayload> = {
    "valid query declaration": payload({ bazaar: weather }),
    "valid body declaration": payload({ bazaar: summarize, other: { kept: true } }),
    "valid MCP tool": payload({ bazaar: mcp }),
    "valid with $defs, $ref, anyOf, const": payload({ bazaar: zodLike }),
    "valid with a route template": payload({ bazaar: { ...weather, routeTemplate: "/weather/:city" } }),
    "a route template that climbs out is dropped": payload({ bazaar: { ...weather, routeTemplate: "/a/%2e%2e/b" } }),
    "service metadata, sanitized": payload(
      { bazaar: weather },
      { serviceName: "Weather Co", tags: ["wx", "WX", "x".repeat(33), "ok"], iconUrl: "https://cdn.example.com/i.png" },
    ),
    "service metadata refused": payload(
      { bazaar: weather },
      { serviceName: "é", tags: "wx", iconUrl: "http://127.0.0.1/i.png", mimeType: "application/json" },
    ),
    "an icon on localhost": payload({ bazaar: weather }, { iconUrl: "https://localhost/i.png" }),
    "an icon with credentials": payload({ bazaar: weather }, { iconUrl: "https://u:p@cdn.example.com/i.png" }),
    "missing: no extensions": payload(),
    "missing: other extensions only": payload({ "payment-identifier": { info: { required: false } } }),
    "malformed: not enriched (no method)": payload({ bazaar: stockDeclaration(PAID_RESOURCES[0]!.discovery) }),
    "malformed: info against a string schema": payload({
      bazaar: { info: { input: { type: "http" } }, schema: { type: "string" } },
    }),
    "malformed: a string": payload({ bazaar: "bazaar" }),
    "malformed: null": payload({ bazaar: null }),
    "malformed: an array": payload({ bazaar: [weather] }),
    "malformed: no schema": payload({ bazaar: { info: weather.info } }),
    "malformed: example breaks its input schema": payload({
      bazaar: withInfo(weather, { input: { type: "http", method: "GET", queryParams: { city: "" } } }),
    }),
    "malformed: an extra input field": payload({
      bazaar: withInfo(weather, { input: { type: "http", method: "GET", queryParams: {}, extra: 1 } }),
    }),
    "malformed: an external $ref": payload({
      bazaar: { ...weather, schema: { $ref: "https://evil.example/schema.json" } },
    }),
    "malformed: a draft-07 schema": payload({
      bazaar: {
        ...weather,
        schema: { ...(weather.schema as object), $schema: "http://json-schema.org/draft-07/schema#" },
      },
    }),
    "malformed: a schema that does not compile": payload({
      bazaar: { ...weather, schema: { type: "object", properties: { input: { minLength: -1 } } } },
    }),
    "malformed: a pattern that is no regular expression": payload({
      bazaar: { ...weather, schema: { type: "object", properties: { input: { pattern: "[" } } } },
    }),
    "malformed: an unresolvable $ref": payload({ bazaar: { ...weather, schema: { $ref: "#/$defs/nothing" } } }),
    "malformed: a resource URL that does not parse": payload({ bazaar: weather }, { url: "not a url" }),
  };

  /** The stock outcome: what it returns, or undefined when it finds nothing or throws. */
  const stock = (p: PaymentPayload) => {
    try {
      return stockExtract(p, requirements, true) ?? undefined;
    } catch {
      return undefined;
    }
  };

  it.each(Object.entries(cases))("%s", (_name, p) => {
    expect(extractDiscoveryInfo(p)).toEqual(stock(p));
  });

  it("the valid cases are found, the missing and malformed are not", () => {
    for (const [name, p] of Object.entries(cases)) {
      expect(extractDiscoveryInfo(p) !== undefined, name).toBe(!/^(missing|malformed)/.test(name));
    }
  });

  it("refuses, where the stock package passes them on, inputs the catalog cannot store", () => {
    const loose = (info: unknown) => payload({ bazaar: { info, schema: {} } });
    for (const p of [
      loose({ input: "http" }),
      loose({ input: { method: "GET" } }),
      loose({ input: { type: "http", method: 5 } }),
      loose({ input: { type: "mcp", toolName: 5 } }),
    ]) {
      expect(stock(p)).toBeDefined();
      expect(extractDiscoveryInfo(p)).toBeUndefined();
    }
  });
});
