// `npm run bench`: the printed report of a full run — each section's figures as a table or a
// line, against its target where it has one.
import { formatCommits } from "./commits.mjs";
import { ms } from "./common.mjs";
import { formatStartup } from "./startup.mjs";
import { formatSummary, summaryRows } from "./summary.mjs";

const addRow = (lines, ...cells) =>
  lines.push(cells.map((c, i) => String(c).padEnd([44, 10, 10, 10, 10, 0][i] ?? 0)).join(""));
const statsRow = (lines, name, s) => addRow(lines, `  ${name}`, ms(s.median), ms(s.p95), ms(s.min), ms(s.max), "");
const verdict = (ok) => (ok ? "met" : "MISSED");

/** "4 (POST /v1/quotes 1, POST /v1/executions 2, ...)": requests per call and their kinds. */
function requestsLine(count, kinds, pick) {
  const parts = Object.entries(kinds)
    .filter(([kind]) => pick(kind))
    .map(([kind, n]) => `${kind} ${n.toFixed(2).replace(/\.?0+$/, "")}`);
  return `${count.toFixed(2).replace(/\.?0+$/, "")}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

/** The labels of a WAN result written before it named its rail's sides: the Solana ones. */
const SOLANA_LABELS = { mcp: "MCP server over stdio (SQLite journal)", peer: "peer (@x402/fetch + @x402/svm)" };

/**
 * One rail's WAN lines: both clients' latency through the proxy, the requests each sends per
 * call, the journal commits (counted by commits.mjs on Solana; `null`: not a figure of this
 * rail, not printed), and the ratio MCP/peer beside the loopback MCP/floor ratio of the
 * paid-call section (`paidCall`, absent when the section ran alone; `null`: not printed).
 */
export function formatWan(w, paidCall, commits) {
  const labels = w.labels ?? SOLANA_LABELS;
  const lines = [""];
  addRow(
    lines,
    `Paid call over a ${2 * w.oneWayMs} ms round trip, ${w.rail ?? "solana-devnet"} (ms)`,
    "median",
    "p95",
    "min",
    "max",
    "",
  );
  statsRow(lines, labels.mcp, w.mcp);
  statsRow(lines, labels.peer, w.peer);
  lines.push(
    `  ${w.mcp.n} + ${w.peer.n} calls alternated in ${w.rounds} rounds on ${w.network ?? "Solana"}; one-way delay applied p50 ${ms(w.appliedOneWayMs.median)} ms, max ${ms(w.appliedOneWayMs.max)} ms`,
  );
  lines.push(...requestLines(w));
  if (commits) lines.push(...formatCommits(commits));
  else if (commits === undefined) lines.push("  journal commits per paid call: not counted in this run");
  const wanRatio = w.mcp.median / w.peer.median;
  const ratioLine = `  ratio MCP/peer p50 ${wanRatio.toFixed(2)} (target <= 1.10: ${verdict(wanRatio <= 1.1)})`;
  if (paidCall === null) lines.push(ratioLine);
  else {
    const floorRatio = paidCall && paidCall.mcp.median / paidCall.floor.median;
    const loopback = paidCall
      ? `${floorRatio.toFixed(2)} (target <= 1.25: ${verdict(floorRatio <= 1.25)})`
      : "not measured in this run (the paid-call section did not run)";
    lines.push(`${ratioLine}; loopback MCP/floor p50 ${loopback}`);
  }
  return lines;
}

/** The requests per call of both sides on the hot path, the MCP server's background, the connections. */
function requestLines(w) {
  const lines = [];
  const isService = (kind) => kind.includes("/");
  lines.push("  requests per call on the hot path, to the service / to the RPC:");
  for (const [name, side] of [
    ["MCP", w.mcp.hotPath],
    ["peer", w.peer.hotPath],
  ])
    lines.push(
      `    ${name.padEnd(5)}service ${requestsLine(side.service, side.kinds, isService)}; RPC ${requestsLine(side.rpc, side.kinds, (k) => !isService(k))}`,
    );
  const bg = w.mcp.background;
  lines.push(
    `  MCP's background work per call (after the call; its lane over the rounds, less the hot path): service ${requestsLine(bg.service, bg.kinds, isService)}; RPC ${requestsLine(bg.rpc, bg.kinds, (k) => !isService(k))}`,
  );
  const connections = (all) => {
    const to = Object.entries(all.connectionsTo ?? {}).filter(([, n]) => n >= 0.005);
    const split = to.length > 1 ? ` (${to.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(", ")})` : "";
    return `${all.connections.toFixed(2)}${split}`;
  };
  lines.push(
    `  new connections per call (each would cost a handshake one region away; the proxy charges none): MCP ${connections(w.mcp.all)}, peer ${connections(w.peer.all)}`,
  );
  return lines;
}

/** The report's lines, from the results that are also written to .bench/results.json. */
export function formatReport(results) {
  const { machine } = results;
  const p = results.paidCall;
  const ratio = (a, b) => (a / b).toFixed(2);
  const pass = (ok) => (ok ? "meets target" : "MISSES target");
  const lines = [];
  const row = (...cells) => lines.push(cells.map((c, i) => String(c).padEnd([44, 10, 10, 10, 10, 0][i] ?? 0)).join(""));
  lines.push("");
  row("Paid call latency (ms)", "median", "p95", "min", "max", "");
  for (const [name, s] of [
    ["MCP server over stdio (SQLite journal)", p.mcp],
    ["MCP server, PostgreSQL journal", p.mcpPostgres],
    ["floor (undici + same proofs + commits)", p.floor],
    ["peer (@x402/fetch + @x402/svm)", p.peer],
  ])
    row(`  ${name}`, ms(s.median), ms(s.p95), ms(s.min), ms(s.max), "");
  lines.push(
    `  ratio MCP/floor p50 ${ratio(p.mcp.median, p.floor.median)} (target <= 1.25: ${pass(p.mcp.median / p.floor.median <= 1.25)}); MCP/peer p50 ${ratio(p.mcp.median, p.peer.median)}; PostgreSQL/SQLite journal p50 ${ratio(p.mcpPostgres.median, p.mcp.median)}`,
  );
  lines.push(...formatWan(results.wan, p, results.commits));
  if (results.wanEvm) lines.push(...formatWan(results.wanEvm, null, null));
  else
    lines.push(
      "",
      "Paid call over a 40 ms round trip on base-sepolia: not measured (the sandbox ran without its EVM ledger)",
    );
  lines.push("");
  row("Cold start to tools/list (ms)", "median", "p95", "min", "max", "");
  for (const [label, c] of Object.entries(results.coldStart)) {
    if (c.firstStart) {
      row(
        `  ${label}, first start (catalog fetched)`,
        ms(c.firstStart.median),
        ms(c.firstStart.p95),
        ms(c.firstStart.min),
        ms(c.firstStart.max),
        "",
      );
      row(
        `  ${label}, cached catalog`,
        ms(c.cachedCatalog.median),
        ms(c.cachedCatalog.p95),
        ms(c.cachedCatalog.min),
        ms(c.cachedCatalog.max),
        "",
      );
    } else
      row(
        `  ${label}${label.startsWith("floor") ? "" : ", restart"}`,
        ms(c.restart.median),
        ms(c.restart.p95),
        ms(c.restart.min),
        ms(c.restart.max),
        "",
      );
  }
  const c6 = results.coldStart["6 actions"].firstStart.median;
  const c500 = results.coldStart["500 actions"].firstStart.median;
  lines.push(
    `  targets: 6 actions < 300 ms (${pass(c6 < 300)}), 500 actions < 600 ms (${pass(c500 < 600)}) — first start`,
  );
  lines.push(...formatStartup(results.startup));
  lines.push("");
  const m = results.memory;
  lines.push(
    `Memory (RSS): idle ${m.idleMb.toFixed(1)} MB (target < 120: ${pass(m.idleMb < 120)}); after ${m.calls} paid calls ${m.afterMb.toFixed(1)} MB; trend over the second half ${m.slopeMbPer100Calls.toFixed(2)} MB per 100 calls; calls that ended unsettled ${m.unsettled.length}`,
  );
  lines.push("");
  lines.push(...formatReconciler(results.reconciler));
  lines.push("");
  lines.push("list_executions latency (ms, in process):");
  for (const j of results.journal)
    lines.push(
      `  ${String(j.rows).padStart(9)} rows: latest page p50 ${ms(j.latest.median)} p95 ${ms(j.latest.p95)}; by status p50 ${ms(j.byStatus.median)}; next page p50 ${ms(j.secondPage.median)}`,
    );
  const big = results.journal[results.journal.length - 1];
  lines.push(`  target: p50 < 20 ms at ${big.rows.toLocaleString("en-US")} rows (${pass(big.latest.median < 20)})`);
  lines.push("");
  lines.push(
    `Reference service: ${results.service.quotesPerSecond.toFixed(0)} quotes/s, ${results.service.settledExecutionsPerSecond.toFixed(0)} settled executions/s ` +
      `(${results.service.settledExecutions} executions quoted and signed before the window, each POSTed with its own proof by ${results.service.settledClients} clients, settled on the ledger and answered 201 in it)`,
  );
  lines.push(...formatSummary(summaryRows(results)));
  lines.push(
    `\nTotal ${results.durationSeconds.toFixed(0)} s on ${machine.cpu} (${machine.cores} cores), Node ${machine.node}.`,
  );
  return lines;
}

/** Section 4's lines: each level's request rate, share of a core and CPU per poll. */
export function formatReconciler(reconciler) {
  const lines = [
    `Reconciler over ${reconciler.windowMs / 1000} s windows, with 10,000 finished executions in the journal:`,
  ];
  for (const l of reconciler.levels)
    lines.push(
      `  ${String(l.unfinished).padStart(5)} unfinished: ${l.requestsPerSecond.toFixed(1)} requests/s, CPU ${(l.cpuShare * 100).toFixed(1)}% of one core, ${((l.cpuShare * 1000) / l.requestsPerSecond).toFixed(2)} ms per poll (one followed execution)`,
    );
  const p = reconciler.profile;
  if (p) {
    const row = ([name, ms]) => `    ${ms.toFixed(0).padStart(6)} ms  ${name}`;
    lines.push(
      `  profile of the last window (${p.busyMs.toFixed(0)} ms busy), by group:`,
      ...p.groups.slice(0, 12).map(row),
    );
    lines.push("  top functions by self time:", ...p.functions.map(row));
    lines.push("  ours by inclusive time:", ...p.oursInclusive.map(row));
  }
  return lines;
}
