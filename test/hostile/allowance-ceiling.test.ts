/**
 * The ceiling is the chain's. Two MCP servers (the built CLI over real stdio) with SEPARATE
 * journals — so no local cap of one can see the other's spending — share one agent key,
 * each with local caps far above what the owner granted. 2 x 6 concurrent paid calls against
 * an allowance of 4.5 x the price: the token program lets exactly 4 transfers through; every
 * other call is refused, before signing or once the chain showed its transfer can never
 * land, and says nothing was paid only when that is true.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDecimal } from "../../src/domain/money.js";
import { openTestJournal, serviceEnv } from "../helpers/engine.js";
import {
  call,
  cleanupAll,
  ensureBuilt,
  freshHome,
  runCli,
  sc,
  SMALL_SERVER,
  startServer,
  type McpServerProcess,
} from "../helpers/mcp.js";
import { RefusalLedger, sandboxSide } from "../helpers/refusal-ledger.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const ALLOWANCE = (PRICE * 9n) / 2n;
const PER_SERVER = 6;

describe("the allowance is a ceiling no local cap can raise", () => {
  let t: TestSandbox;
  const servers: McpServerProcess[] = [];
  const envs: Record<string, string>[] = [];
  beforeAll(async () => {
    ensureBuilt();
    const unthrottled = { perSecond: 1_000_000, burst: 1_000_000 };
    // Blockhashes expire after 3 s, so that a refused proof's fate is settled within a call's wait.
    t = await startTestSandbox({
      providerDelayMs: 20,
      blockhashTtlMs: 3_000,
      rateLimit: unthrottled,
      rpcRateLimit: unthrottled,
    });
    for (let i = 0; i < 2; i++) {
      const home = freshHome();
      const env = {
        ...serviceEnv(t, home),
        PAID_ACTIONS_WALLET: t.sb.agentKeyPath!,
        PAID_ACTIONS_OWNER: t.wallet.address,
        PAID_ACTIONS_MAX_PER_CALL: "100",
        PAID_ACTIONS_MAX_PER_DAY: "10000",
        PAID_ACTIONS_APPROVAL_ABOVE: "10000",
      };
      envs.push(env);
      servers.push(await startServer({ home, env }));
    }
    const granted = await runCli(
      ["allowance", "grant", formatDecimal(ALLOWANCE), "--owner-keypair", t.sb.walletPath],
      envs[0]!,
      60_000,
    );
    expect(granted.code, granted.stderr).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await cleanupAll();
    await t?.close();
  });

  it("2 x 6 concurrent calls against 4.5 x the price: exactly 4 paid, the owner's balance down by exactly 4 x the price, the rest refused truthfully", async () => {
    const ownerBefore = await t.usdc(t.wallet.address);
    const calls = servers.flatMap((_s, si) =>
      Array.from({ length: PER_SERVER }, (_, i) => ({
        server: si,
        key: `ceiling-${si}-${i}`,
        input: { ...SMALL_SERVER, image: `ceiling-${si}-${i}` },
      })),
    );
    // Every refusal, as the agent read it, with the server whose journal holds its purchase.
    const ledger = new RefusalLedger();
    const once = (c: (typeof calls)[number]) =>
      call(servers[c.server]!.client, "servers_provision", { ...c.input, intentKey: c.key }, 60_000)
        .then(sc)
        .then((a) => {
          if (a.error) ledger.record(a.error, String(c.server));
          return a;
        });
    let answers = await Promise.all(calls.map(once));
    // A call whose proof's fate was still open answers outcome_unknown: ask again until it rests.
    for (let round = 0; round < 10 && answers.some((a) => a.error?.code === "outcome_unknown"); round++) {
      await new Promise((r) => setTimeout(r, 1_000)); // spaces the rounds out: each asks again
      answers = await Promise.all(
        calls.map((c, i) => (answers[i].error?.code === "outcome_unknown" ? once(c) : answers[i])),
      );
    }
    const paid = answers.filter((a) => a.executionId);
    const refused = answers.filter((a) => !a.executionId);
    expect(paid, JSON.stringify(answers.map((a) => a.error?.code ?? "paid"))).toHaveLength(4);
    expect(refused).toHaveLength(calls.length - 4);
    expect(await t.usdc(t.wallet.address)).toBe(ownerBefore - 4n * PRICE);
    expect(await t.usdc(t.agent.address)).toBe(0n);
    for (const r of refused) expect(["allowance_exhausted", "payment_invalid"]).toContain(r.error.code);
    expect(refused.some((r) => r.error.code === "allowance_exhausted")).toBe(true);

    // Every refusal that said nothing was charged or paid: no transfer for its purchase on the ledger.
    const journals = await Promise.all(envs.map((env) => openTestJournal(env)));
    try {
      const checked = await ledger.check({
        ...sandboxSide(t),
        journals: Object.fromEntries(journals.map((j, si) => [String(si), j])),
      });
      expect(checked.claims).toBeGreaterThanOrEqual(refused.length);
    } finally {
      for (const j of journals) await j.close();
    }

    // What each journal says of each refused call: nothing spent, and every proof it signed can never land.
    for (const [si, env] of envs.entries()) {
      const journal = await openTestJournal(env);
      try {
        for (const [i, c] of calls.entries()) {
          if (c.server !== si || answers[i].executionId) continue;
          const intent = (await journal.intentByKey(c.key))!;
          expect(["none", "released"]).toContain(intent.budgetState);
          const payments = (await journal.paymentsSince(0)).filter((p) => p.intentId === intent.intentId);
          for (const p of payments) expect(p.fate).toBe("never");
          expect(answers[i].error.message).toMatch(/nothing was (signed|charged|paid)/);
        }
      } finally {
        await journal.close();
      }
    }
    // The chain: 0.5 x the price left of the allowance.
    const left = await runCli(["allowance", "--json"], envs[1]!, 60_000);
    expect(left.code, left.stderr).toBe(0);
    expect(JSON.parse(left.stdout).allowance).toBe(formatDecimal(ALLOWANCE - 4n * PRICE));
  }, 180_000);
});
