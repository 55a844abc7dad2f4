/**
 * The checks `doctor` makes on an opened runtime, each saying what is wrong and how to fix
 * it: the configuration and its limits, the service, each rail's wallet (its key; on Solana
 * its balance or the allowance it spends and whether the owner's key is within this user's
 * reach; on EVM the key's own balance, the ceiling there; the chain against the journal),
 * approvals, the freeze, the journal.
 */
import { hostname } from "node:os";
import type { PaidActions } from "../app/index.js";
import { railsFor, rpcChain } from "../app/index.js";
import { formatDecimal } from "../domain/money.js";
import { DAY_MS, loadPayer, pinGate, readAllowance, shortfall, type ConfigIssue, type Payer } from "../engine/index.js";
import { AuditUnavailable, runAudit, urlOrigin } from "./audit.js";
import { describeFreeze } from "./freeze.js";
import { ownerKeyWarnings } from "./owner-key.js";
import { interactive } from "./tty.js";

export type Level = "ok" | "warn" | "fail";
/** Records and prints one check's outcome. */
export type Check = (level: Level, text: string) => void;

/** Each configuration issue, a failed check. */
export function issueChecks(issues: readonly ConfigIssue[], check: Check): void {
  for (const i of issues) check("fail", `config: ${i.key}: ${i.message}`);
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
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

/**
 * Every check of an opened runtime, in the order doctor prints them. Returns whether a
 * person froze payments.
 */
export async function setupChecks(pa: PaidActions, check: Check): Promise<boolean> {
  await configCheck(pa, check);
  await serviceCheck(pa, check);
  await walletChecks(pa, check);
  await approvalsCheck(pa, check);
  const frozen = await freezeCheck(pa, check);
  await journalCheck(pa, check);
  return frozen;
}

/** The configuration (which service, network, home) and the limits it sets. */
async function configCheck(pa: PaidActions, check: Check): Promise<void> {
  const cfg = pa.configResult;
  if (!cfg.ok) {
    issueChecks(cfg.issues, check);
    return;
  }
  const c = pa.config!;
  const s = await pa.engine.spending();
  check(
    "ok",
    `config: ${c.mode === "sandbox" ? `sandbox mode (no PAID_ACTIONS_BASE_URL): the embedded reference service at ${c.baseUrl} (the same port at every launch)` : `service ${c.baseUrl}`}; ${c.networks.length > 1 || c.networks[0] !== c.network ? `networks ${c.networks.join(", ")} (in this order of preference)` : `network ${c.network}`}; home ${c.home}${c.configFile ? `; file ${c.configFile}` : ""}`,
  );
  check(
    "ok",
    `limits: ${s.limits!.maxPerCall} USDC per call, ${s.limits!.maxPerDay} per 24 h${s.limits!.maxTotal ? `, ${s.limits!.maxTotal} in total` : ""}, approval above ${s.limits!.approvalAbove}; actions ${s.limits!.allowActions.join(", ")}`,
  );
}

/** The service answers, with its catalog; and every per-action limit names one of its actions. */
async function serviceCheck(pa: PaidActions, check: Check): Promise<void> {
  try {
    const res = await pa.engine.actionNames();
    // No service configured: the configuration's own check has said why.
    if (!res) return;
    if (res.ok) {
      check("ok", `service: reachable, ${res.names.length} action(s): ${res.names.join(", ")}`);
      // A per-action limit naming no action of the catalog caps nothing: paying refuses until it is fixed.
      issueChecks(pa.engine.useCatalog(res.names), check);
    } else check("fail", `service: ${res.problem}${res.status === 401 ? " (check PAID_ACTIONS_API_KEY)" : ""}`);
  } catch (e) {
    check("fail", `service: not reachable (${(e as Error).message})`);
  }
}

/**
 * Each rail's key and the ceiling the chain enforces on it — on Solana, how the key pays (its
 * own account, or as an owner's delegate) and its balance or allowance; on EVM, the key's own
 * balance — then, when every key loaded and has an RPC, the chain against the journal.
 */
async function walletChecks(pa: PaidActions, check: Check): Promise<void> {
  const config = pa.config;
  if (!config) return;
  const paysOnSolana = config.networks.includes(config.network);
  const solana = paysOnSolana && config.walletPath ? await solanaWalletChecks(pa, check) : "skipped";
  const evm = await evmWalletChecks(pa, check);
  if (solana !== "failed" && evm !== "failed" && (solana === "readable" || evm === "readable"))
    await chainCheck(pa, check);
}

/** What a rail's checks found: its key and RPC in place ("readable"), something wrong ("failed"), or nothing to check. */
type RailCheck = "readable" | "failed" | "skipped";

/** The Solana key and how it pays; with an RPC, its balance or allowance. */
async function solanaWalletChecks(pa: PaidActions, check: Check): Promise<RailCheck> {
  const config = pa.config!;
  if (!config.walletPath) return "skipped";
  try {
    const payer = await loadPayer(config.walletPath, { mint: config.mint, owner: config.owner });
    if (payer.owner) {
      check(
        "ok",
        `wallet: agent key ${config.walletPath} (address ${payer.address}), paying as the delegate of the owner ${payer.owner}`,
      );
      ownerKeyCheck(pa, payer, check);
    } else {
      check("ok", `wallet: ${config.walletPath} (address ${payer.address})`);
      check(
        "warn",
        "wallet: the key in this home can spend everything in its account: set PAID_ACTIONS_OWNER and grant this key an allowance (delegate mode), so that the chain caps what it can spend",
      );
    }
    if (!config.rpcUrl) return "skipped";
    if (payer.owner) await allowanceCheck(pa, payer, check);
    else await balanceCheck(config.rpcUrl, config.network, payer, check);
    return "readable";
  } catch (e) {
    check("fail", `wallet: ${(e as Error).message}`);
    return "failed";
  }
}

/**
 * Each EVM network paid on: the key, and what the chain lets it spend — its own USDC balance
 * (EIP-3009 has no delegate: this key is a hot wallet, holding what the agent may spend).
 */
async function evmWalletChecks(pa: PaidActions, check: Check): Promise<RailCheck> {
  const config = pa.config!;
  let found: RailCheck = "skipped";
  for (const network of config.networks.filter((n) => n !== config.network)) {
    const rpc = urlOrigin(config.evmRpcUrl);
    const scrub = (m: string) => (config.evmRpcUrl ? m.split(config.evmRpcUrl).join(rpc) : m);
    try {
      const rail = await railsFor(config).rail(network);
      const account = await rail.account();
      check(
        "ok",
        `evm wallet: ${config.evmWalletPath} (address ${account.wallet}) pays on ${network} in USDC ${account.asset}`,
      );
      const ceiling = await rail.ceiling();
      check(
        ceiling.left > 0n ? "ok" : "warn",
        `evm balance: ${formatDecimal(ceiling.left)} USDC on ${network} (via ${rpc}): all the chain lets this key spend there (EIP-3009 has no delegate), so keep in it only what the agent may spend, and top it up`,
      );
      found = "readable";
    } catch (e) {
      check("fail", `evm wallet (${network}): ${scrub((e as Error).message).slice(0, 400)}`);
      return "failed";
    }
  }
  return found;
}

/** Delegate mode: whether this user can read a file of the owner's key that the setup names (then it can raise the ceiling). */
function ownerKeyCheck(pa: PaidActions, payer: Payer, check: Check): void {
  const warnings = ownerKeyWarnings({
    owner: payer.owner,
    sandbox: pa.sandbox?.info,
    agentKey: { path: pa.config!.walletPath!, address: payer.address },
  });
  for (const w of warnings) check("warn", `owner key: ${w}`);
  if (warnings.length === 0)
    check(
      "ok",
      "owner key: not in a file this setup names (the embedded sandbox's wallet, the agent key) that this user can read",
    );
}

/** Own-account mode: the USDC balance of the wallet's token account. */
async function balanceCheck(rpcUrl: string, network: string, payer: Payer, check: Check): Promise<void> {
  try {
    const bal = (await rpc(rpcUrl, "getTokenAccountBalance", [payer.source])) as {
      value: { amount: string };
    };
    const amount = BigInt(bal.value.amount);
    check(
      amount > 0n ? "ok" : "warn",
      `balance: ${formatDecimal(amount)} USDC on ${network} (via ${urlOrigin(rpcUrl)})`,
    );
  } catch (e) {
    check(
      "warn",
      `balance: could not read the USDC balance (${(e as Error).message.split(rpcUrl).join(urlOrigin(rpcUrl)).slice(0, 120)}); the wallet may hold no USDC yet`,
    );
  }
}

/** Delegate mode: the allowance left to the agent key on the owner's account, and the owner's balance. */
async function allowanceCheck(pa: PaidActions, payer: Payer, check: Check): Promise<void> {
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

/** The audit over the last 24 h: each discrepancy makes a FAIL; an RPC that does not answer, a warning. */
async function chainCheck(pa: Parameters<typeof runAudit>[0], check: Check): Promise<void> {
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

/** Approvals waiting for a person, and whether the approval PIN is set (and can be checked). */
async function approvalsCheck(pa: PaidActions, check: Check): Promise<void> {
  const waiting = (await pa.journal.pendingApprovals(Date.now())).length;
  const recorded = await pa.journal.pinRecords();
  const gate = pinGate(pa.home, recorded);
  const head = `approvals: ${waiting} waiting for a person (the console or \`approve\` at a terminal); `;
  if (gate.kind === "refuse")
    check(
      "warn",
      head +
        (gate.cause === "damaged"
          ? `${gate.problem}: every PIN is refused until the file is deleted (and \`set-pin\` run again)`
          : `${gate.problem}: every approval and unfreeze is refused until a person sets the PIN again at a terminal`),
    );
  else if (gate.kind === "ask")
    check(
      "ok",
      head +
        // Set before the journal remembered PINs: its file gone would read as "no PIN".
        (recorded.some((r) => r.home === pa.home && r.host === hostname())
          ? "an approval PIN is set"
          : "an approval PIN is set (before this journal remembered PINs: set it again with `set-pin`, so that its file gone refuses decisions)"),
    );
  else check("ok", `${head}no approval PIN (optional: paid-actions-mcp set-pin)`);
}

/** Whether a person froze payments (a warning: nothing is wrong, but nothing is paid). */
async function freezeCheck(pa: PaidActions, check: Check): Promise<boolean> {
  const freeze = await pa.journal.frozen();
  // The command that lifts it only for a person at a terminal: doctor may run in an agent's shell.
  const lift = interactive() ? "runs `paid-actions-mcp unfreeze` at a terminal" : "unfreezes payments at a terminal";
  if (freeze)
    check(
      "warn",
      `freeze: payments are frozen (${describeFreeze(freeze)}): no server on this journal signs a new payment until a person ${lift}`,
    );
  else check("ok", "freeze: payments are not frozen");
  return freeze !== undefined;
}

/** The journal's store, schema and integrity, and the intents that need attention. */
async function journalCheck(pa: PaidActions, check: Check): Promise<void> {
  const h = await pa.journal.health();
  check(
    h.integrity === "ok" ? "ok" : "fail",
    `journal: ${h.store} at ${h.location}, schema ${h.schemaVersion}, integrity ${h.integrity}, ${h.total} intent(s), ${h.unfinished} unfinished, ${h.following} being followed`,
  );
  if (h.attention > 0)
    check("warn", `journal: ${h.attention} intent(s) need attention — see: paid-actions-mcp executions --attention`);
}
