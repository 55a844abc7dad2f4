/**
 * Dependencies point one way (docs/architecture.md): reads every import of every .ts file
 * under src/ — static, `export … from`, type-only and dynamic `import("…")` — and fails on
 * each edge between top-level folders that the table below does not allow, and on any
 * top-level folder the table does not place; and inside the engine, on an import past its
 * front door, a rule module reaching for I/O, and budget logic in the journal.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
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
      out.push({
        file: `src/${f.split(sep).join("/")}:${line}`,
        from: layerOf(abs),
        to: layerOf(resolve(dirname(abs), specifier)),
        specifier,
      });
    }
  }
  return out;
}

/** What is wrong with an edge, or undefined when it is allowed. */
function violation(e: Edge): string | undefined {
  if (!(e.from in ALLOWED)) return `${e.file}: the folder ${e.from}/ is not placed in the layer table`;
  if (e.from === e.to) return undefined;
  if (!(e.to in ALLOWED)) return `${e.file} imports ${e.specifier}: ${e.to} is not placed in the layer table`;
  return ALLOWED[e.from]!.includes(e.to)
    ? undefined
    : `${e.file} imports ${e.specifier}: ${e.from} -> ${e.to} is not allowed`;
}

/** The specifiers a file imports values from (type-only imports and re-exports left out). */
function valueSpecifiers(text: string): string[] {
  const sf = ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named =
        clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (!clause.name && named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly)));
      if (!typeOnly) out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      if (!(node.isTypeOnly || (named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly))))
        out.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** src-relative paths (with /) of what `file` (src-relative) imports, all kinds or values only. */
function targets(file: string, kind: "all" | "values"): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  const specs = kind === "all" ? specifiers(text).map((s) => s.specifier) : valueSpecifiers(text);
  return specs
    .filter((s) => s.startsWith("."))
    .map((s) =>
      relative(SRC, resolve(dirname(join(SRC, file)), s))
        .split(sep)
        .join("/")
        .replace(/\.js$/, ".ts"),
    );
}

const sourcesUnder = (dir: string) =>
  (readdirSync(join(SRC, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `${dir}/${f.split(sep).join("/")}`);

/**
 * The engine's pure rules: table-tested without I/O, so they may use only types, domain/,
 * the engine's ground (model/, errors.ts) and each other.
 */
const RULE_MODULES = [
  "engine/model/transitions.ts",
  "engine/budget/policy.ts",
  "engine/chain/rules.ts",
  "engine/intent/answers.ts",
  "engine/intent/verdicts.ts",
  "engine/config/action-names.ts",
  "engine/x402-http/request.ts",
  "engine/x402-http/origins.ts",
  "engine/x402-http/challenge.ts",
  "engine/x402-http/response.ts",
];
const GROUND = (t: string) => t.startsWith("domain/") || t.startsWith("engine/model/") || t === "engine/errors.ts";

describe("the engine's inner layers", () => {
  it("nothing outside the engine reaches past its front door (engine/index.ts)", () => {
    const outside = ["cli.ts", ...["app", "mcp", "console", "commands"].flatMap(sourcesUnder)];
    const wrong = outside.flatMap((f) =>
      targets(f, "all")
        .filter((t) => t.startsWith("engine/") && t !== "engine/index.ts")
        .map((t) => `src/${f} imports src/${t}`),
    );
    expect(wrong, `past the engine's front door:\n  ${wrong.join("\n  ")}\n`).toEqual([]);
  });

  it("the rule modules import values only from domain/, the engine's ground and each other", () => {
    for (const m of RULE_MODULES) expect(existsSync(join(SRC, m)), m).toBe(true);
    const wrong = RULE_MODULES.flatMap((f) =>
      targets(f, "values")
        .filter((t) => !GROUND(t) && !RULE_MODULES.includes(t))
        .map((t) => `src/${f} imports src/${t}`),
    );
    expect(wrong, `rule modules with I/O reaching imports:\n  ${wrong.join("\n  ")}\n`).toEqual([]);
  });

  it("model/ is the ground: it imports nothing from above it, not even types", () => {
    const wrong = sourcesUnder("engine/model").flatMap((f) =>
      targets(f, "all")
        .filter((t) => !GROUND(t))
        .map((t) => `src/${f} imports src/${t}`),
    );
    expect(wrong).toEqual([]);
  });

  it("journal/ holds no budget logic: it takes the budget decision as a function", () => {
    const files = sourcesUnder("engine/journal");
    const wrong = files.flatMap((f) =>
      targets(f, "values")
        .filter((t) => t.startsWith("engine/budget/"))
        .map((t) => `src/${f} imports src/${t}`),
    );
    expect(wrong).toEqual([]);
    for (const f of files)
      expect(readFileSync(join(SRC, f), "utf8"), f).not.toMatch(/\b(evaluateBudget|callCeiling)\b/);
  });

  it("tells a value import from a type-only one", () => {
    const text = [
      'import { a } from "./a.js";',
      'import type { B } from "./b.js";',
      'import { type C, type D } from "./c.js";',
      'import { type E, f } from "./e.js";',
      'export type { G } from "./g.js";',
      'export { h } from "./h.js";',
      'await import("./i.js");',
    ].join("\n");
    expect(valueSpecifiers(text)).toEqual(["./a.js", "./e.js", "./h.js", "./i.js"]);
  });
});

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
