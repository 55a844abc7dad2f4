// Where a paid call's CPU goes, per phase of the call: each sample of a V8 CPU profile of the
// MCP server charged to the phase named by the innermost frame on its stack that names one
// (CALL_PHASES: the transcript, the intent recorded, the quote, the proof signed, the
// execution, the flow's transitions, the reconciler's work after the call, the MCP surface).
// A sample whose stack names no phase — an async function resumed from the event loop has
// only its own frames on the stack, and an HTTP answer parsed by undici none of ours — is
// left unattributed, grouped as profile-attribution.mjs groups it, and said so. Pure:
// cpu-profile.mjs takes the profile, this reads it.
import { groupOfUrl } from "./profile-attribution.mjs";

/**
 * The phases of a paid call, by the frames that name them: a frame is named by its "site",
 * `path:function` for our build (the path under dist/, without `.js`), `vendor:function` for
 * the packages bundled into dist/vendor, and `package NAME:function` for a package. The tables are tested on sites
 * (profile-phases.test.ts); a file renamed in the build leaves its samples unattributed.
 */
export const CALL_PHASES = [
  {
    key: "transcript",
    label: "transcript: each request and answer of the call redacted and appended",
    sites: [/^engine\/read\/transcripts:/],
  },
  {
    key: "reconciler",
    label: "after the call: the reconciler polls the execution, verifies the settlement on the RPC",
    sites: [
      /^engine\/reconciler:/,
      /^engine\/chain\//,
      /^engine\/rails\/[^/]+\/truth:/,
      /^engine\/read\/executions:/,
      /^engine\/rails\/[^/]+\/rpc:(transaction|decodeRpcTransaction)$/,
    ],
  },
  {
    key: "record",
    label: "record: the intent's key, fingerprint and first journal row",
    sites: [/^engine\/intent\/(record|calls|input):/],
  },
  {
    key: "quote",
    label: "quote: the price asked (POST /quotes, or the 402) and checked",
    sites: [/^engine\/intent\/steps\/(quote|probe):/, /^engine\/payment\//, /^engine\/x402-http\/challenge:/],
  },
  {
    key: "sign",
    label: "sign: limits, reservation, the proof (blockhash, transaction or authorization, signature)",
    sites: [
      /^engine\/intent\/steps\/(price-and-sign|decide|sign):/,
      /^engine\/budget\//,
      /^engine\/rails\/[^/]+\/(payer|rail|sign):/,
      /^engine\/rails\/[^/]+\/rpc:latestBlockhash$/,
      // x402's scheme clients and Solana kit's signers, bundled: resumed after an await, they
      // are on the stack without the rail that called them.
      /^vendor:(createPaymentPayload|(partiallyS|s)ignTransactionMessageWithSigners|signTypedData)$/,
    ],
  },
  {
    key: "execute",
    label: "execute: the proof sent (POST /executions, or the paid request) and the answer recorded",
    sites: [/^engine\/intent\/steps\/(send|execute|deliver|establish):/, /^engine\/intent\/answers:/],
  },
  {
    key: "flow",
    label: "flow: the call's state transitions committed to the journal",
    sites: [/^engine\/intent\/(drive|held):/],
  },
  {
    key: "mcp",
    label: "MCP surface: JSON-RPC over stdio, the tool's arguments and result",
    sites: [/^(mcp|commands|app)\//, /^package @modelcontextprotocol\//],
  },
];

/**
 * A frame's site: `engine/journal/sqlite:update`, `vendor:createPaymentPayload`,
 * `package zod:safeParse`; undefined for Node's own and native frames.
 */
export function siteOf(callFrame) {
  const path = callFrame.url.replace(/^file:\/\//, "");
  const fn = callFrame.functionName || "(anonymous)";
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
  if (pkg) return `package ${pkg[1]}:${fn}`;
  const ours = /\/dist\/(.+)\.js$/.exec(path);
  if (!ours) return undefined;
  return ours[1].startsWith("vendor/") ? `vendor:${fn}` : `${ours[1]}:${fn}`;
}

/** The phase a stack of sites (innermost first) is in: the first site some phase names; undefined if none does. */
export function phaseOf(sites, table = CALL_PHASES) {
  for (const site of sites) {
    if (site === undefined) continue;
    const phase = table.find((p) => p.sites.some((re) => re.test(site)));
    if (phase) return phase;
  }
  return undefined;
}

/**
 * Milliseconds of samples per phase of `table`, and of those no phase names, by group
 * (profile-attribution.mjs's groups: "package undici", "garbage collection", …); idle left out.
 * Each list is `[label, ms]`, most first; the phases in the table's order have every phase.
 */
export function attributePhases(profile, table = CALL_PHASES) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const cache = new Map();
  const classify = (id) => {
    if (cache.has(id)) return cache.get(id);
    const sites = [];
    let group;
    for (let n = byId.get(id); n; n = byId.get(parent.get(n.id))) {
      sites.push(siteOf(n.callFrame));
      if (group === undefined && n.callFrame.url) group = groupOfUrl(n.callFrame.url);
    }
    const own = byId.get(id).callFrame.functionName;
    const phase = phaseOf(sites, table);
    const out = { idle: own === "(idle)", phase, group: unattributedGroup(own, group) };
    cache.set(id, out);
    return out;
  };
  const phases = new Map(table.map((p) => [p.label, 0]));
  const unattributed = new Map();
  let busyMs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const c = classify(profile.samples[i]);
    if (c.idle) continue;
    busyMs += ms;
    if (c.phase) phases.set(c.phase.label, phases.get(c.phase.label) + ms);
    else unattributed.set(c.group, (unattributed.get(c.group) ?? 0) + ms);
  }
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return { busyMs, phases: sorted(phases), unattributed: sorted(unattributed) };
}

/** The group of a sample no phase names, as profile-attribution.mjs would give it. */
function unattributedGroup(own, group) {
  if (own === "(garbage collector)") return "garbage collection";
  if (own === "(program)") return "(program: V8 and native work outside any JS frame)";
  return group ?? "(native code without a JS caller)";
}
