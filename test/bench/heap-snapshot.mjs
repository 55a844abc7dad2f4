// A V8 heap snapshot (.heapsnapshot, as the inspector writes it) read into flat arrays, with
// what heap-diff.mjs needs to name owners: each object's immediate dominator (the one object
// every path from the roots to it passes through last) and its retained size (what would be
// freed with it). The dominators are computed as Chrome DevTools computes them (Cooper, Harvey
// and Kennedy's iterative algorithm over a depth-first postorder), on the same edges: weak
// edges never retain, and shortcut edges only from the synthetic root.
import { readFileSync } from "node:fs";

/** Which group of the heap a node counts in, from its V8 node type (DevTools' summary groups). */
export function groupOf(type) {
  switch (type) {
    case "code":
      // V8 files compiled and interpreted code and what serves it under "code": bytecode,
      // optimized code, its deoptimization data and relocation info, feedback vectors,
      // scope infos, shared function infos, the code that depends on an object shape.
      return "compiled code";
    case "string":
    case "concatenated string":
    case "sliced string":
      return "strings";
    case "array":
      return "arrays (elements, properties, backing tables)";
    case "hidden":
    case "object shape":
      return "system (shapes, descriptors, V8 internals)";
    default:
      return "objects and closures";
  }
}

/** Reads and indexes one snapshot file. Ordinals (0…count-1) address nodes; 0 is the root. */
export function readSnapshot(path) {
  const snap = JSON.parse(readFileSync(path, "utf8"));
  const meta = snap.snapshot.meta;
  const nf = meta.node_fields;
  const ef = meta.edge_fields;
  const N = nf.length;
  const E = ef.length;
  const [nType, nName, nId, nSize, nEdges] = ["type", "name", "id", "self_size", "edge_count"].map((f) =>
    nf.indexOf(f),
  );
  const [eType, eName, eTo] = ["type", "name_or_index", "to_node"].map((f) => ef.indexOf(f));
  const nodeTypes = meta.node_types[nType];
  const edgeTypes = meta.edge_types[eType];
  const { nodes, edges, strings } = snap;
  const count = nodes.length / N;
  const type = new Uint8Array(count);
  const name = new Uint32Array(count);
  const id = new Float64Array(count);
  const self = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    type[i] = nodes[i * N + nType];
    name[i] = nodes[i * N + nName];
    id[i] = nodes[i * N + nId];
    self[i] = nodes[i * N + nSize];
    firstEdge[i] = e;
    e += nodes[i * N + nEdges];
  }
  const edgeCount = edges.length / E;
  firstEdge[count] = edgeCount;
  const edgeType = new Uint8Array(edgeCount);
  const edgeName = new Uint32Array(edgeCount);
  const edgeTo = new Uint32Array(edgeCount);
  for (let k = 0; k < edgeCount; k++) {
    edgeType[k] = edges[k * E + eType];
    edgeName[k] = edges[k * E + eName];
    edgeTo[k] = edges[k * E + eTo] / N;
  }
  const weak = edgeTypes.indexOf("weak");
  const shortcut = edgeTypes.indexOf("shortcut");
  const byName = (k) => {
    const t = edgeTypes[edgeType[k]];
    return t === "element" || t === "hidden" ? `[${edgeName[k]}]` : strings[edgeName[k]];
  };
  const g = {
    path,
    count,
    type,
    id,
    self,
    firstEdge,
    edgeTo,
    typeName: (i) => nodeTypes[type[i]],
    name: (i) => strings[name[i]],
    edgeLabel: byName,
    essential: (from, k) => edgeType[k] !== weak && (edgeType[k] !== shortcut || from === 0),
  };
  Object.assign(g, dominators(g), shortestPaths(g));
  return g;
}

/** Breadth-first from the root over essential edges: each node's edge on a shortest retaining path. */
function shortestPaths(g) {
  const parentEdge = new Int32Array(g.count).fill(-1);
  const parentNode = new Int32Array(g.count).fill(-1);
  const queue = new Uint32Array(g.count);
  parentNode[0] = 0;
  let head = 0;
  let tail = 1;
  while (head < tail) {
    const v = queue[head++];
    for (let k = g.firstEdge[v]; k < g.firstEdge[v + 1]; k++) {
      const w = g.edgeTo[k];
      if (parentNode[w] >= 0 || !g.essential(v, k)) continue;
      parentNode[w] = v;
      parentEdge[w] = k;
      queue[tail++] = w;
    }
  }
  return { parentEdge, parentNode };
}

/** Depth-first postorder from the root over essential edges; unreachable nodes are left out. */
function postorder(g) {
  const order = new Uint32Array(g.count);
  const index = new Int32Array(g.count).fill(-1);
  const visited = new Uint8Array(g.count);
  const stack = [0];
  const cursor = new Uint32Array(g.count);
  visited[0] = 1;
  cursor[0] = g.firstEdge[0];
  let n = 0;
  while (stack.length > 0) {
    const v = stack[stack.length - 1];
    let pushed = false;
    while (cursor[v] < g.firstEdge[v + 1]) {
      const k = cursor[v]++;
      const w = g.edgeTo[k];
      if (visited[w] || !g.essential(v, k)) continue;
      visited[w] = 1;
      cursor[w] = g.firstEdge[w];
      stack.push(w);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      index[v] = n;
      order[n++] = v;
    }
  }
  return { order: order.subarray(0, n), index, reached: n };
}

/** Immediate dominators (`idom`, by ordinal; the root its own) and retained sizes. */
function dominators(g) {
  const { order, index, reached } = postorder(g);
  // Predecessors over essential edges, in postorder indices (compressed rows).
  const predCount = new Uint32Array(reached + 1);
  for (let p = 0; p < reached; p++) {
    const v = order[p];
    for (let k = g.firstEdge[v]; k < g.firstEdge[v + 1]; k++)
      if (g.essential(v, k) && index[g.edgeTo[k]] >= 0) predCount[index[g.edgeTo[k]] + 1]++;
  }
  for (let i = 0; i < reached; i++) predCount[i + 1] += predCount[i];
  const preds = new Uint32Array(predCount[reached]);
  const fill = predCount.slice(0, reached);
  for (let p = 0; p < reached; p++) {
    const v = order[p];
    for (let k = g.firstEdge[v]; k < g.firstEdge[v + 1]; k++)
      if (g.essential(v, k) && index[g.edgeTo[k]] >= 0) preds[fill[index[g.edgeTo[k]]]++] = p;
  }
  const root = reached - 1;
  const UNDEF = 0xffffffff;
  const dom = new Uint32Array(reached).fill(UNDEF);
  dom[root] = root;
  const intersect = (a, b) => {
    while (a !== b) {
      while (a < b) a = dom[a];
      while (b < a) b = dom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let p = root - 1; p >= 0; p--) {
      let d = UNDEF;
      for (let j = predCount[p]; j < predCount[p + 1]; j++) {
        const q = preds[j];
        if (dom[q] === UNDEF) continue;
        d = d === UNDEF ? q : intersect(q, d);
      }
      if (d !== UNDEF && dom[p] !== d) {
        dom[p] = d;
        changed = true;
      }
    }
  }
  // Back to ordinals; the retained size summed from the leaves up (postorder).
  const idom = new Int32Array(g.count).fill(-1);
  const retained = new Float64Array(g.count);
  for (let p = 0; p < reached; p++) {
    idom[order[p]] = dom[p] === UNDEF ? 0 : order[dom[p]];
    retained[order[p]] += g.self[order[p]];
    if (p !== root) retained[idom[order[p]]] += retained[order[p]];
  }
  // Top-down order (dominators before what they dominate): reversed postorder.
  return { idom, retained, topDown: Uint32Array.from(order).reverse() };
}

/** An object's class as a path reads it: constructor or function name, or V8's own name. */
export function label(g, v) {
  if (v === 0) return "(root)";
  const t = g.typeName(v);
  const n = g.name(v);
  if (t === "object" || t === "native") return n || "Object";
  if (t === "closure") return `${n || "anonymous"}()`;
  return `(${t}${n ? `: ${n}` : ""})`;
}

/**
 * How to call an object: its class and the last `depth` edges of a shortest path that
 * retains it from the roots ("Transcripts.seen → Set"), "…" where the path goes on.
 */
export function describe(g, i, depth = 3) {
  if (i === 0) return "(root: objects held from more than one root)";
  const parts = [label(g, i)];
  let v = i;
  for (let d = 0; d < depth && g.parentNode[v] > 0; d++) {
    const up = g.parentNode[v];
    parts.unshift(`${label(g, up)}.${g.edgeLabel(g.parentEdge[v])}`);
    v = up;
  }
  if (g.parentNode[v] > 0) parts.unshift("…");
  return parts.join(" → ");
}
