/**
 * server.json, the MCP Registry entry: valid against the registry's published schema
 * (2025-12-11, vendored in test/fixtures/registry with its source), and saying what the
 * package and the README say — the npm package and version, the name package.json's
 * mcpName gives (the registry checks the two match), every configuration variable the
 * README's table documents, and which of them are secrets.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const readJson = (path: string) => JSON.parse(readFileSync(join(ROOT, path), "utf8"));
const schema = readJson("test/fixtures/registry/server.schema.json");
const server = readJson("server.json");
const pkg = readJson("package.json");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");

// ajv-formats is CommonJS: its default export arrives as the module object under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(schema);
const problems = (doc: unknown) =>
  validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);

/** The variables of the README's Configuration table, except the sandbox-only knob. */
function documentedVariables(): string[] {
  const names = [...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]!);
  return [...new Set(names)].filter((n) => n !== "PAID_ACTIONS_SANDBOX_DELAY_MS");
}

describe("server.json (the MCP Registry entry)", () => {
  it("validates against the registry's 2025-12-11 schema, which it names", () => {
    expect(schema.$id).toBe("https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json");
    expect(server.$schema).toBe(schema.$id);
    expect(problems(server)).toEqual([]);
  });

  it("the validator is live: it refuses what the registry refuses", () => {
    expect(problems({ ...server, name: "paid-actions-mcp" }).join()).toMatch(/name must match pattern/);
    expect(problems({ ...server, description: "x".repeat(101) }).join()).toMatch(
      /description must NOT have more than 100 characters/,
    );
    expect(problems({ ...server, packages: [{ ...server.packages[0], version: "latest" }] }).join()).toMatch(
      /version must NOT be valid/,
    );
    expect(problems({ ...server, packages: [{ ...server.packages[0], transport: { type: "pigeon" } }] })).not.toEqual(
      [],
    );
  });

  it("names the npm package at package.json's version, over stdio, under the name package.json's mcpName gives", () => {
    expect(server.name).toMatch(/^io\.github\.[A-Za-z0-9-]+\/paid-actions-mcp$/);
    expect(pkg.mcpName).toBe(server.name);
    expect(server.version).toBe(pkg.version);
    expect(server.packages).toHaveLength(1);
    expect(server.packages[0]).toMatchObject({
      registryType: "npm",
      identifier: pkg.name,
      version: pkg.version,
      runtimeHint: "npx",
      transport: { type: "stdio" },
    });
  });

  it("lists every configuration variable the README documents, the secrets marked secret", () => {
    const vars = server.packages[0].environmentVariables as Array<{
      name: string;
      isSecret?: boolean;
      isRequired?: boolean;
      format?: string;
    }>;
    const names = vars.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    expect(documentedVariables().length).toBeGreaterThanOrEqual(10);
    for (const n of documentedVariables()) expect(names, n).toContain(n);
    for (const n of names) expect(readme, n).toContain(`\`${n}\``);
    const secret = vars
      .filter((v) => v.isSecret === true)
      .map((v) => v.name)
      .sort();
    // The API key; the RPC URLs and the journal URL may carry a provider's key or a password.
    expect(secret).toEqual([
      "PAID_ACTIONS_API_KEY",
      "PAID_ACTIONS_EVM_RPC_URL",
      "PAID_ACTIONS_JOURNAL_URL",
      "SOLANA_RPC_URL",
    ]);
    expect(vars.find((v) => v.name === "PAID_ACTIONS_WALLET")).toMatchObject({ isSecret: false, format: "filepath" });
    expect(vars.find((v) => v.name === "PAID_ACTIONS_EVM_WALLET")).toMatchObject({
      isSecret: false,
      format: "filepath",
    });
    // Nothing is required: without a service the server runs against its embedded sandbox.
    expect(vars.filter((v) => v.isRequired)).toEqual([]);
  });
});
