// `npm run bench`: the summary a full run ends with — in one table, the figures issue 34 asks
// of one run: the loopback ratio, the WAN ratio on each rail the product pays on, the
// reconciler's CPU per followed execution, the memory trend and the service's settled
// executions per second, each beside its target where it has one. Pure: the results in, the
// rows and lines out (summary.test.ts).

const f2 = (v) => v.toFixed(2);
const f1 = (v) => v.toFixed(1);
const verdict = (ok) => (ok ? "met" : "MISSED");
/** Issue 34's WAN target, MCP server / bare client at p50, on every rail (the README's 1.15 came before it). */
const WAN_TARGET = 1.1;

/** The rails the WAN section runs on, in the report's order: the key in the results, the name. */
const WAN_RAILS = [
  ["wan", "solana-devnet"],
  ["wanEvm", "base-sepolia"],
];

/**
 * The reconciler at its largest level of unfinished executions: each poll follows one
 * execution (its GET /executions/{id} and what is committed of it), so its CPU per followed
 * execution is the CPU over the window divided by the polls made in it.
 */
export function reconcilerCost(reconciler) {
  const top = reconciler.levels.reduce((a, b) => (b.unfinished > a.unfinished ? b : a));
  return {
    unfinished: top.unfinished,
    coreShare: top.cpuShare,
    cpuMsPerFollow: (top.cpuShare * 1000) / top.requestsPerSecond,
  };
}

/** The summary's rows: `{ measure, result, target, verdict }`, verdict "" where there is no target. */
export function summaryRows(results) {
  const rows = [];
  const p = results.paidCall;
  if (p) {
    const r = p.mcp.median / p.floor.median;
    rows.push({
      measure: "Paid call on loopback, MCP server / floor, p50",
      result: `${f2(r)} (${f1(p.mcp.median)} / ${f1(p.floor.median)} ms)`,
      target: "<= 1.25",
      verdict: verdict(r <= 1.25),
    });
  }
  for (const [key, name] of WAN_RAILS) {
    const w = results[key];
    const measure = `Paid call one region away on ${name}, MCP server / stock client, p50`;
    if (!w) {
      rows.push({ measure, result: "not measured (no EVM ledger in the sandbox)", target: "<= 1.10", verdict: "" });
      continue;
    }
    const r = w.mcp.median / w.peer.median;
    rows.push({
      measure,
      result: `${f2(r)} (${f1(w.mcp.median)} / ${f1(w.peer.median)} ms)`,
      target: "<= 1.10",
      verdict: verdict(r <= WAN_TARGET),
    });
  }
  if (results.reconciler) {
    const c = reconcilerCost(results.reconciler);
    rows.push({
      measure: `Reconciler at ${c.unfinished.toLocaleString("en-US")} unfinished executions: CPU per followed execution (one poll)`,
      result: `${f2(c.cpuMsPerFollow)} ms; ${f1(c.coreShare * 100)} % of one core`,
      target: "< 30 % of one core",
      verdict: c.unfinished >= 1000 ? verdict(c.coreShare < 0.3) : "",
    });
  }
  const m = results.memory;
  if (m)
    rows.push({
      measure: `Memory (RSS): idle, after ${m.calls.toLocaleString("en-US")} paid calls; slope over the second half`,
      result: `${f1(m.idleMb)} -> ${f1(m.afterMb)} MB; ${f2(m.slopeMbPer100Calls)} MB per 100 calls`,
      target: "<= 1.5x idle; < 1 MB per 100",
      verdict: verdict(m.afterMb <= 1.5 * m.idleMb && m.slopeMbPer100Calls < 1),
    });
  const s = results.service;
  if (s)
    rows.push({
      measure: "Reference service: settled executions per second",
      result: s.settledExecutionsPerSecond.toFixed(0),
      target: ">= 500",
      verdict: verdict(s.settledExecutionsPerSecond >= 500),
    });
  return rows;
}

/** The rows as a table of aligned columns, under a title line. */
export function formatSummary(rows) {
  const head = { measure: "Summary of this run", result: "Result", target: "Target", verdict: "" };
  const all = [head, ...rows];
  const width = (k) => Math.max(...all.map((r) => r[k].length)) + 2;
  const [wm, wr, wt] = [width("measure"), width("result"), width("target")];
  // The rows are indented under the title: its first column is that much wider.
  const line = (r, indent) =>
    `${indent}${r.measure.padEnd(wm + 2 - indent.length)}${r.result.padEnd(wr)}${r.target.padEnd(wt)}${r.verdict}`.trimEnd();
  return ["", line(head, ""), ...rows.map((r) => line(r, "  "))];
}
