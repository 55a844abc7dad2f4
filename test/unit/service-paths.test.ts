/**
 * Only src/engine/service/api.ts knows the v1 paths (docs: ARCHITECTURE.md): reads every
 * .ts file under src/ except the sandbox (the service itself) and service/api.ts, and fails
 * on each string literal that is a v1 path — a plain or template string whose text, or a
 * literal part of whose template, is `/quotes`, `/payments/…`, `/executions…`, `/actions…`,
 * `/companies/…` or `/agent-services/…` (with or without `/v1`). Comments and prose that
 * merely name an endpoint ("/payments/prepare answered for quote …") are not paths.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");
const API = "engine/service/api.ts";

/** A whole path, or the part of one before a `${…}`: no spaces, nothing but a query after it. */
const V1_PATH = /^(?:\/v1)?\/(?:quotes|payments|executions|actions|companies|agent-services)(?:[/?]\S*)?$/;

/** Each string literal (and each literal part of a template) of a file that is a v1 path, with its line. */
function pathLiterals(text: string, fileName = "x.ts"): Array<{ text: string; line: number }> {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: Array<{ text: string; line: number }> = [];
  const check = (node: ts.Node, literal: string) => {
    if (V1_PATH.test(literal))
      out.push({ text: literal, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) check(node, node.text);
    else if (ts.isTemplateExpression(node)) {
      check(node.head, node.head.text);
      for (const span of node.templateSpans) check(span.literal, span.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Every .ts file under src/, as a path relative to src/ with forward slashes. */
function sources(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => f.split(sep).join("/"))
    .sort();
}

describe("v1 paths live in service/api.ts only", () => {
  it.each([
    ['client.call("POST", "/quotes", opts)', "/quotes"],
    ["call('POST', '/payments/prepare', opts)", "/payments/prepare"],
    ['call("POST", "/payments/confirm", opts)', "/payments/confirm"],
    ['call("POST", "/executions", opts)', "/executions"],
    ['call("GET", `/executions/${encodeURIComponent(id)}`, opts)', "/executions/"],
    ['call("GET", "/actions", opts)', "/actions"],
    ['call("GET", "/actions/" + name, opts)', "/actions/"],
    ['call("GET", `/companies/${id}`, opts)', "/companies/"],
    ['call("POST", "/agent-services/search", opts)', "/agent-services/search"],
    ["fetch(`${base}/executions/${id}`)", "/executions/"],
    ['fetch(base + "/v1/agent-services/search")', "/v1/agent-services/search"],
    ['const p = "/executions?status=pending";', "/executions?status=pending"],
  ])("finds the path in %s", (code, path) => {
    expect(pathLiterals(code).map((p) => p.text)).toEqual([path]);
  });

  it.each([
    "// POST /quotes, then POST /payments/confirm",
    "/** GET /executions/{id} */ const x = 1;",
    "throw new Error(`/payments/prepare answered for quote ${q}, not ${p}`);",
    "throw new Error(`GET /actions answered HTTP ${status}`);",
    'const uri = "paid-actions://executions";',
    'import { a } from "./actions.js";',
    'const s = "/quotesx";',
    'const t = "/executions are final";',
  ])("finds no path in %s", (code) => {
    expect(pathLiterals(code)).toEqual([]);
  });

  it("sees the paths service/api.ts holds (the scan works on real sources)", () => {
    const found = pathLiterals(readFileSync(join(SRC, API), "utf8"), API).map((p) => p.text);
    expect(new Set(found)).toEqual(
      new Set([
        "/quotes",
        "/payments/prepare",
        "/payments/confirm",
        "/executions",
        "/executions/",
        "/actions",
        "/actions/",
        "/companies/",
        "/agent-services/search",
      ]),
    );
  });

  it("finds no v1 path in any other source outside the sandbox", () => {
    const files = sources().filter((f) => !f.startsWith("sandbox/") && f !== API);
    expect(files.length).toBeGreaterThan(10);
    const found = files.flatMap((f) =>
      pathLiterals(readFileSync(join(SRC, f), "utf8"), f).map((p) => `src/${f}:${p.line}: "${p.text}"`),
    );
    expect(found, `v1 paths outside src/${API} (call its functions instead):\n  ${found.join("\n  ")}\n`).toEqual([]);
  });
});
