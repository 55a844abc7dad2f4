/**
 * Dependencies point one way (docs: ARCHITECTURE.md): reads every import of every .ts file
 * under src/ — static, `export … from`, type-only and dynamic `import("…")` — and fails on
 * each edge between top-level folders that the table below does not allow, and on any
 * top-level folder the table does not place.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");

/** Which top-level folders each may import from; an edge inside a folder is always allowed. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  cli: ["commands", "app", "domain"],
  commands: ["app", "mcp", "engine", "sandbox", "domain", "console"],
  app: ["mcp", "engine", "sandbox", "domain", "console"],
  console: ["engine", "domain"],
  mcp: ["engine", "domain"],
  engine: ["domain"],
  sandbox: ["domain"],
  domain: [],
};

/** `cli` for src/cli.ts, `engine` for src/engine/…; `(outside src)` for anything above it. */
function layerOf(absPath: string): string {
  const rel = relative(SRC, absPath);
  if (rel.startsWith("..")) return "(outside src)";
  const [first = ""] = rel.split(sep);
  return first === rel ? first.replace(/\.[cm]?[jt]sx?$/, "") : first;
}

/**
 * Every module specifier a file names. TypeScript's own pre-processor finds them without
 * type-checking, so imports inside comments and strings are not mistaken for real ones.
 */
function specifiers(text: string): Array<{ specifier: string; line: number }> {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => ({
    specifier: f.fileName,
    line: text.slice(0, f.pos).split("\n").length,
  }));
}

interface Edge {
  /** `src/<path>:<line>` */
  file: string;
  from: string;
  to: string;
  specifier: string;
}

function edges(): Edge[] {
  const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).sort();
  const out: Edge[] = [];
  for (const f of files) {
    const abs = join(SRC, f);
    for (const { specifier, line } of specifiers(readFileSync(abs, "utf8"))) {
      if (!specifier.startsWith(".")) continue; // packages and node: builtins
      out.push({ file: `src/${f.split(sep).join("/")}:${line}`, from: layerOf(abs), to: layerOf(resolve(dirname(abs), specifier)), specifier });
    }
  }
  return out;
}

/** What is wrong with an edge, or undefined when it is allowed. */
function violation(e: Edge): string | undefined {
  if (!(e.from in ALLOWED)) return `${e.file}: the folder ${e.from}/ is not placed in the layer table`;
  if (e.from === e.to) return undefined;
  if (!(e.to in ALLOWED)) return `${e.file} imports ${e.specifier}: ${e.to} is not placed in the layer table`;
  return ALLOWED[e.from]!.includes(e.to) ? undefined : `${e.file} imports ${e.specifier}: ${e.from} -> ${e.to} is not allowed`;
}

describe("layers", () => {
  it("finds imports of every kind (static, re-export, type-only, dynamic) and ignores comments", () => {
    const text = [
      'import { a } from "./a.js";',
      'import type { B } from "../b/index.js";',
      'export { c } from "./c.js";',
      'export * from "./d.js";',
      'import "./side-effect.js";',
      'const e = await import("../e.js");',
      "import {",
      "  f,",
      '} from "./f.js";',
      '// import { x } from "./commented.js";',
      'const s = "import { y } from \\"./in-a-string.js\\"";',
      'type G = typeof import("./g.js");',
    ].join("\n");
    expect(specifiers(text)).toEqual([
      { specifier: "./a.js", line: 1 },
      { specifier: "../b/index.js", line: 2 },
      { specifier: "./c.js", line: 3 },
      { specifier: "./d.js", line: 4 },
      { specifier: "./side-effect.js", line: 5 },
      { specifier: "../e.js", line: 6 },
      { specifier: "./f.js", line: 9 },
      { specifier: "./g.js", line: 12 },
    ]);
  });

  it("maps files to their top-level folder", () => {
    expect(layerOf(join(SRC, "cli.ts"))).toBe("cli");
    expect(layerOf(join(SRC, "engine", "budget", "policy.ts"))).toBe("engine");
    expect(layerOf(join(SRC, "engine", "journal", "sqlite.ts"))).toBe("engine");
    expect(layerOf(join(SRC, "..", "package.json"))).toBe("(outside src)");
  });

  it("places every top-level folder of src/ in the table", () => {
    const unplaced = readdirSync(SRC, { withFileTypes: true })
      .filter((d) => d.isDirectory() || d.name.endsWith(".ts"))
      .map((d) => layerOf(join(SRC, d.name)))
      .filter((layer) => !(layer in ALLOWED));
    expect(unplaced, `top-level entries of src/ not placed in the layer table: ${unplaced.join(", ")}`).toEqual([]);
  });

  it("has every import between folders point the allowed way", () => {
    const all = edges();
    expect(all.length).toBeGreaterThan(0);
    const wrong = all.map(violation).filter((v): v is string => v !== undefined);
    expect(wrong, `imports against the layer table:\n  ${wrong.join("\n  ")}\n`).toEqual([]);
  });
});
