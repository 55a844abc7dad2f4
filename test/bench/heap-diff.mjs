// What grew in the JS heap between snapshots of one process, and who holds it:
//   node test/bench/heap-diff.mjs .bench/heap/*.heapsnapshot [--top 12]
// (the snapshots `npm run bench -- --only memory-long --snapshots …` writes, oldest first).
// For each snapshot: its size by group (compiled code, strings, arrays, V8's system objects,
// objects and closures). Between each snapshot and the next, and from the first to the last:
// the classes whose self size grew most, and the owners of the objects that are new since the
// earlier one and alive in the later one — each new object charged to its nearest dominator
// that already existed in the earlier snapshot (V8 keeps an object's id across snapshots of one
// process). Last, each owner of the first-to-last growth followed through every snapshot by its
// retained size: an owner that keeps growing is a leak, one that levels off is a cache.
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { describe, groupOf, readSnapshot } from "./heap-snapshot.mjs";

const MB = 2 ** 20;
/** Owners taken from each step's ranking into the closing table; the width of its first column. */
const FOLLOWED_PER_STEP = 3;
const LABEL = 72;
const mb = (bytes) => (bytes / MB).toFixed(2);

/** The per-snapshot facts kept once its graph is dropped. */
function summarize(g) {
  const groups = {};
  let total = 0;
  const classes = new Map();
  for (let i = 0; i < g.count; i++) {
    total += g.self[i];
    const group = groupOf(g.typeName(i));
    groups[group] = (groups[group] ?? 0) + g.self[i];
    const key = className(g, i);
    const c = classes.get(key) ?? { count: 0, size: 0 };
    c.count++;
    c.size += g.self[i];
    classes.set(key, c);
  }
  const ids = new Set();
  const retainedById = new Map();
  for (let i = 0; i < g.count; i++) {
    ids.add(g.id[i]);
    if (g.idom[i] >= 0) retainedById.set(g.id[i], g.retained[i]);
  }
  return { name: basename(g.path, ".heapsnapshot"), total, groups, classes, ids, retainedById };
}

/** A class as DevTools' summary names it: the constructor, or V8's type and name for its own objects. */
function className(g, i) {
  const t = g.typeName(i);
  if (t === "object" || t === "native") return g.name(i) || "Object";
  if (t === "closure") return "(closure)";
  if (groupOf(t) === "strings") return "(string)";
  return `(${t}${g.name(i) ? `: ${g.name(i)}` : ""})`;
}

/**
 * Objects of `g` whose id is not in `older` (new since then), charged to their nearest
 * dominator that is in `older`: owner ordinal → {count, size}.
 */
function ownersOfNew(g, older) {
  const owner = new Int32Array(g.count).fill(-1);
  const charged = new Map();
  for (const v of g.topDown) {
    if (older.has(g.id[v]) || v === 0) {
      owner[v] = v;
      continue;
    }
    const o = owner[g.idom[v]];
    owner[v] = o;
    const c = charged.get(o) ?? { count: 0, size: 0 };
    c.count++;
    c.size += g.self[v];
    charged.set(o, c);
  }
  return [...charged].map(([ordinal, c]) => ({ ordinal, id: g.id[ordinal], what: describe(g, ordinal), ...c }));
}

/** The owners ranked by how much their retained size grew from `a` to `b` (the root last: it holds everything). */
function byGrowth(owners, a, b) {
  const net = (o) => (b.retainedById.get(o.id) ?? 0) - (a.retainedById.get(o.id) ?? 0);
  return owners
    .map((o) => ({ ...o, net: o.ordinal === 0 ? o.size : net(o) }))
    .sort((x, y) => (x.ordinal === 0) - (y.ordinal === 0) || y.net - x.net);
}

function classGrowth(a, b, top) {
  const rows = [];
  for (const [key, cb] of b.classes) {
    const ca = a.classes.get(key) ?? { count: 0, size: 0 };
    rows.push({ key, count: cb.count - ca.count, size: cb.size - ca.size });
  }
  for (const [key, ca] of a.classes) if (!b.classes.has(key)) rows.push({ key, count: -ca.count, size: -ca.size });
  return rows.sort((x, y) => y.size - x.size).slice(0, top);
}

function printPair(a, b, owners, top) {
  const out = [];
  out.push(`\n${a.name} → ${b.name}: total ${mb(a.total)} → ${mb(b.total)} MB (${signed(b.total - a.total)} MB)`);
  out.push("  classes whose self size grew most (objects, MB):");
  for (const r of classGrowth(a, b, top))
    out.push(`    ${signed(r.size).padStart(7)}  ${String(r.count).padStart(7)}  ${tail(r.key, 110)}`);
  out.push(
    `  owners of the objects new since ${a.name} and alive at ${b.name}, by the growth of what they retain (MB: growth, then → now; new objects, MB):`,
  );
  const ranked = byGrowth(owners, a, b);
  for (const o of [...ranked.slice(0, top), ...ranked.filter((r) => r.ordinal === 0)]) {
    const then = a.retainedById.get(o.id);
    const now = b.retainedById.get(o.id) ?? 0;
    const span = o.ordinal === 0 ? "(objects only)" : `(${then === undefined ? "-" : mb(then)} → ${mb(now)})`;
    out.push(
      `    ${signed(o.net).padStart(7)} ${span.padEnd(16)} ${String(o.count).padStart(7)} ${mb(o.size).padStart(6)}  ${tail(o.what, 130)}`,
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
  return ranked;
}

/** The end of a long path, where the owner is named. */
const tail = (text, width) => (text.length > width ? `…${text.slice(-(width - 1))}` : text);
const signed = (bytes) => `${bytes >= 0 ? "+" : ""}${mb(bytes)}`;

function main() {
  const { values, positionals } = parseArgs({ options: { top: { type: "string" } }, allowPositionals: true });
  const top = Number(values.top ?? 12);
  if (positionals.length < 2) throw new Error("usage: node test/bench/heap-diff.mjs A.heapsnapshot B.heapsnapshot …");
  const summaries = [];
  // The largest growers of each step and of the whole run, followed through every snapshot.
  const followed = new Map();
  const follow = (ranked) => {
    for (const o of ranked.filter((r) => r.ordinal !== 0).slice(0, FOLLOWED_PER_STEP))
      if (!followed.has(o.id)) followed.set(o.id, o.what);
  };
  for (const [n, path] of positionals.entries()) {
    process.stderr.write(`reading ${path}…\n`);
    const g = readSnapshot(path);
    const s = summarize(g);
    if (n > 0) follow(printPair(summaries[n - 1], s, ownersOfNew(g, summaries[n - 1].ids), top));
    if (n > 1 && n === positionals.length - 1)
      follow(printPair(summaries[0], s, ownersOfNew(g, summaries[0].ids), top));
    summaries.push(s);
  }
  const cols = summaries.map((s) => s.name.padStart(9));
  const lines = ["", `Heap by group, self sizes (MB):${" ".repeat(LABEL - 29)}${cols.join("")}`];
  const row = (label, pick) =>
    lines.push(`  ${tail(label, LABEL).padEnd(LABEL)}${summaries.map((s) => pick(s).padStart(9)).join("")}`);
  row("total", (s) => mb(s.total));
  for (const group of Object.keys(summaries[0].groups)) row(group, (s) => mb(s.groups[group] ?? 0));
  lines.push(
    "The largest growers of each step and of the whole run: retained size at each snapshot (MB; - where absent):",
  );
  for (const [id, what] of followed) row(what, (s) => (s.retainedById.has(id) ? mb(s.retainedById.get(id)) : "-"));
  lines.push(
    "  (new objects are charged to their nearest dominator that existed in the earlier snapshot; an owner's retained size includes what it held then)",
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

main();
