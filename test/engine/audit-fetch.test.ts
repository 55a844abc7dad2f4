/**
 * `paid-actions-mcp audit` over a mix of action purchases and x402 resources bought with
 * paid_fetch (the sandbox's own, settled through its facilitator): every outflow is matched,
 * by its memo, to a payment the journal holds; a fetch payment removed from the journal is an
 * unknown outflow.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { CLI_PATH, ensureBuilt, PROJECT_ROOT } from "../helpers/process.js";
import { startTestSandbox } from "../helpers/sandbox.js";

function auditJson(env: NodeJS.ProcessEnv): Promise<{ code: number | null; report: any }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "audit", "--json"], {
      cwd: PROJECT_ROOT,
      env: { ...env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      try {
        resolve({ code, report: JSON.parse(out) });
      } catch {
        reject(new Error(`audit --json printed no JSON (exit ${code}): ${out}\n${err}`));
      }
    });
  });
}

describe("audit: action purchases and paid_fetch purchases against the chain", () => {
  let f: EngineFixture | undefined;
  beforeAll(() => ensureBuilt(), 120_000);
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("a mix agrees (exit 0); a fetch payment removed from the journal is an unknown outflow (exit 3)", async () => {
    const t = await startTestSandbox();
    const origin = new URL(t.sb.baseUrl).origin;
    f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: origin } });
    onTestFinished(() => t.close());
    const action = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    const weather = await f.pa.engine.payFetch({ url: `${origin}/x402/weather?city=Quito` });
    const summary = await f.pa.engine.payFetch({
      url: `${origin}/x402/summarize`,
      method: "POST",
      body: { text: "One budget. One journal. One audit." },
    });
    const action2 = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    const memo = async (intentId: string) => (await f!.pa.journal.intent(intentId))!.quoteId!;
    const fetchMemos = [await memo(weather.result.intentId!), await memo(summary.result.intentId!)];

    const honest = await auditJson(f.env);
    expect(honest.report.discrepancies).toEqual([]);
    expect(honest.code).toBe(0);
    for (const quoteId of [action.quote.quoteId, action2.quote.quoteId, ...fetchMemos])
      expect(
        honest.report.outflows.find((o: any) => o.quoteId === quoteId),
        quoteId,
      ).toMatchObject({ matched: true });

    await f.pa.close();
    const db = new Database(join(f.home, "journal.sqlite"));
    db.prepare(`DELETE FROM payments WHERE quote_id = ?`).run(fetchMemos[0]);
    db.close();

    const { code, report } = await auditJson(f.env);
    expect(code).toBe(3);
    expect(report.discrepancies).toEqual([
      expect.objectContaining({ kind: "unknown_outflow", quoteId: fetchMemos[0], chainAmount: "0.001" }),
    ]);
  });
});
