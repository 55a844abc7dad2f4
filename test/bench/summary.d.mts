/** Types of summary.mjs: the summary table of a full `npm run bench`. */
export interface SummaryRow {
  measure: string;
  result: string;
  target: string;
  /** "met", "MISSED", or "" where there is no target. */
  verdict: string;
}
export interface ReconcilerLevel {
  unfinished: number;
  requestsPerSecond: number;
  /** CPU over the window / the window, of one core. */
  cpuShare: number;
}
export function reconcilerCost(reconciler: { levels: ReconcilerLevel[] }): {
  unfinished: number;
  coreShare: number;
  cpuMsPerFollow: number;
};
interface Median {
  median: number;
}
/** What the summary reads of the results bench.mjs gathers; a section that did not run is absent. */
export interface SummaryResults {
  paidCall?: { mcp: Median; floor: Median };
  wan?: { mcp: Median; peer: Median };
  wanEvm?: { mcp: Median; peer: Median };
  reconciler?: { levels: ReconcilerLevel[] };
  memory?: { calls: number; idleMb: number; afterMb: number; slopeMbPer100Calls: number };
  service?: { settledExecutionsPerSecond: number };
}
export function summaryRows(results: SummaryResults): SummaryRow[];
export function formatSummary(rows: SummaryRow[]): string[];
