/**
 * Dependencies point one way (docs/architecture.md): reads every import of every .ts file
 * under src/ — static, `export … from`, type-only and dynamic `import("…")` — and fails on
 * each edge between top-level folders that the table below does not allow, and on any
 * top-level folder the table does not place; inside the engine, on an import past its
 * front door, a name on the door that nothing outside takes, the v1 service API reaching
 * past it, a rule module reaching for I/O, and budget logic in the journal; and on modules
 * that load each other (a value import cycle). The rails' own rules (where the chain
 * libraries may be imported) are in layers-rails.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";
import {
  cycles,
  exportedNames,
  filesUnder,
  namesTaken,
  sourcesUnder,
  specifiers,
  SRC,
  targets,
  valueSpecifiers,
} from "./imports.fixtures.js";

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

/**
 * The engine's pure rules: table-tested without I/O, so they may use only types, domain/,
 * the engine's ground (model/, errors.ts) and each other.
 */
const RULE_MODULES = [
  "engine/model/transitions.ts",
  "engine/budget/policy.ts",
  "engine/chain/chain.ts",
  "engine/rails/choose.ts",
  "engine/rails/solana/rules.ts",
  "engine/rails/evm/rules.ts",
  "engine/rails/evm/assets.ts",
  "engine/rails/evm/decode.ts",
  "engine/config/networks.ts",
  "engine/intent/answers.ts",
  "engine/intent/verdicts.ts",
  "engine/config/action-names.ts",
  "engine/x402-http/request.ts",
  "engine/x402-http/origins.ts",
  "engine/x402-http/challenge.ts",
  "engine/x402-http/response.ts",
];
const GROUND = (t: string) => t.startsWith("domain/") || t.startsWith("engine/model/") || t === "engine/errors.ts";

/** The engine's front door, and the v1 service API behind it (the only module that knows the v1 paths). */
const DOOR = "engine/index.ts";
const SERVICE_API = "engine/service/api.ts";

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

  it("the v1 service API stays behind the door: what the others need of the service, they ask the Engine", () => {
    const outside = (readdirSync(SRC, { recursive: true }) as string[])
      .filter((f) => f.endsWith(".ts"))
      .map((f) => f.split(sep).join("/"))
      .filter((f) => !f.startsWith("engine/"));
    const direct = outside.flatMap((f) =>
      targets(f, "all")
        .filter((t) => t === SERVICE_API)
        .map((t) => `src/${f} imports src/${t}`),
    );
    const apiNames = new Set(exportedNames(readFileSync(join(SRC, SERVICE_API), "utf8")));
    const through = [
      ...targets(DOOR, "all")
        .filter((t) => t === SERVICE_API)
        .map((t) => `src/${DOOR} re-exports from src/${t}`),
      ...exportedNames(readFileSync(join(SRC, DOOR), "utf8"))
        .filter((n) => apiNames.has(n))
        .map((n) => `src/${DOOR} exports ${n}, a name of src/${SERVICE_API}`),
    ];
    expect(apiNames.has("serviceApi")).toBe(true);
    expect(
      [...direct, ...through],
      `the v1 service API outside the engine:\n  ${[...direct, ...through].join("\n  ")}\n`,
    ).toEqual([]);
  });

  it("the door exports only what some file outside the engine (in src/ or test/) takes from it", () => {
    const exported = exportedNames(readFileSync(join(SRC, DOOR), "utf8"));
    expect(exported.length).toBeGreaterThan(10);
    // An `export *` hides its names from this test: the door names each one.
    expect(exported, `src/${DOOR} names what it exports`).not.toContain("*");
    const door = join(SRC, DOOR);
    const inEngine = join(SRC, "engine") + sep;
    const taken = new Set(
      [...filesUnder("src"), ...filesUnder("test")]
        .filter((f) => !f.startsWith(inEngine))
        .flatMap((f) => namesTaken(f, readFileSync(f, "utf8"), door)),
    );
    const unused = exported.filter((n) => !taken.has(n));
    expect(
      unused,
      `exported by src/${DOOR} but taken by no file outside src/engine (a test that needs an internal imports its module):\n  ${unused.join("\n  ")}\n`,
    ).toEqual([]);
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

  it("reads the names a module exports, and the names a file takes from a module", () => {
    const module = [
      'export { a, type B, c as d } from "./a.js";',
      'export * from "./e.js";',
      "export const f = 1, g = 2;",
      "export async function h() {}",
      "export class I {}",
      "export interface J {}",
      "export type K = string;",
      "const notExported = 3;",
      "function alsoNot() {}",
    ].join("\n");
    expect(exportedNames(module)).toEqual(["a", "B", "d", "*", "f", "g", "h", "I", "J", "K"]);

    const file = join(SRC, "mcp", "x.ts");
    const text = [
      'import { a, b as c, type D } from "../engine/index.js";',
      'import { e } from "../engine/engine.js";',
      'export { f } from "../engine/index.js";',
      'const { g, h: i } = await import("../engine/index.js");',
      'const j = (await import("../engine/index.js")).k;',
      'type L = import("../engine/index.js").M;',
      'import * as ns from "../engine/index.js";',
      "ns.n();",
      "let o: ns.P;",
    ].join("\n");
    expect(namesTaken(file, text, join(SRC, DOOR)).sort()).toEqual(["D", "M", "P", "a", "b", "f", "g", "h", "k", "n"]);
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

describe("modules that load each other", () => {
  it("no module of src/ loads itself through its own imports (no value import cycle)", () => {
    const files = (readdirSync(SRC, { recursive: true }) as string[])
      .filter((f) => f.endsWith(".ts"))
      .map((f) => f.split(sep).join("/"));
    const graph = new Map(files.map((f) => [f, targets(f, "loaded")]));
    const found = cycles(graph).map((c) => [...c, c[0]].map((m) => `src/${m}`).join(" -> "));
    expect(found, `modules that load each other:\n  ${found.join("\n  ")}\n`).toEqual([]);
  });

  it("finds each cycle once, from its first module, and nothing in a graph without one", () => {
    const graph = new Map([
      ["d", ["a"]],
      ["b", ["c"]],
      ["c", ["a", "e"]],
      ["a", ["b"]],
      ["e", []],
    ]);
    expect(cycles(graph)).toEqual([["a", "b", "c"]]);
    expect(
      cycles(
        new Map([
          ["a", ["b", "c"]],
          ["b", ["c"]],
          ["c", []],
        ]),
      ),
    ).toEqual([]);
    expect(cycles(new Map([["a", ["a"]]]))).toEqual([["a"]]);
  });

  it("counts only what a module loads with itself: a dynamic import() is no part of a cycle", () => {
    const text = ['import { a } from "./a.js";', 'import type { B } from "./b.js";', 'await import("./c.js");'].join(
      "\n",
    );
    expect(valueSpecifiers(text, { dynamic: false })).toEqual(["./a.js"]);
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
