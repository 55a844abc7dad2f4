/**
 * Every relative link in README.md resolves in the repository, as it must on a fresh clone or
 * on a code host: the file or folder exists, and a `#anchor` names a heading of the README or
 * of the Markdown file it points into (GitHub's heading ids). The Markdown files the README
 * links to, and every page of docs/, are checked the same way. Links in code (fenced blocks,
 * inline code) are not links; a repository path named in inline code must exist too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");

/** Markdown without its code: fenced blocks and inline code spans become blanks. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "``");
}

/** The targets of `[text](target)` and `![alt](target)` links, titles dropped. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[(?:[^\]\n]|\][^(\n])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1]!,
  );
}

/** GitHub's id for each heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
    .matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** What is wrong with each relative link of the Markdown file `file` (repository-relative). */
function brokenLinks(
  file: string,
  markdown: string,
  exists: (path: string) => boolean,
  read: (path: string) => string,
): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const [rawPath = "", anchor] = target.split("#", 2);
    const path = decodeURIComponent(rawPath);
    const resolved = path === "" ? file : relative(ROOT, resolve(ROOT, dirname(file), path));
    if (resolved.startsWith("..")) {
      problems.push(`${file}: ${target} points outside the repository`);
      continue;
    }
    if (!exists(resolved)) {
      problems.push(`${file}: ${target} — ${resolved} does not exist`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !headingIds(read(resolved)).has(anchor)) {
      problems.push(`${file}: ${target} — ${resolved} has no heading #${anchor}`);
    }
  }
  return problems;
}

/**
 * Repository paths named in inline code (`src/engine/model/states.ts`, `test/hostile/`) that do
 * not exist. Patterns (`*`, `<…>`, `{…}`), paths outside the tree's own folders and what the
 * tests write (`test/output/`, absent from a fresh clone) are not checked.
 */
function missingCodePaths(markdown: string, exists: (path: string) => boolean): string[] {
  const outsideFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  const named = [...outsideFences.matchAll(/`((?:src|test|docs|\.ci)\/[^`\s]*)`/g)].map((m) => m[1]!);
  return [...new Set(named)].filter(
    (path) => !/[*<>{}…]/.test(path) && !path.startsWith("test/output/") && !exists(path.replace(/\/$/, "")),
  );
}

const exists = (path: string) => existsSync(join(ROOT, path));
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

describe("links in README.md", () => {
  const readme = read("README.md");

  it("every relative link resolves in the repository, anchors included", () => {
    expect(linkTargets(readme).length).toBeGreaterThan(3);
    expect(brokenLinks("README.md", readme, exists, read)).toEqual([]);
  });

  it("the interface documents are linked from the README and live in the repository, their own links resolving too", () => {
    const docs = linkTargets(readme)
      .map((t) => t.split("#")[0]!)
      .filter((p) => p.endsWith(".md") && !/^[a-z]+:/i.test(p));
    expect(docs).toEqual(expect.arrayContaining(["src/sandbox/spec/service-v1.md", "src/sandbox/spec/decisions.md"]));
    for (const doc of new Set(docs)) {
      expect(statSync(join(ROOT, doc)).isFile()).toBe(true);
      expect(brokenLinks(doc, read(doc), exists, read)).toEqual([]);
    }
  });

  it("every repository path it names in code exists", () => {
    expect(missingCodePaths(readme, exists)).toEqual([]);
  });

  it("the checker finds what a fresh clone would find broken", () => {
    const sample = [
      "# Title",
      "## Host configuration",
      "See [spec](../shared/spec/service-v1.md), [gone](docs/missing.md), [ok](package.json), [here](#host-configuration),",
      "[nowhere](#no-such-heading), [web](https://example.com/x), ![img](img/none.png), [deep](README.md#title).",
      "```",
      "[in code](not/checked.md)",
      "```",
      "and `[inline](not/checked.md)`.",
    ].join("\n");
    const problems = brokenLinks("README.md", sample, exists, (p) => (p === "README.md" ? sample : read(p)));
    expect(problems).toEqual([
      "README.md: ../shared/spec/service-v1.md points outside the repository",
      "README.md: docs/missing.md — docs/missing.md does not exist",
      "README.md: #no-such-heading — README.md has no heading #no-such-heading",
      "README.md: img/none.png — img/none.png does not exist",
    ]);
  });

  it("heading ids follow GitHub's rules", () => {
    expect([
      ...headingIds(
        "## A fleet on one budget: the journal on PostgreSQL\n### `paid-actions-mcp` / `paid-actions-mcp serve`\n## Notes\n## Notes",
      ),
    ]).toEqual([
      "a-fleet-on-one-budget-the-journal-on-postgresql",
      "paid-actions-mcp--paid-actions-mcp-serve",
      "notes",
      "notes-1",
    ]);
  });
});

describe("docs/", () => {
  const pages = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);

  it("every page is linked from the README", () => {
    const linked = new Set(linkTargets(read("README.md")).map((t) => t.split("#")[0]!));
    expect(pages.length).toBeGreaterThanOrEqual(8);
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });

  it.each(pages)("%s: every relative link resolves, anchors included", (page) => {
    expect(brokenLinks(page, read(page), exists, read)).toEqual([]);
  });

  it.each(pages)("%s: every repository path it names in code exists", (page) => {
    expect(missingCodePaths(read(page), exists)).toEqual([]);
  });

  it("the path check finds a path that is gone, and leaves patterns and test output alone", () => {
    const sample =
      "`src/engine/no-such.ts`, `test/unit/`, `test/engine/journal-pg*.test.ts`, `src/<x>.ts`, `test/output/x.png`.";
    expect(missingCodePaths(sample, exists)).toEqual(["src/engine/no-such.ts"]);
  });
});
