/**
 * An engine wired to a real reference service on 127.0.0.1, through a programmable proxy
 * (so a test can make the service drift or fail), with its journal in a temp home.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPaidActions, type OpenOptions, type PaidActions } from "../../src/app/index.js";
import { startProxy, type Proxy, type ProxyRule } from "./proxy.js";
import { startTestSandbox, type TestSandbox } from "./sandbox.js";

/** The environment that points an engine (or the MCP server) at a test sandbox as a configured service. */
export function serviceEnv(t: TestSandbox, home: string, baseUrl = t.sb.baseUrl): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    PAID_ACTIONS_BASE_URL: baseUrl,
    PAID_ACTIONS_API_KEY: t.sb.apiKey,
    PAID_ACTIONS_WALLET: t.sb.walletPath,
    SOLANA_RPC_URL: t.sb.rpcUrl,
    PAID_ACTIONS_NETWORK: "solana-devnet",
    PAID_ACTIONS_HOME: home,
    PAID_ACTIONS_APPROVAL_ABOVE: "5",
  };
}

const ENGINE_CHILD = join(import.meta.dirname, "engine-child.mjs");

/** Runs test/helpers/engine-child.mjs (the built engine in its own process); one JSON line per call. */
export function runEngineChild(env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: any[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGINE_CHILD], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, lines: out.split("\n").filter(Boolean).map((l) => JSON.parse(l)), stderr: err });
    });
  });
}

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
  const env: NodeJS.ProcessEnv = { ...serviceEnv(t, home, `${proxy.url}/v1`), ...(o.env ?? {}) };
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
