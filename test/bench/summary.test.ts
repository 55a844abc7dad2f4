// The summary table a full `npm run bench` ends with, on hand-made results: one row per
// figure issue 34 asks of one run (the WAN ratio once per rail), each against its target,
// the reconciler's CPU per followed execution read at its largest level, columns aligned.
import { describe, expect, it } from "vitest";
import { formatSummary, reconcilerCost, summaryRows, type SummaryResults } from "./summary.mjs";

const RESULTS: SummaryResults = {
  paidCall: { mcp: { median: 20 }, floor: { median: 12.5 } },
  wan: { mcp: { median: 104.5 }, peer: { median: 97.8 } },
  wanEvm: { mcp: { median: 130 }, peer: { median: 100 } },
  reconciler: {
    levels: [
      { unfinished: 10, requestsPerSecond: 3, cpuShare: 0.013 },
      { unfinished: 1000, requestsPerSecond: 280, cpuShare: 0.42 },
      { unfinished: 100, requestsPerSecond: 30, cpuShare: 0.068 },
    ],
  },
  memory: { calls: 1000, idleMb: 90.8, afterMb: 152.9, slopeMbPer100Calls: 1.234 },
  service: { settledExecutionsPerSecond: 206.4 },
};

describe("the summary of a full run", () => {
  it("reads the reconciler's cost at its largest level: CPU per poll, share of a core", () => {
    expect(reconcilerCost(RESULTS.reconciler!)).toEqual({ unfinished: 1000, coreShare: 0.42, cpuMsPerFollow: 1.5 });
  });

  it("gives one row per figure, the WAN ratio per rail, each against its target", () => {
    expect(summaryRows(RESULTS).map((r) => [r.result, r.target, r.verdict])).toEqual([
      ["1.60 (20.0 / 12.5 ms)", "<= 1.25", "MISSED"],
      ["1.07 (104.5 / 97.8 ms)", "<= 1.10", "met"],
      ["1.30 (130.0 / 100.0 ms)", "<= 1.10", "MISSED"],
      ["1.50 ms; 42.0 % of one core", "< 30 % of one core", "MISSED"],
      ["90.8 -> 152.9 MB; 1.23 MB per 100 calls", "<= 1.5x idle; < 1 MB per 100", "MISSED"],
      ["206", ">= 500", "MISSED"],
    ]);
    const measures = summaryRows(RESULTS).map((r) => r.measure);
    expect(measures[1]).toMatch(/solana-devnet/);
    expect(measures[2]).toMatch(/base-sepolia/);
    expect(measures[3]).toMatch(/^Reconciler at 1,000 unfinished executions/);
    expect(measures[4]).toMatch(/after 1,000 paid calls/);
  });

  it("holds the memory and the reconciler to issue 34's targets: 1.5x idle and 1 MB per 100 calls; 30 % of a core at 1,000", () => {
    const rows = summaryRows({
      ...RESULTS,
      memory: { calls: 1000, idleMb: 90, afterMb: 135, slopeMbPer100Calls: 0.99 },
      reconciler: { levels: [{ unfinished: 1000, requestsPerSecond: 280, cpuShare: 0.29 }] },
    });
    expect(rows[3]!.verdict).toBe("met");
    expect(rows[4]!.verdict).toBe("met");
    const steep = summaryRows({ ...RESULTS, memory: { calls: 1000, idleMb: 90, afterMb: 135, slopeMbPer100Calls: 1 } });
    expect(steep[4]!.verdict).toBe("MISSED");
    const small = summaryRows({
      ...RESULTS,
      reconciler: { levels: [{ unfinished: 100, requestsPerSecond: 30, cpuShare: 0.5 }] },
    });
    expect(small[3]!.verdict).toBe("");
  });

  it("holds the WAN ratio to issue 34's 1.10 on each rail", () => {
    const at = (mcp: number) =>
      summaryRows({ ...RESULTS, wanEvm: { mcp: { median: mcp }, peer: { median: 100 } } })[2]!;
    expect(at(110).verdict).toBe("met");
    expect(at(110.5).verdict).toBe("MISSED");
  });

  it("says a rail was not measured rather than leaving its row out", () => {
    const rows = summaryRows({ ...RESULTS, wanEvm: undefined });
    expect(rows).toHaveLength(6);
    expect(rows[2]).toMatchObject({ result: expect.stringMatching(/^not measured/), verdict: "" });
  });

  it("aligns the columns, the rows indented under the title", () => {
    const lines = formatSummary(summaryRows(RESULTS));
    expect(lines[0]).toBe("");
    expect(lines[1]).toMatch(/^Summary of this run +Result +Target$/);
    const resultColumn = lines[1]!.indexOf("Result");
    for (const line of lines.slice(2)) {
      expect(line.startsWith("  ")).toBe(true);
      expect(line[resultColumn - 1]).toBe(" ");
      expect(line[resultColumn]).not.toBe(" ");
    }
    expect(lines[2]!.slice(resultColumn)).toMatch(/^1\.60 \(20\.0 \/ 12\.5 ms\) +<= 1\.25 +MISSED$/);
  });
});
