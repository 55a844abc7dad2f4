/**
 * The seller's side of the Bazaar discovery extension, ported from @x402/extensions 2.27.0
 * (dist/esm/chunk-SV2YHMOC.mjs, which bundles its src/bazaar/*.ts) so the sandbox does not
 * carry that package (and the EVM libraries it installs) at run time: the declaration a paid
 * resource puts in its route's `extensions`, and the per-request enrichment that writes the
 * request's method into it before it goes out in the 402. Same objects, same key order, so
 * the wire is the package's byte for byte (test/sandbox/bazaar-parity.test.ts compares).
 * Only what the sandbox's own resources use is ported: HTTP query and body declarations
 * without a declared method or path parameters, and routes without parameters.
 */
import type { ResourceServerExtension } from "@x402/core/types";
import { BAZAAR } from "../facilitator/bazaar.js";

const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";

/** The package's `DeclareQueryDiscoveryExtensionConfig` / `DeclareBodyDiscoveryExtensionConfig`, as far as ported. */
export interface HttpDiscoveryConfig {
  /** An example input: the query parameters, or the body when `bodyType` is set. */
  input?: Record<string, unknown>;
  /** JSON Schema of the query parameters' object, or of the body. */
  inputSchema?: Record<string, unknown>;
  /** Set for a body method (POST, PUT, PATCH). */
  bodyType?: "json" | "form-data" | "text";
  output?: { example?: unknown; schema?: Record<string, unknown> };
}

/** The `output` parts of info and schema, present only with an example. */
function outputParts(output: HttpDiscoveryConfig["output"]) {
  if (!output?.example) return { info: {}, schema: {} };
  return {
    info: { output: { type: "json", example: output.example } },
    schema: {
      output: {
        type: "object",
        properties: {
          type: { type: "string" },
          example: { type: "object", ...(output.schema && typeof output.schema === "object" ? output.schema : {}) },
        },
        required: ["type"],
      },
    },
  };
}

/** The declaration around an input's info and schema. */
function extension(
  inputInfo: Record<string, unknown>,
  inputSchemaProps: Record<string, unknown>,
  required: string[],
  output: HttpDiscoveryConfig["output"],
) {
  const out = outputParts(output);
  return {
    info: { input: inputInfo, ...out.info },
    schema: {
      $schema: DRAFT_2020,
      type: "object",
      properties: {
        input: { type: "object", properties: inputSchemaProps, required, additionalProperties: false },
        ...out.schema,
      },
      required: ["input"],
    },
  };
}

/**
 * `{bazaar: declaration}` for a route's `extensions`. Mirrors `declareDiscoveryExtension`
 * (src/bazaar/resourceService.ts) with `createQueryDiscoveryExtension` and
 * `createBodyDiscoveryExtension` (src/bazaar/http/resourceService.ts).
 */
export function declareDiscoveryExtension(config: HttpDiscoveryConfig): Record<string, unknown> {
  const { input = {}, inputSchema = { properties: {} }, bodyType, output } = config;
  const httpType = { type: "string", const: "http" };
  if (bodyType === undefined) {
    const info = { type: "http", queryParams: input };
    const props = {
      type: httpType,
      method: { type: "string", enum: ["GET", "HEAD", "DELETE"] },
      queryParams: { type: "object", ...inputSchema },
    };
    return { [BAZAAR.key]: extension(info, props, ["type", "method"], output) };
  }
  const info = { type: "http", bodyType, body: input };
  const props = {
    type: httpType,
    method: { type: "string", enum: ["POST", "PUT", "PATCH"] },
    bodyType: { type: "string", enum: ["json", "form-data", "text"] },
    body: inputSchema,
  };
  return { [BAZAAR.key]: extension(info, props, ["type", "method", "bodyType", "body"], output) };
}

interface Declaration {
  info?: { input?: Record<string, unknown> } & Record<string, unknown>;
  schema?: {
    properties?: { input?: { properties?: Record<string, unknown>; required?: string[] } } & Record<string, unknown>;
  } & Record<string, unknown>;
}

const isHttpRequestContext = (ctx: unknown): ctx is { method: string } =>
  ctx !== null && typeof ctx === "object" && "method" in ctx && "adapter" in ctx;

/**
 * Registered on the resource server: each 402 (and each payment's declared extensions) gets
 * the request's method in `info.input.method`, and the schema allows only that method.
 * Mirrors `bazaarResourceServerExtension.enrichDeclaration` (src/bazaar/server.ts) up to its
 * path-parameter part, which only routes with `:param`, `[param]` or `*` reach.
 */
export const bazaarResourceServerExtension: ResourceServerExtension = {
  key: BAZAAR.key,
  enrichDeclaration(declaration, transportContext) {
    if (!isHttpRequestContext(transportContext)) return declaration;
    const ext = declaration as Declaration;
    if (ext.info?.input?.type === "mcp") return declaration;
    const method = transportContext.method;
    const input = ext.schema?.properties?.input;
    const required = input?.required || [];
    return {
      ...ext,
      info: { ...(ext.info || {}), input: { ...(ext.info?.input || {}), method } },
      schema: {
        ...(ext.schema || {}),
        properties: {
          ...(ext.schema?.properties || {}),
          input: {
            ...(input || {}),
            properties: { ...(input?.properties || {}), method: { type: "string", enum: [method] } },
            required: [...required, ...(!required.includes("method") ? ["method"] : [])],
          },
        },
      },
    };
  },
};
