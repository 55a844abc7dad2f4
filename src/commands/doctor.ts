/**
 * `paid-actions-mcp doctor`: is everything in place to pay? Configuration, the service,
 * the wallet and its balance, the journal — and whether a person froze payments (a warning:
 * nothing is wrong with the setup, but nothing is paid until a person lifts it). Each check
 * says what is wrong and how to fix it; the checks of an opened runtime are doctor-checks.ts.
 */
import { openPaidActions, type PaidActions } from "../app/index.js";
import { checkNativeSqlite, runningNode, sqliteNeeded } from "../app/native.js";
import { loadConfig } from "../engine/index.js";
import { issueChecks, setupChecks, type Check, type Level } from "./doctor-checks.js";

const MARK: Record<Level, string> = { ok: "ok  ", warn: "warn", fail: "FAIL" };

/** The Node release lines package.json's engines admits: 20.18+, 22, 24 and later. */
function supportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  return (major === 20 && minor >= 18) || major === 22 || major >= 24;
}

/**
 * The running Node and whether the native SQLite module loads under it. Returns false when
 * the module cannot load and this configuration needs it: nothing else can be checked then.
 */
async function runtimeChecks(env: NodeJS.ProcessEnv, check: Check): Promise<boolean> {
  const node = supportedNode(process.version);
  check(
    node ? "ok" : "warn",
    `node: ${runningNode()}${node ? "" : "; not a supported release line (20.18 or later 20.x, 22, 24 or later)"}`,
  );
  const sqlite = checkNativeSqlite();
  if (sqlite.ok) {
    check("ok", `sqlite: better-sqlite3 loaded (${sqlite.binary})`);
    return true;
  }
  const needed = await sqliteNeeded("doctor", env);
  check(
    needed ? "fail" : "warn",
    `sqlite: better-sqlite3 cannot load: ${sqlite.reason}${needed ? "" : " (not needed: the journal is on PostgreSQL)"}; fix: ${sqlite.fix}`,
  );
  return !needed;
}

/** The runtime as doctor opens it (no reconciler, no resume), or undefined when it could not start (said). */
async function openForChecks(env: NodeJS.ProcessEnv, check: Check): Promise<PaidActions | undefined> {
  try {
    return await openPaidActions({
      env,
      log: () => undefined,
      reconcile: false,
      resume: false,
      sandbox: { providerDelayMs: 3_000 },
    });
  } catch (e) {
    // The journal (a PostgreSQL server away, a schema newer than this build, its URL invalid) or the sandbox.
    const cfg = loadConfig(env);
    if (!cfg.ok) issueChecks(cfg.issues, check);
    check("fail", `start: ${(e as Error).message.slice(0, 400)}`);
    return undefined;
  }
}

export async function doctor(env: NodeJS.ProcessEnv): Promise<number> {
  const lines: Array<[Level, string]> = [];
  const check: Check = (level, text) => {
    lines.push([level, text]);
    process.stdout.write(`[${MARK[level]}] ${text}\n`);
  };
  if (!(await runtimeChecks(env, check))) {
    const cfg = loadConfig(env);
    if (!cfg.ok) issueChecks(cfg.issues, check);
    process.stdout.write(
      `\n${lines.filter(([l]) => l === "fail").length} problem(s) to fix before anything can be paid.\n`,
    );
    return 1;
  }
  const pa = await openForChecks(env, check);
  if (!pa) {
    process.stdout.write(`\n${lines.length} problem(s) to fix before anything can be paid.\n`);
    return 1;
  }
  let frozen = false;
  try {
    frozen = await setupChecks(pa, check);
  } finally {
    await pa.close();
  }
  const failed = lines.filter(([l]) => l === "fail").length;
  const ready = frozen ? "\nReady to pay once a person unfreezes payments.\n" : "\nReady to pay.\n";
  process.stdout.write(failed === 0 ? ready : `\n${failed} problem(s) to fix before anything can be paid.\n`);
  return failed === 0 ? 0 : 1;
}
