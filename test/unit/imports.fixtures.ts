/**
 * Reading imports and exports without type-checking, for the layers test: which modules a
 * file names, which of them it takes values from (and which it loads with itself), which
 * names a module exports and which names a file takes from a given module, and the cycles
 * among modules that load each other.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

export const SRC = resolve(import.meta.dirname, "../../src");
export const ROOT = resolve(SRC, "..");

/**
 * Every module specifier a file names. TypeScript's own pre-processor finds them without
 * type-checking, so imports inside comments and strings are not mistaken for real ones.
 */
export function specifiers(text: string): Array<{ specifier: string; line: number }> {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => ({
    specifier: f.fileName,
    line: text.slice(0, f.pos).split("\n").length,
  }));
}

/**
 * The specifiers a file imports values from (type-only imports and re-exports left out);
 * with `dynamic: false`, only those loaded with the file (no `import("…")`).
 */
export function valueSpecifiers(text: string, { dynamic = true } = {}): string[] {
  const sf = ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, false);
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
      dynamic &&
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

/**
 * src-relative paths (with /) of what `file` (src-relative) imports: every kind, values
 * only, or only the values loaded with it (static value imports: what a cycle is made of).
 */
export function targets(file: string, kind: "all" | "values" | "loaded"): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  const specs =
    kind === "all" ? specifiers(text).map((s) => s.specifier) : valueSpecifiers(text, { dynamic: kind === "values" });
  return specs
    .filter((s) => s.startsWith("."))
    .map((s) =>
      relative(SRC, resolve(dirname(join(SRC, file)), s))
        .split(sep)
        .join("/")
        .replace(/\.js$/, ".ts"),
    );
}

/** The .ts files under a folder of src/, src-relative with forward slashes. */
export const sourcesUnder = (dir: string) =>
  (readdirSync(join(SRC, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `${dir}/${f.split(sep).join("/")}`);

/** The .ts and .mts files under a folder of the repository, absolute. */
export const filesUnder = (dir: string) =>
  (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
    .filter((f) => /\.m?ts$/.test(f))
    .map((f) => join(ROOT, dir, f));

const exportedHere = (st: ts.Statement) =>
  ts.canHaveModifiers(st) && (ts.getModifiers(st) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/**
 * The names a module exports: its export lists and re-exports, and its exported
 * declarations (functions, classes, consts, types, interfaces); `*` for an `export *`, whose
 * names cannot be read from this file alone.
 */
export function exportedNames(text: string): string[] {
  const sf = ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st)) {
      if (st.exportClause && ts.isNamedExports(st.exportClause))
        out.push(...st.exportClause.elements.map((e) => e.name.text));
      else out.push("*");
    } else if (exportedHere(st)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) out.push(d.name.text);
      } else if (
        (ts.isFunctionDeclaration(st) ||
          ts.isClassDeclaration(st) ||
          ts.isInterfaceDeclaration(st) ||
          ts.isTypeAliasDeclaration(st) ||
          ts.isEnumDeclaration(st)) &&
        st.name
      ) {
        out.push(st.name.text);
      }
    }
  }
  return out;
}

/**
 * The names the file at `file` (absolute) takes from the module at `target` (absolute, .ts):
 * named imports and re-exports, names destructured from `await import(…)` or read off it,
 * `import(…).X` in a type, and the members read off a namespace import.
 */
export function namesTaken(file: string, text: string, target: string): string[] {
  // A file that does not spell the module's path (its folder's name too, from another folder) is not parsed.
  const stem = basename(target, ".ts");
  if (!text.includes(dirname(file) === dirname(target) ? stem : `${basename(dirname(target))}/${stem}`)) return [];
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const isTarget = (spec: ts.Node | undefined) =>
    spec !== undefined &&
    ts.isStringLiteral(spec) &&
    spec.text.startsWith(".") &&
    resolve(dirname(file), spec.text).replace(/\.js$/, ".ts") === target;
  const out: string[] = [];
  const namespaces = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && isTarget(node.moduleSpecifier)) {
      const bindings = node.importClause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings))
        out.push(...bindings.elements.map((e) => (e.propertyName ?? e.name).text));
      else if (bindings) namespaces.add(bindings.name.text);
    } else if (ts.isExportDeclaration(node) && isTarget(node.moduleSpecifier)) {
      if (node.exportClause && ts.isNamedExports(node.exportClause))
        out.push(...node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text));
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      isTarget(node.arguments[0])
    ) {
      let up = node.parent;
      while (ts.isAwaitExpression(up) || ts.isParenthesizedExpression(up)) up = up.parent;
      if (ts.isVariableDeclaration(up) && ts.isObjectBindingPattern(up.name)) {
        for (const e of up.name.elements) {
          const name = e.propertyName ?? e.name;
          if (ts.isIdentifier(name)) out.push(name.text);
        }
      } else if (ts.isPropertyAccessExpression(up)) out.push(up.name.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && isTarget(node.argument.literal)) {
      let q = node.qualifier;
      while (q && ts.isQualifiedName(q)) q = q.left;
      if (q) out.push(q.text);
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression)) {
      if (namespaces.has(node.expression.text)) out.push(node.name.text);
    } else if (ts.isQualifiedName(node) && ts.isIdentifier(node.left) && namespaces.has(node.left.text)) {
      out.push(node.right.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/**
 * Cycles of a graph of modules (each module's list of what it loads), found by one
 * depth-first walk: none when there is none, else at least one through every set of modules
 * that load each other. Each is the modules in the order they load each other, from the
 * first of them in sort order.
 */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found = new Map<string, string[]>();
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (m: string): void => {
    const at = path.indexOf(m);
    if (at >= 0) {
      const cycle = path.slice(at);
      const first = cycle.indexOf([...cycle].sort()[0]!);
      const turned = [...cycle.slice(first), ...cycle.slice(0, first)];
      found.set(turned.join(" -> "), turned);
      return;
    }
    if (done.has(m) || !graph.has(m)) return;
    path.push(m);
    for (const next of graph.get(m)!) visit(next);
    path.pop();
    done.add(m);
  };
  for (const m of [...graph.keys()].sort()) visit(m);
  return [...found.values()];
}
