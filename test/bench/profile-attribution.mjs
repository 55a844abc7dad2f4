// Where a V8 CPU profile's time went (the profile as the inspector's Profiler.stop returns it):
// each sample charged to the innermost frame that has a source file, so a native call's time
// — a SQLite commit waiting for the disk, ed25519 in WebCrypto — counts for the code that
// called it; grouped by package, by Node's internal module, or by our dist/ folder; the
// functions with the most samples of their own; and our own functions by inclusive time.
// Pure: cpu-profile.mjs takes the profiles, this reads them.

/** The group a source file's code counts in. */
export function groupOfUrl(url) {
  const path = url.replace(/^file:\/\//, "");
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `package ${pkg[1]}`;
  if (path.endsWith("/dist/vendor/litesvm.js")) return "LiteSVM (dist/vendor/litesvm.js, its native ledger under it)";
  if (path.includes("/dist/vendor/")) return "dist/vendor (Solana kit, x402 SVM: codecs, base58, addresses, signing)";
  const ours = /\/dist\/(.+)\/[^/]+\.js$/.exec(path) ?? /\/dist\/([^/]+)\.js$/.exec(path);
  if (ours) return `ours: dist/${ours[1]}`;
  if (path.startsWith("node:internal/deps/undici")) return "node: undici (fetch)";
  if (path.startsWith("node:internal/crypto") || path.startsWith("node:crypto")) return "node: crypto (WebCrypto)";
  if (path.startsWith("node:internal/streams") || path.startsWith("node:stream")) return "node: streams";
  if (path.startsWith("node:")) return `node: ${path.replace(/^node:(internal\/)?/, "")}`;
  // The one WebAssembly module a paid call runs: undici's HTTP parser (llhttp).
  if (path.startsWith("wasm://")) return "wasm (undici's llhttp)";
  return path;
}

/** Time per group and per function in a CPU profile (ms), idle left out. */
export function attribute(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const groupCache = new Map();
  const groupOf = (id) => {
    if (groupCache.has(id)) return groupCache.get(id);
    const own = byId.get(id).callFrame;
    let group;
    if (own.functionName === "(garbage collector)") group = "garbage collection";
    else if (own.functionName === "(program)") group = "(program: V8 and native work outside any JS frame)";
    else if (own.functionName === "(idle)") group = "(idle)";
    else {
      let n = byId.get(id);
      while (n && !n.callFrame.url) n = byId.get(parent.get(n.id));
      group = n ? groupOfUrl(n.callFrame.url) : "(native code without a JS caller)";
    }
    groupCache.set(id, group);
    return group;
  };
  const groups = new Map();
  const functions = new Map();
  const ours = oursInclusive(byId, parent);
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const id = profile.samples[i];
    const group = groupOf(id);
    if (group === "(idle)") continue;
    busy += ms;
    groups.set(group, (groups.get(group) ?? 0) + ms);
    const f = byId.get(id).callFrame;
    const fn = `${f.functionName || "(anonymous)"} ${f.url ? `${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}` : ""}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
    ours.add(id, ms);
  }
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy,
    groups: sorted(groups),
    functions: sorted(functions).slice(0, 15),
    oursInclusive: sorted(ours.totals).slice(0, 15),
  };
}

/**
 * Our own functions (dist/, not dist/vendor/) by inclusive time: a sample counts once for
 * every one of them on its stack, with what they called (`updatePayment` with its SQLite).
 */
function oursInclusive(byId, parent) {
  const totals = new Map();
  const stackCache = new Map();
  const namesOn = (id) => {
    if (stackCache.has(id)) return stackCache.get(id);
    const names = new Set();
    for (let n = byId.get(id); n; n = byId.get(parent.get(n.id))) {
      const f = n.callFrame;
      if (/\/dist\//.test(f.url) && !f.url.includes("/dist/vendor/"))
        names.add(`${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/dist\//, "")}:${f.lineNumber + 1}`);
    }
    stackCache.set(id, names);
    return names;
  };
  return {
    totals,
    add: (id, ms) => {
      for (const name of namesOn(id)) totals.set(name, (totals.get(name) ?? 0) + ms);
    },
  };
}
