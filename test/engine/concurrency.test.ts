import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { ensureBuilt } from "../helpers/process.js";
import { openTestJournal, runEngineChild, serviceEnv, testJournalEnv } from "../helpers/engine.js";

describe("two processes sharing one journal", () => {
  let t: TestSandbox;
  let home: string;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox({ rateLimit: { perSecond: 1000, burst: 1000 } });
    home = mkdtempSync(join(tmpdir(), "pam-shared-"));
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("run 50 concurrent paid calls against a daily cap and never jointly exceed it", async () => {
    const before = await t.usdc(t.wallet.address);
    const env = { ...serviceEnv(t, home), ...(await testJournalEnv()), PAID_ACTIONS_MAX_PER_DAY: "2" };
    // 0.288 USDC each: at most 6 fit under 2 USDC (7 would be 2.016).
    const calls = (p: string) =>
      Array.from({ length: 25 }, (_, i) => ({
        action: "servers.provision",
        input: { region: "eu-west-1", plan: "small", durationHours: 24, image: `img-${p}-${i}` },
      }));
    const [a, b] = await Promise.all([
      runEngineChild({ ...env, CHILD_CALLS: JSON.stringify(calls("a")) }),
      runEngineChild({ ...env, CHILD_CALLS: JSON.stringify(calls("b")) }),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const all = [...a.lines, ...b.lines];
    expect(all).toHaveLength(50);
    const paid = all.filter((r) => r.ok);
    const refused = all.filter((r) => !r.ok);
    expect(
      refused.every((r) => r.code === "budget_exceeded"),
      JSON.stringify(refused.filter((r) => r.code !== "budget_exceeded")),
    ).toBe(true);
    expect(paid.length).toBeGreaterThan(0);
    expect(paid.length).toBeLessThanOrEqual(6);

    // What the ledger says was paid never exceeds the cap.
    const spent = before - (await t.usdc(t.wallet.address));
    expect(spent).toBe(BigInt(paid.length) * 288_000n);
    expect(spent).toBeLessThanOrEqual(2_000_000n);
    const settled = t.sb.db
      .prepare(`SELECT COALESCE(SUM(CAST(amount AS INTEGER)), 0) AS s FROM payments WHERE status = 'settled'`)
      .get() as { s: number };
    expect(BigInt(settled.s)).toBe(spent);

    const journal = await openTestJournal(env);
    try {
      const usage = await journal.usage(Date.now());
      expect(usage.day).toBe(spent);
      expect(await journal.reserved()).toBe(0n);
    } finally {
      await journal.close();
    }
  }, 120_000);
});
