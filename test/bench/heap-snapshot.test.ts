// The heap-snapshot reader behind heap-diff.mjs: dominators and retained sizes on a small
// hand-made snapshot in V8's file format, where each answer can be worked out by hand.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe as group, expect, it } from "vitest";
import { describe, groupOf, readSnapshot } from "./heap-snapshot.mjs";

const NODE_TYPES = [
  "hidden",
  "array",
  "string",
  "object",
  "code",
  "closure",
  "regexp",
  "number",
  "native",
  "synthetic",
];
const EDGE_TYPES = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"];

/**
 * root ─┬─ holder ─┬─ shared ── leaf ── weakly     (holder ⇢ weakly: a weak edge)
 *       │          └─ own
 *       └─ other ──── shared
 */
const NODES = [
  { type: "synthetic", name: "", self: 0 },
  { type: "object", name: "Holder", self: 10 },
  { type: "object", name: "Other", self: 20 },
  { type: "object", name: "Shared", self: 30 },
  { type: "object", name: "Leaf", self: 40 },
  { type: "object", name: "Weakly", self: 50 },
  { type: "code", name: "Own", self: 60 },
];
const EDGES: [from: number, type: string, name: string, to: number][] = [
  [0, "element", "1", 1],
  [0, "element", "2", 2],
  [1, "property", "shared", 3],
  [1, "property", "own", 6],
  [1, "weak", "cache", 5],
  [2, "property", "shared", 3],
  [3, "property", "leaf", 4],
  [4, "property", "next", 5],
];

function snapshotFile(): string {
  const strings: string[] = [];
  const str = (s: string) => (strings.includes(s) ? strings.indexOf(s) : strings.push(s) - 1);
  const nodes: number[] = [];
  const edges: number[] = [];
  NODES.forEach((n, i) => {
    const out = EDGES.filter(([from]) => from === i);
    nodes.push(NODE_TYPES.indexOf(n.type), str(n.name), i * 2 + 1, n.self, out.length, 0, 0);
    for (const [, type, name, to] of out)
      edges.push(EDGE_TYPES.indexOf(type), type === "element" ? Number(name) : str(name), to * 7);
  });
  const meta = {
    node_fields: ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"],
    node_types: [NODE_TYPES, "string", "number", "number", "number", "number", "number"],
    edge_fields: ["type", "name_or_index", "to_node"],
    edge_types: [EDGE_TYPES, "string_or_number", "node"],
  };
  const path = join(dir, "small.heapsnapshot");
  writeFileSync(path, JSON.stringify({ snapshot: { meta, node_count: NODES.length }, nodes, edges, strings }));
  return path;
}

const dir = mkdtempSync(join(tmpdir(), "pam-heap-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

group("heap snapshot reader", () => {
  const g = readSnapshot(snapshotFile());

  it("finds each object's immediate dominator, weak edges retaining nothing", () => {
    expect(Array.from(g.idom)).toEqual([0, 0, 0, 0, 3, 4, 1]);
  });

  it("sums retained sizes up the dominator tree", () => {
    expect(Array.from(g.retained)).toEqual([210, 70, 20, 120, 90, 50, 60]);
  });

  it("orders every dominator before what it dominates", () => {
    const at = new Map(Array.from(g.topDown).map((v, i) => [v, i]));
    for (let v = 1; v < g.count; v++) expect(at.get(g.idom[v]!)!).toBeLessThan(at.get(v)!);
  });

  it("names an object by a shortest retaining path", () => {
    expect(describe(g, 5)).toBe("Holder.shared → Shared.leaf → Leaf.next → Weakly");
    expect(describe(g, 5, 2)).toBe("… → Shared.leaf → Leaf.next → Weakly");
    expect(describe(g, 6)).toBe("Holder.own → (code: Own)");
  });

  it("counts V8's code objects as compiled code", () => {
    expect(groupOf(g.typeName(6))).toBe("compiled code");
    expect(groupOf(g.typeName(1))).toBe("objects and closures");
  });
});
