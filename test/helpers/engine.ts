/**
 * An engine wired to a real reference service on 127.0.0.1, through a programmable proxy
 * (so a test can make the service drift or fail), with its journal in a temp home — or, when
 * PAM_TEST_JOURNAL=postgres (vitest.config.ts's "engine on postgres" project), in a fresh
 * database on a test PostgreSQL server.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openJournal, openPaidActions, type OpenOptions, type PaidActions } from "../../src/app/index.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import type { TestPostgres } from "./postgres.mjs";
import { startProxy, type Proxy, type ProxyRule, type SeenRequest } from "./proxy.js";
import { RefusalLedger, sandboxSide } from "./refusal-ledger.js";
import { startTestSandbox, type TestSandbox } from "./sandbox.js";

/** The journal store the engine tests run against: PAM_TEST_JOURNAL=postgres, else (unset) SQLite. */
export const TEST_JOURNAL: "sqlite" | "postgres" = (() => {
  const v = process.env.PAM_TEST_JOURNAL;
  if (v === undefined || v === "" || v === "sqlite") return "sqlite";
  if (v === "postgres") return "postgres";
  throw new Error(`PAM_TEST_JOURNAL=${v}: expected "postgres" or nothing (SQLite)`);
})();
/** The tests run on a PostgreSQL journal. */
export const PG = TEST_JOURNAL === "postgres";

// One PostgreSQL server per test process, started with the first database a test asks for.
// Vitest runs each test file in its own process (isolate, the default) and ends it with
// SIGTERM, on which the helper's exit hook does not run: this file-level afterAll (registered
// when a test file imports this module, and run after the file's own afterAll hooks) stops it.
let server: Promise<TestPostgres> | undefined;
afterAll(async () => {
  const s = server;
  server = undefined;
  await (await s?.catch(() => undefined))?.stop();
}, 60_000);

/**
 * What an engine's environment adds to name the store under test: nothing for SQLite (the
 * home's journal.sqlite), a fresh, empty PostgreSQL database's PAID_ACTIONS_JOURNAL_URL for
 * postgres. Children started with the env (runEngineChild, the CLI) open the same journal.
 */
export async function testJournalEnv(): Promise<Record<string, string>> {
  if (!PG) return {};
  server ??= import("./postgres.mjs").then((m) => m.startTestPostgres());
  const pg = await server.catch((e: unknown) => {
    server = undefined;
    throw e;
  });
  return { PAID_ACTIONS_JOURNAL_URL: await pg.createDatabase() };
}

/**
 * The journal an engine's env names (PAID_ACTIONS_HOME's journal.sqlite, or
 * PAID_ACTIONS_JOURNAL_URL), opened as the app opens it, for a test that reads it directly.
 * Close it with `await journal.close()`.
 */
export async function openTestJournal(env: NodeJS.ProcessEnv): Promise<JournalStore> {
  const opened = await openJournal(env);
  if (!opened.configResult.ok) {
    await opened.close();
    throw new Error(`the test's env is not a valid configuration: ${JSON.stringify(opened.configResult.issues)}`);
  }
  assertStore(opened.journal);
  return opened.journal;
}

/** Under PAM_TEST_JOURNAL=postgres, a test that ends up on SQLite would prove nothing about PostgreSQL. */
function assertStore(journal: JournalStore): void {
  const sqlite = journal instanceof Journal;
  if (sqlite !== !PG)
    throw new Error(
      `PAM_TEST_JOURNAL=${TEST_JOURNAL}, but the engine opened a ${sqlite ? "SQLite" : "PostgreSQL"} journal`,
    );
}

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
export function runEngineChild(
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: any[]; stderr: string }> {
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
      resolve({
        code,
        signal,
        lines: out
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
        stderr: err,
      });
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
  /** Every refusal engine.pay and engine.payFetch gave (test/helpers/refusal-ledger.ts). */
  refusals: RefusalLedger;
  /**
   * Holds every refusal that said nothing was charged or paid to the ledger, after the proofs
   * the proxy (and `seen`: a seller's) saw had their chance to land. Call before close().
   */
  checkRefusals(seen?: ReadonlyArray<Pick<SeenRequest, "headers" | "body">>): ReturnType<RefusalLedger["check"]>;
  close(): Promise<void>;
}

/** Records every refusal the engine's paid calls give, as the agent would get them. */
function recordRefusals(pa: PaidActions, ledger: RefusalLedger): PaidActions {
  const { engine } = pa;
  const recorded =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await f(...a);
      } catch (e) {
        if (e instanceof PaidActionError) ledger.record(e);
        throw e;
      }
    };
  engine.pay = recorded(engine.pay.bind(engine));
  engine.payFetch = recorded(engine.payFetch.bind(engine));
  return pa;
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

/**
 * Whether the rules lie or fail at POST /payments/confirm: such a test is about the flow that
 * hands proofs there (PAID_ACTIONS_CONFIRM_PAYMENTS), not the default one, where the proof
 * travels with POST /executions and the same lies are told there (money-truth-fast-path.test.ts).
 */
function aboutConfirm(rules: ProxyRule[]): boolean {
  const confirm: SeenRequest = { method: "POST", path: "/v1/payments/confirm", headers: {}, body: "{}" };
  return rules.some((r) => {
    try {
      return r.match(confirm);
    } catch {
      return false;
    }
  });
}

export async function engineFixture(o: FixtureOptions = {}): Promise<EngineFixture> {
  const t = o.t ?? (await startTestSandbox(o.sandbox));
  const proxy = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""), o.rules ?? []);
  const home = mkdtempSync(join(tmpdir(), "pam-engine-"));
  const env: NodeJS.ProcessEnv = {
    ...serviceEnv(t, home, `${proxy.url}/v1`),
    ...(await testJournalEnv()),
    ...(aboutConfirm(o.rules ?? []) ? { PAID_ACTIONS_CONFIRM_PAYMENTS: "true" } : {}),
    ...(o.env ?? {}),
  };
  if (o.configFile !== undefined) {
    const path = join(home, "config.json");
    writeFileSync(path, JSON.stringify(o.configFile));
    env.PAID_ACTIONS_CONFIG = path;
  }
  const openOpts = (extra: Partial<OpenOptions> = {}): OpenOptions => ({
    env,
    log: () => undefined,
    reconcile: false,
    ...o.open,
    ...extra,
  });
  const open = async (extra?: Partial<OpenOptions>) => {
    const opened = await openPaidActions(openOpts(extra));
    // An invalid configuration names no journal URL: the app then opens the home's SQLite file.
    if (opened.configResult.ok) assertStore(opened.journal);
    return opened;
  };
  const refusals = new RefusalLedger();
  let pa = recordRefusals(await open(), refusals);
  const fixture: EngineFixture = {
    t,
    refusals,
    proxy,
    pa,
    env,
    home,
    async reopen(extra) {
      await fixture.pa.close();
      pa = recordRefusals(await open(extra), refusals);
      fixture.pa = pa;
      return pa;
    },
    checkRefusals: (seen = []) =>
      refusals.check({ ...sandboxSide(t), journals: fixture.pa.journal, seen: [...proxy.seen, ...seen] }),
    settledFor: (quoteId) =>
      (
        t.sb.db
          .prepare(`SELECT COUNT(*) AS n FROM payments WHERE quote_id = ? AND status = 'settled'`)
          .get(quoteId) as { n: number }
      ).n,
    executionsFor: (quoteId) =>
      (t.sb.db.prepare(`SELECT COUNT(*) AS n FROM executions WHERE quote_id = ?`).get(quoteId) as { n: number }).n,
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

/** A paid call's result, or the PaidActionError it was refused with. */
export async function outcome(p: Promise<PaidCall>): Promise<PaidCall | PaidActionError> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof PaidActionError) return e;
    throw e;
  }
}

/** The PaidActionError a call is refused with (fails the test when it is not refused). */
export async function refusal(p: Promise<unknown>): Promise<PaidActionError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof PaidActionError) return e;
    throw e;
  }
  throw new Error("expected a refusal, got a result");
}
