/**
 * `paid-actions-mcp doctor`: is everything in place to pay? Configuration, the service,
 * the wallet and its balance, the journal — and whether a person froze payments (a warning:
 * nothing is wrong with the setup, but nothing is paid until a person lifts it). Each check
 * says what is wrong and how to fix it.
 */
import { openPaidActions, rpcChain, type PaidActions } from "../app/index.js";
import { checkNativeSqlite, runningNode, sqliteNeeded } from "../app/native.js";
import {
  loadConfig,
  loadPayer,
  pinFileProblem,
  pinIsSet,
  readAllowance,
  serviceApi,
  shortfall,
  type Payer,
} from "../engine/index.js";
import { formatDecimal } from "../domain/money.js";
import { AuditUnavailable, runAudit, urlOrigin } from "./audit.js";
import { describeFreeze } from "./freeze.js";
import { interactive } from "./tty.js";

type Level = "ok" | "warn" | "fail";
const MARK: Record<Level, string> = { ok: "ok  ", warn: "warn", fail: "FAIL" };

async function rpc(url: string, method: string, params: unknown[]): Promise<any> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(5_000),
  });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(json.error.message);
  return json.result;
}

const DAY_MS = 24 * 3_600_000;

/** Delegate mode: the allowance left to the agent key on the owner's account, and the owner's balance. */
async function allowanceCheck(
  pa: PaidActions,
  payer: Payer,
  check: (level: Level, text: string) => void,
): Promise<void> {
  const rpcUrl = pa.config!.rpcUrl!;
  try {
    const v = await readAllowance(await rpcChain(pa.config!)(), payer);
    const short = shortfall(v, 1n);
    check(
      short ? "warn" : "ok",
      `allowance: ${formatDecimal(v.allowance)} USDC left to spend from the owner's ${formatDecimal(v.ownerBalance)} USDC (account ${v.tokenAccount}, via ${urlOrigin(rpcUrl)})${short ? `; ${short}: the owner must grant one (paid-actions-mcp allowance grant)` : ""}`,
    );
  } catch (e) {
    check(
      "warn",
      `allowance: could not read it (${(e as Error).message.split(rpcUrl).join(urlOrigin(rpcUrl)).slice(0, 160)})`,
    );
  }
}

/** The Node release lines package.json's engines admits: 20.18+, 22, 24 and later. */
function supportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  return (major === 20 && minor >= 18) || major === 22 || major >= 24;
}

/**
 * The running Node and whether the native SQLite module loads under it. Returns false when
 * the module cannot load and this configuration needs it: nothing else can be checked then.
 */
async function runtimeChecks(env: NodeJS.ProcessEnv, check: (level: Level, text: string) => void): Promise<boolean> {
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

/** The audit over the last 24 h: each discrepancy makes a FAIL; an RPC that does not answer, a warning. */
async function chainCheck(
  pa: Parameters<typeof runAudit>[0],
  check: (level: Level, text: string) => void,
): Promise<void> {
  const now = Date.now();
  try {
    // A 24 h history is small; bounded tighter than the audit command so doctor stays quick.
    const { report } = await runAudit(pa, { since: now - DAY_MS, now, scan: { maxSignatures: 2_000, attempts: 2 } });
    const n = report.discrepancies.length;
    if (n === 0) {
      check(
        "ok",
        `chain: the journal and the chain agree for the last 24 h (${report.payments.length} payment(s), ${report.scan.transactionsRead} transaction(s) read${report.inFlight.length > 0 ? `, ${report.inFlight.length} in flight` : ""})`,
      );
    } else {
      const kinds = [...new Set(report.discrepancies.map((d) => d.kind))].join(", ");
      check(
        "fail",
        `chain: ${n} discrepanc${n === 1 ? "y" : "ies"} between the journal and the chain in the last 24 h (${kinds}) — see: paid-actions-mcp audit --since ${report.since}`,
      );
    }
  } catch (e) {
    const why = e instanceof AuditUnavailable ? e.message : `${(e as Error).name}: ${(e as Error).message}`;
    check("warn", `chain: could not compare the journal with the chain (${why.slice(0, 300)})`);
  }
}

export async function doctor(env: NodeJS.ProcessEnv): Promise<number> {
  const lines: Array<[Level, string]> = [];
  const check = (level: Level, text: string) => {
    lines.push([level, text]);
    process.stdout.write(`[${MARK[level]}] ${text}\n`);
  };
  if (!(await runtimeChecks(env, check))) {
    const cfg = loadConfig(env);
    if (!cfg.ok) for (const i of cfg.issues) check("fail", `config: ${i.key}: ${i.message}`);
    process.stdout.write(
      `\n${lines.filter(([l]) => l === "fail").length} problem(s) to fix before anything can be paid.\n`,
    );
    return 1;
  }
  let pa: Awaited<ReturnType<typeof openPaidActions>>;
  let frozen = false;
  try {
    pa = await openPaidActions({
      env,
      log: () => undefined,
      reconcile: false,
      resume: false,
      sandbox: { providerDelayMs: 3_000 },
    });
  } catch (e) {
    // The journal (a PostgreSQL server away, a schema newer than this build, its URL invalid) or the sandbox.
    const cfg = loadConfig(env);
    if (!cfg.ok) for (const i of cfg.issues) check("fail", `config: ${i.key}: ${i.message}`);
    check("fail", `start: ${(e as Error).message.slice(0, 400)}`);
    process.stdout.write(`\n${lines.length} problem(s) to fix before anything can be paid.\n`);
    return 1;
  }
  try {
    const cfg = pa.configResult;
    if (!cfg.ok) {
      for (const i of cfg.issues) check("fail", `config: ${i.key}: ${i.message}`);
    } else {
      const c = pa.config!;
      const s = await pa.engine.spending();
      check(
        "ok",
        `config: ${c.mode === "sandbox" ? "sandbox mode (no PAID_ACTIONS_BASE_URL): the embedded reference service" : `service ${c.baseUrl}`}; network ${c.network}; home ${c.home}${c.configFile ? `; file ${c.configFile}` : ""}`,
      );
      check(
        "ok",
        `limits: ${s.limits!.maxPerCall} USDC per call, ${s.limits!.maxPerDay} per 24 h${s.limits!.maxTotal ? `, ${s.limits!.maxTotal} in total` : ""}, approval above ${s.limits!.approvalAbove}; actions ${s.limits!.allowActions.join(", ")}`,
      );
    }
    if (pa.client) {
      try {
        const res = await serviceApi(pa.client).listActions();
        if (res.ok) {
          check(
            "ok",
            `service: reachable, ${res.body.items.length} action(s): ${res.body.items.map((i) => i.name).join(", ")}`,
          );
          // A per-action limit naming no action of the catalog caps nothing: paying refuses until it is fixed.
          for (const i of pa.engine.useCatalog(res.body.items.map((a) => a.name)))
            check("fail", `config: ${i.key}: ${i.message}`);
        } else
          check(
            "fail",
            `service: GET /actions answered HTTP ${res.status} ${res.error.code}: ${res.error.message}${res.status === 401 ? " (check PAID_ACTIONS_API_KEY)" : ""}`,
          );
      } catch (e) {
        check("fail", `service: not reachable (${(e as Error).message})`);
      }
    }
    if (pa.config?.walletPath) {
      try {
        const payer = await loadPayer(pa.config.walletPath, pa.config.rpcUrl, {
          mint: pa.config.mint,
          owner: pa.config.owner,
        });
        if (payer.owner) {
          check(
            "ok",
            `wallet: agent key ${pa.config.walletPath} (address ${payer.address}), paying as the delegate of the owner ${payer.owner}`,
          );
        } else {
          check("ok", `wallet: ${pa.config.walletPath} (address ${payer.address})`);
          check(
            "warn",
            "wallet: the key in this home can spend everything in its account: set PAID_ACTIONS_OWNER and grant this key an allowance (delegate mode), so that the chain caps what it can spend",
          );
        }
        if (pa.config.rpcUrl) {
          if (payer.owner) await allowanceCheck(pa, payer, check);
          else {
            try {
              const bal = (await rpc(pa.config.rpcUrl, "getTokenAccountBalance", [payer.source])) as {
                value: { amount: string };
              };
              const amount = BigInt(bal.value.amount);
              check(
                amount > 0n ? "ok" : "warn",
                `balance: ${formatDecimal(amount)} USDC on ${pa.config.network} (via ${urlOrigin(pa.config.rpcUrl)})`,
              );
            } catch (e) {
              check(
                "warn",
                `balance: could not read the USDC balance (${(e as Error).message.split(pa.config.rpcUrl).join(urlOrigin(pa.config.rpcUrl)).slice(0, 120)}); the wallet may hold no USDC yet`,
              );
            }
          }
          await chainCheck(pa, check);
        }
      } catch (e) {
        check("fail", `wallet: ${(e as Error).message}`);
      }
    }
    const waiting = (await pa.journal.pendingApprovals(Date.now())).length;
    const pinBroken = pinIsSet(pa.home) ? pinFileProblem(pa.home) : undefined;
    check(
      pinBroken ? "warn" : "ok",
      `approvals: ${waiting} waiting for a person (the console or \`approve\` at a terminal); ` +
        (pinBroken
          ? `${pinBroken}: every PIN is refused until the file is deleted (and \`set-pin\` run again)`
          : pinIsSet(pa.home)
            ? "an approval PIN is set"
            : "no approval PIN (optional: paid-actions-mcp set-pin)"),
    );
    const freeze = await pa.journal.frozen();
    // The command that lifts it only for a person at a terminal: doctor may run in an agent's shell.
    const lift = interactive() ? "runs `paid-actions-mcp unfreeze` at a terminal" : "unfreezes payments at a terminal";
    if (freeze)
      check(
        "warn",
        `freeze: payments are frozen (${describeFreeze(freeze)}): no server on this journal signs a new payment until a person ${lift}`,
      );
    else check("ok", "freeze: payments are not frozen");
    frozen = freeze !== undefined;
    const h = await pa.journal.health();
    check(
      h.integrity === "ok" ? "ok" : "fail",
      `journal: ${h.store} at ${h.location}, schema ${h.schemaVersion}, integrity ${h.integrity}, ${h.total} intent(s), ${h.unfinished} unfinished, ${h.following} being followed`,
    );
    if (h.attention > 0)
      check("warn", `journal: ${h.attention} intent(s) need attention — see: paid-actions-mcp executions --attention`);
  } finally {
    await pa.close();
  }
  const failed = lines.filter(([l]) => l === "fail").length;
  const ready = frozen ? "\nReady to pay once a person unfreezes payments.\n" : "\nReady to pay.\n";
  process.stdout.write(failed === 0 ? ready : `\n${failed} problem(s) to fix before anything can be paid.\n`);
  return failed === 0 ? 0 : 1;
}
