/**
 * An engine wired to a real reference service on 127.0.0.1, through a programmable proxy
 * (so a test can make the service drift or fail), with its journal in a temp home.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPaidActions, type OpenOptions, type PaidActions } from "../../src/engine/index.js";
import { startProxy, type Proxy, type ProxyRule } from "./proxy.js";
import { startTestSandbox, type TestSandbox } from "./sandbox.js";

export interface EngineFixture {
  t: TestSandbox;
  proxy: Proxy;
  pa: PaidActions;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Re-opens the engine on the same home and env (after closing the previous one). */
  reopen(extra?: Partial<OpenOptions>): Promise<PaidActions>;
  /** Settled payments the sandbox recorded for a quote. */
  settledFor(quoteId: string): number;
  /** Executions the sandbox recorded for a quote. */
  executionsFor(quoteId: string): number;
  close(): Promise<void>;
}

export interface FixtureOptions {
  rules?: ProxyRule[];
  env?: Record<string, string>;
  /** Written as the PAID_ACTIONS_CONFIG file. */
  configFile?: unknown;
  open?: Partial<OpenOptions>;
  sandbox?: Parameters<typeof startTestSandbox>[0];
  t?: TestSandbox;
}

export async function engineFixture(o: FixtureOptions = {}): Promise<EngineFixture> {
  const t = o.t ?? (await startTestSandbox(o.sandbox));
  const proxy = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""), o.rules ?? []);
  const home = mkdtempSync(join(tmpdir(), "pam-engine-"));
  const env: NodeJS.ProcessEnv = {
    PAID_ACTIONS_BASE_URL: `${proxy.url}/v1`,
    PAID_ACTIONS_API_KEY: t.sb.apiKey,
    PAID_ACTIONS_WALLET: t.sb.walletPath,
    SOLANA_RPC_URL: t.sb.rpcUrl,
    PAID_ACTIONS_NETWORK: "solana-devnet",
    PAID_ACTIONS_HOME: home,
    PAID_ACTIONS_APPROVAL_ABOVE: "5",
    ...(o.env ?? {}),
  };
  if (o.configFile !== undefined) {
    const path = join(home, "config.json");
    writeFileSync(path, JSON.stringify(o.configFile));
    env.PAID_ACTIONS_CONFIG = path;
  }
  const openOpts = (extra: Partial<OpenOptions> = {}): OpenOptions => ({ env, log: () => undefined, reconcile: false, ...o.open, ...extra });
  let pa = await openPaidActions(openOpts());
  const fixture: EngineFixture = {
    t,
    proxy,
    pa,
    env,
    home,
    async reopen(extra) {
      await fixture.pa.close();
      pa = await openPaidActions(openOpts(extra));
      fixture.pa = pa;
      return pa;
    },
    settledFor: (quoteId) =>
      (t.sb.db.prepare(`SELECT COUNT(*) AS n FROM payments WHERE quote_id = ? AND status = 'settled'`).get(quoteId) as { n: number }).n,
    executionsFor: (quoteId) => (t.sb.db.prepare(`SELECT COUNT(*) AS n FROM executions WHERE quote_id = ?`).get(quoteId) as { n: number }).n,
    async close() {
      await fixture.pa.close();
      await proxy.close();
      if (!o.t) await t.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
  return fixture;
}

export const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
