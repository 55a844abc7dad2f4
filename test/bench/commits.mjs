// `npm run bench`, section 1c: the journal commits a paid call makes, measured, not asserted.
// The engine runs in this process (`openPaidActions` from the build, as
// test/helpers/engine-child.mjs runs it; the reconciler off, its work being after the call),
// configured for the same reference service as the MCP server of section 1, first with a
// SQLite journal, then with a PostgreSQL one. Every method of the journal's port is wrapped
// and counted as test/engine/fast-path.test.ts counts it (test/helpers/journal-calls.mjs):
// the writes are the commits that wait for the disk, but for indexTranscript and
// saveResponseBody and saveSellerWord, written without an fsync of their own and counted apart ("relaxed").
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { countCalls, RELAXED, WRITES } from "../helpers/journal-calls.mjs";
import { startTestPostgres } from "../helpers/postgres.mjs";
import { INPUT, log, ROOT, serviceEnv, work } from "./common.mjs";

const WARM_UP = 3;
const COUNTED = 20;

/** The port calls of `COUNTED` paid calls, one after another, on a journal opened from `env`. */
async function countedCalls(env) {
  const { openPaidActions } = await import(pathToFileURL(join(ROOT, "dist", "app", "index.js")).href);
  const pa = await openPaidActions({ env, reconcile: false, log: () => undefined });
  try {
    // Each with a call id, as the MCP server gives every tool call: its transcript is indexed.
    let n = 0;
    const pay = () => pa.engine.pay({ action: "servers.provision", input: INPUT }, { callId: `call_bench${n++}` });
    for (let i = 0; i < WARM_UP; i++) await pay();
    const calls = countCalls(pa.journal);
    const perCall = [];
    for (let i = 0; i < COUNTED; i++) {
      const from = calls.length;
      await pay();
      const writes = calls.slice(from).filter((name) => WRITES.has(name));
      perCall.push({
        durable: writes.filter((name) => !RELAXED.has(name)),
        relaxed: writes.filter((name) => RELAXED.has(name)),
        writes: writes.map((name) => (RELAXED.has(name) ? `${name} (relaxed)` : name)),
      });
    }
    return summary(perCall);
  } finally {
    await pa.close();
  }
}

/** Commits per call (mean, min, max), the relaxed writes per call, and the first counted call's writes in order. */
function summary(perCall) {
  const counts = (pick) => perCall.map((c) => pick(c).length);
  const spread = (xs) => ({
    mean: xs.reduce((s, x) => s + x, 0) / xs.length,
    min: Math.min(...xs),
    max: Math.max(...xs),
  });
  return {
    calls: perCall.length,
    durable: spread(counts((c) => c.durable)),
    relaxed: spread(counts((c) => c.relaxed)),
    firstCallWrites: perCall[0].writes,
  };
}

export async function commitsPerCall(svc) {
  log(`1c. journal commits per paid call (in process, ${COUNTED} calls counted on SQLite, then PostgreSQL)…`);
  const sqlite = await countedCalls(serviceEnv(svc.info, join(work, "commits-home")));
  const pgServer = await startTestPostgres();
  try {
    const url = await pgServer.createDatabase("commits");
    const postgres = await countedCalls(
      serviceEnv(svc.info, join(work, "commits-home-pg"), { PAID_ACTIONS_JOURNAL_URL: url }),
    );
    return { sqlite, postgres };
  } finally {
    await pgServer.stop();
  }
}

/** "journal commits per paid call: SQLite 3, PostgreSQL 3 (+ 1 relaxed)", spreads shown where calls differed. */
export function formatCommits(c) {
  const n = (s) => (s.min === s.max ? String(s.min) : `${s.mean.toFixed(2)} (${s.min}-${s.max})`);
  const side = (name, s) => `${name} ${n(s.durable)}${s.relaxed.max > 0 ? ` (+ ${n(s.relaxed)} relaxed)` : ""}`;
  const ok = Math.max(c.sqlite.durable.max, c.postgres.durable.max) <= 3;
  return [
    `  journal commits per paid call (counted over ${c.sqlite.calls} calls each, in process): ${side("SQLite", c.sqlite)}, ${side("PostgreSQL", c.postgres)} (target <= 3: ${ok ? "met" : "MISSED"})`,
    `    one call's writes, in order: SQLite ${c.sqlite.firstCallWrites.join(", ")}; PostgreSQL ${c.postgres.firstCallWrites.join(", ")}`,
  ];
}
