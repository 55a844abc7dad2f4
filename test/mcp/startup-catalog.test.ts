/**
 * What the first tools/list of a fresh home loads in sandbox mode: the sandbox's catalog
 * module, read by the app (serving.ts) instead of starting the sandbox. Every module it
 * reaches, statically or dynamically, is a price list, a schema or a domain type, and the
 * only package is zod (which the MCP SDK loads anyway): never the ledger, LiteSVM, x402,
 * Solana or SQLite.
 */
import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { sandboxCatalogRows } from "../../src/app/serving.js";
import { ACTIONS, describeAction } from "../../src/sandbox/providers/catalog.js";

const SRC = resolve(import.meta.dirname, "../../src");

/** The src files (relative to src/) and the packages reachable from `entry` through relative imports. */
function reachable(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (abs: string) => {
    const rel = relative(SRC, abs);
    if (files.has(rel)) return;
    files.add(rel);
    for (const f of ts.preProcessFile(readFileSync(abs, "utf8"), true, true).importedFiles) {
      if (f.fileName.startsWith(".")) visit(resolve(dirname(abs), f.fileName.replace(/\.js$/, ".ts")));
      else packages.add(f.fileName);
    }
  };
  visit(resolve(SRC, entry));
  return { files: [...files].sort(), packages: [...packages].sort() };
}

describe("the sandbox's catalog, read for the first tools/list", () => {
  it("reaches only the price lists, schemas and domain types, and no package but zod", () => {
    const { files, packages } = reachable("sandbox/providers/catalog.ts");
    for (const f of files) expect(f).toMatch(/^(sandbox\/providers|domain)\//);
    expect(files).not.toContain("sandbox/providers/outputs.ts");
    expect(packages).toEqual(["zod"]);
  });

  it("gives each action as the service's GET /actions/{name} describes it, in a cached catalog's shape", async () => {
    const rows = await sandboxCatalogRows();
    expect(rows.map((r) => r.name)).toEqual(ACTIONS.map((a) => a.name));
    for (const r of rows) expect(r.detail).toEqual(describeAction(ACTIONS.find((a) => a.name === r.name)!));
  });
});
