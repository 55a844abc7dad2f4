/**
 * docs/architecture.md maps the tree, and this test keeps the map true: every folder of src/
 * and test/ and every TypeScript module of src/ has a row, and every row names something that
 * exists. A file moved, added or removed without its row fails here, so the map cannot drift.
 *
 * The map is one table per folder, under a heading that names the folder in code:
 *
 *   ### `src/engine/model/`
 *   | Path | What it holds |
 *   | `states.ts` | the per-state table … |
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");
const MAP = "docs/architecture.md";

/** The paths the map names: each table row's first cell, under the folder its heading names. */
function mappedPaths(markdown: string): string[] {
  const paths: string[] = [];
  let folder: string | undefined;
  for (const line of markdown.split("\n")) {
    const heading = /^#{2,6}\s+`([^`]+\/)`\s*$/.exec(line);
    if (heading) {
      folder = heading[1]!;
      paths.push(folder);
      continue;
    }
    if (/^#{1,6}\s/.test(line)) folder = undefined;
    const row = /^\|\s*`([^`]+)`\s*\|/.exec(line);
    if (row && folder !== undefined) paths.push(folder + row[1]!);
  }
  return paths;
}

/** What the map must name: every folder under src/ and test/, and every module of src/. */
function treeEntries(list: (dir: string) => { name: string; dir: boolean }[]): string[] {
  const entries: string[] = [];
  const walk = (dir: string, modules: boolean) => {
    for (const e of list(dir)) {
      const path = `${dir}${e.name}${e.dir ? "/" : ""}`;
      if (e.dir) {
        entries.push(path);
        // The console's browser assets and the fixtures are named as folders only.
        walk(path, modules && !/^src\/console\/assets\/$/.test(path));
      } else if (modules && /\.ts$/.test(e.name) && !e.name.endsWith(".d.ts")) entries.push(path);
    }
  };
  walk("src/", true);
  for (const e of list("test/")) if (e.dir && e.name !== "output") entries.push(`test/${e.name}/`);
  return entries;
}

const listDir = (dir: string) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((e) => !e.name.startsWith("."))
    .map((e) => ({ name: e.name, dir: e.isDirectory() }));

describe("the architecture map (docs/architecture.md)", () => {
  const mapped = mappedPaths(readFileSync(join(ROOT, MAP), "utf8"));

  it("names every folder of src/ and test/ and every module of src/", () => {
    const named = new Set(mapped);
    expect(treeEntries(listDir).filter((path) => !named.has(path))).toEqual([]);
  });

  it("names nothing that is not there", () => {
    const gone = mapped.filter((path) => {
      try {
        return statSync(join(ROOT, path)).isDirectory() !== path.endsWith("/");
      } catch {
        return true;
      }
    });
    expect(gone).toEqual([]);
  });

  it("reads a map as a newcomer would: headings name folders, rows name their entries", () => {
    const sample = [
      "## Layout",
      "### `src/engine/model/`",
      "| Path | What |",
      "| --- | --- |",
      "| `states.ts` | the per-state table |",
      "| `types.ts` | the types |",
      "### Dependencies",
      "| `zod` | schemas |",
    ].join("\n");
    expect(mappedPaths(sample)).toEqual([
      "src/engine/model/",
      "src/engine/model/states.ts",
      "src/engine/model/types.ts",
    ]);
  });

  it("asks for every folder and module, but not the console's assets one by one", () => {
    const tree: Record<string, { name: string; dir: boolean }[]> = {
      "src/": [
        { name: "cli.ts", dir: false },
        { name: "console", dir: true },
      ],
      "src/console/": [
        { name: "server.ts", dir: false },
        { name: "assets", dir: true },
      ],
      "src/console/assets/": [{ name: "app.js", dir: false }],
      "test/": [
        { name: "unit", dir: true },
        { name: "output", dir: true },
        { name: "inspector-check.sh", dir: false },
      ],
    };
    expect(treeEntries((dir) => tree[dir] ?? [])).toEqual([
      "src/cli.ts",
      "src/console/",
      "src/console/server.ts",
      "src/console/assets/",
      "test/unit/",
    ]);
  });
});
