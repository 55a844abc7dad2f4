/**
 * The engine SIGKILLed at every step boundary (test/helpers/engine-child.mjs), then restarted
 * with the same call, on each rail (test/helpers/rails.ts): every intent ends executed with
 * exactly one settled payment and one execution, the journal agrees with the service, and the
 * rail's ledger shows one debit per intent — the payer's and the payee's balances.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STEPS } from "../../src/engine/engine.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { ensureBuilt } from "../helpers/process.js";
import { openTestJournal, PG, runEngineChild, serviceEnv, testJournalEnv } from "../helpers/engine.js";
import { balances, moved, RAILS } from "../helpers/rails.js";

const INPUT = { region: "eu-west-1", plan: "small", durationHours: 24 };

/**
 * On PostgreSQL a lease is taken over only once it has expired: its owner may be a server on
 * another machine, so a pid tells nothing (postgres.ts `claim`), where SQLite sees at once that
 * the crashed process is gone. Ends the killed child's lease on an intent, as LEASE_MS (30 s)
 * passing would, so the restart can drive it now.
 */
async function expireLease(journalUrl: string, intentKey: string): Promise<void> {
  const db = new pg.Client({ connectionString: journalUrl });
  await db.connect();
  try {
    await db.query(`UPDATE intents SET lease_until = 0 WHERE intent_key = $1 AND lease_owner IS NOT NULL`, [intentKey]);
  } finally {
    await db.end();
  }
}

describe.each(RAILS)("crash at every step boundary (SIGKILL) on $name, then restart", (rail) => {
  let t: TestSandbox;
  let home: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox(rail.sandbox);
    home = mkdtempSync(join(tmpdir(), "pam-crash-"));
    env = { ...serviceEnv(t, home), ...rail.env(t), ...(await testJournalEnv()), PAID_ACTIONS_MAX_PER_DAY: "100" };
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("every intent ends with exactly one settled payment and one execution, and the journal agrees with the service", async () => {
    const before = await balances(rail, t);
    for (const step of STEPS) {
      const call = { action: "servers.provision", input: INPUT, intentKey: `crash-at-${step}` };
      const crashed = await runEngineChild({ ...env, CHILD_CRASH_AT: step, CHILD_CALLS: JSON.stringify([call]) });
      expect(crashed.signal, `the child should die at ${step}; stderr: ${crashed.stderr}`).toBe("SIGKILL");
      expect(crashed.lines).toHaveLength(0);
      if (PG) await expireLease(env.PAID_ACTIONS_JOURNAL_URL!, call.intentKey);

      const restarted = await runEngineChild({ ...env, CHILD_CALLS: JSON.stringify([call]) });
      expect(restarted.code, restarted.stderr).toBe(0);
      expect(restarted.lines[0], `after a crash at ${step}`).toMatchObject({
        ok: true,
        result: { status: expect.any(String) },
      });
      const result = restarted.lines[0].result;

      const journal = await openTestJournal(env);
      try {
        const row = (await journal.intentByKey(call.intentKey))!;
        expect(row.state, step).toBe("executed");
        expect((await journal.payment(row.quoteId!))?.network, step).toBe(rail.network);
        expect(row.executionId).toBe(result.executionId);
        const payments = t.sb.db.prepare(`SELECT * FROM payments WHERE quote_id = ?`).all(row.quoteId) as any[];
        expect(
          payments.filter((p) => p.status === "settled"),
          `settled payments after a crash at ${step}`,
        ).toHaveLength(1);
        expect(payments[0].transaction_sig).toBe(row.paymentTx);
        const executions = t.sb.db
          .prepare(`SELECT execution_id FROM executions WHERE quote_id = ?`)
          .all(row.quoteId) as any[];
        expect(
          executions.map((e) => e.execution_id),
          `executions after a crash at ${step}`,
        ).toEqual([row.executionId]);
      } finally {
        await journal.close();
      }
    }
    // Exactly one payment per intent moved money: 8 intents x 0.288 USDC, out of the payer and into the payee.
    const spent = BigInt(STEPS.length) * 288_000n;
    expect(await moved(rail, t, before)).toEqual({ payer: spent, payee: spent });
  }, 120_000);
});
