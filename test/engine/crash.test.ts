import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STEPS } from "../../src/engine/engine.js";
import { Journal } from "../../src/engine/journal.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { ensureBuilt } from "../helpers/process.js";

const ROOT = join(import.meta.dirname, "..", "..");
const CHILD = join(ROOT, "test", "helpers", "engine-child.mjs");
const INPUT = { region: "eu-west-1", plan: "small", durationHours: 24 };

function runChild(env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: any[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, lines: out.split("\n").filter(Boolean).map((l) => JSON.parse(l)), stderr: err });
    });
  });
}

describe("crash at every step boundary (SIGKILL), then restart", () => {
  let t: TestSandbox;
  let home: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox();
    home = mkdtempSync(join(tmpdir(), "pam-crash-"));
    env = {
      PATH: process.env.PATH,
      PAID_ACTIONS_BASE_URL: t.sb.baseUrl,
      PAID_ACTIONS_API_KEY: t.sb.apiKey,
      PAID_ACTIONS_WALLET: t.sb.walletPath,
      SOLANA_RPC_URL: t.sb.rpcUrl,
      PAID_ACTIONS_NETWORK: "solana-devnet",
      PAID_ACTIONS_HOME: home,
      PAID_ACTIONS_APPROVAL_ABOVE: "5",
      PAID_ACTIONS_MAX_PER_DAY: "100",
    };
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("every intent ends with exactly one settled payment and one execution, and the journal agrees with the service", async () => {
    const before = await t.usdc(t.wallet.address);
    for (const step of STEPS) {
      const call = { action: "servers.provision", input: INPUT, intentKey: `crash-at-${step}` };
      const crashed = await runChild({ ...env, CHILD_CRASH_AT: step, CHILD_CALLS: JSON.stringify([call]) });
      expect(crashed.signal, `the child should die at ${step}; stderr: ${crashed.stderr}`).toBe("SIGKILL");
      expect(crashed.lines).toHaveLength(0);

      const restarted = await runChild({ ...env, CHILD_CALLS: JSON.stringify([call]) });
      expect(restarted.code, restarted.stderr).toBe(0);
      expect(restarted.lines[0], `after a crash at ${step}`).toMatchObject({ ok: true, result: { status: expect.any(String) } });
      const result = restarted.lines[0].result;

      const journal = new Journal(join(home, "journal.sqlite"));
      try {
        const row = journal.intentByKey(call.intentKey)!;
        expect(row.state, step).toBe("executed");
        expect(row.execution_id).toBe(result.executionId);
        const payments = t.sb.db.prepare(`SELECT * FROM payments WHERE quote_id = ?`).all(row.quote_id) as any[];
        expect(payments.filter((p) => p.status === "settled"), `settled payments after a crash at ${step}`).toHaveLength(1);
        expect(payments[0].transaction_sig).toBe(row.payment_tx);
        const executions = t.sb.db.prepare(`SELECT execution_id FROM executions WHERE quote_id = ?`).all(row.quote_id) as any[];
        expect(executions.map((e) => e.execution_id), `executions after a crash at ${step}`).toEqual([row.execution_id]);
      } finally {
        journal.close();
      }
    }
    // Exactly one payment per intent moved money: 8 intents x 0.288 USDC.
    expect(await t.usdc(t.wallet.address)).toBe(before - BigInt(STEPS.length) * 288_000n);
  }, 120_000);
});
