/**
 * `paid-actions-mcp audit`: the wallet's USDC token account, read through the configured
 * Solana RPC, reconciled with the journal. stdout carries the report (plain lines or one JSON
 * document); why the audit could not be made goes to stderr. Exit 0: journal and chain
 * agree; 3: they do not; 1: cannot tell. `doctor` runs the same check over the last 24 h.
 */
import { openPaidActions, rpcChain, type PaidActions } from "../app/index.js";
import { AUDIT_SKEW_MS, reconcile, type AuditReport } from "../engine/audit.js";
import { ChainScanError, scanWalletHistory, type ChainScan, type ScanOptions } from "../engine/audit-scan.js";
import type { Intent } from "../engine/types.js";
import { associatedTokenAddress } from "../domain/token.js";

const out = (line = "") => process.stdout.write(`${line}\n`);

/** The audit could not be made (configuration, wallet, RPC): nothing can be said about agreement. */
export class AuditUnavailable extends Error {
  override name = "AuditUnavailable";
}

export interface AuditRun {
  report: AuditReport & { scan: Omit<ChainScan, "txs" | "from"> & { from: string; rpc: string } };
  /** The default window found no journaled payment: there was nothing to compare. */
  empty: boolean;
}

/** scheme://host[:port] of a URL: an RPC URL may carry an API key in its path or query. */
export function urlOrigin(url: string | undefined): string {
  if (!url) return "(none)";
  try {
    return new URL(url).origin;
  } catch {
    return "(an invalid URL)";
  }
}

/**
 * `--since`: an ISO date (`2026-11-01`, midnight UTC) or datetime (`2026-11-01T12:00:00Z`,
 * an offset, or no zone = UTC). Undefined when it is neither, or names no real day.
 */
export function parseSince(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/i.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return undefined;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}${zone.toUpperCase()}`);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Runs the audit over an opened engine: the wallet's address from its keypair file, its
 * token account's history since `since` (default: the journal's first payment of this
 * wallet, minus the skew margin), the journal's payments and intents. Throws AuditUnavailable
 * when it cannot tell.
 */
export async function runAudit(pa: PaidActions, o: { since?: number; now: number; scan?: ScanOptions }): Promise<AuditRun> {
  const config = pa.config;
  if (!config) {
    const issues = pa.configResult.ok ? [] : pa.configResult.issues;
    throw new AuditUnavailable(`the configuration is invalid (${issues.map((i) => `${i.key}: ${i.message}`).join("; ")}); see: paid-actions-mcp doctor`);
  }
  if (!config.walletPath) throw new AuditUnavailable("no wallet is configured (PAID_ACTIONS_WALLET): there is no token account to audit");
  if (!config.rpcUrl) throw new AuditUnavailable("no Solana RPC is configured (SOLANA_RPC_URL): the chain cannot be read");
  let wallet: string;
  try {
    wallet = (await (await import("../engine/payer.js")).loadPayer(config.walletPath, config.rpcUrl)).address;
  } catch (e) {
    throw new AuditUnavailable(`the wallet cannot be read: ${(e as Error).message}`);
  }
  const walletAta = String(await associatedTokenAddress(wallet, config.mint));
  const journal = pa.journal;

  let since = o.since;
  let empty = false;
  if (since === undefined) {
    const first = (await journal.paymentsSince(0)).find((p) => (p.payer === null || p.payer === wallet) && (p.mint === null || p.mint === config.mint));
    // Earlier wallet history is not the journal's business.
    if (first) since = first.signedAt - AUDIT_SKEW_MS;
    else {
      since = o.now;
      empty = true;
    }
  }
  const from = since - AUDIT_SKEW_MS;

  let scan: ChainScan;
  const rpc = urlOrigin(config.rpcUrl);
  try {
    const chain = await rpcChain(config)();
    scan = await scanWalletHistory(chain, walletAta, from, o.scan);
  } catch (e) {
    const message = (e as Error).message.split(config.rpcUrl).join(rpc);
    throw new AuditUnavailable(e instanceof ChainScanError ? `${message} (RPC ${rpc})` : `the Solana RPC ${rpc} cannot be used: ${message}`);
  }

  const payments = await journal.paymentsSince(from);
  const intents = new Map<string, Intent>((await journal.intentsSince(from)).map((i) => [i.intentId, i]));
  const add = async (intentId: string | undefined) => {
    if (intentId && !intents.has(intentId)) {
      const i = await journal.intent(intentId);
      if (i) intents.set(intentId, i);
    }
  };
  for (const p of payments) await add(p.intentId);
  // A refund inside the window for a purchase made before it: its intent says what it credited.
  for (const tx of scan.txs) await add(await journal.refundTxOwner(tx.signature));

  const report = reconcile({ since, now: o.now, wallet, walletAta, mint: config.mint, txs: scan.txs, payments, intents: [...intents.values()] });
  const { txs: _txs, from: scannedFrom, ...counts } = scan;
  return { report: { ...report, scan: { ...counts, from: new Date(scannedFrom).toISOString(), rpc } }, empty };
}

function printReport(run: AuditRun, network: string, now: number): void {
  const r = run.report;
  out(`Audit of wallet ${r.wallet} (USDC token account ${r.walletTokenAccount}) on ${network}, since ${r.since}`);
  out(`Read ${r.scan.transactionsRead} transaction(s) of the token account via ${r.scan.rpc} (${r.scan.signatures} in its history back to ${r.scan.from}, ${r.scan.failed} failed on chain, ${r.scan.pages} page(s)).`);
  if (run.empty) out("The journal holds no payment of this wallet: there is nothing to compare.");
  else if (Date.parse(r.since) > now) out("The start of the audit is in the future: there is nothing to compare.");
  out();
  for (const d of r.discrepancies) {
    const fields = [
      d.quoteId ? `quote ${d.quoteId}` : undefined,
      d.intentId ? `intent ${d.intentId}` : undefined,
      d.transaction ? `transaction ${d.transaction}` : undefined,
      d.journalAmount ? `journal ${d.journalAmount} USDC` : undefined,
      d.chainAmount ? `chain ${d.chainAmount} USDC` : undefined,
      d.at ? `at ${d.at}` : undefined,
    ].filter(Boolean);
    out(`DISCREPANCY ${d.kind}: ${d.message}`);
    out(`  ${fields.join(", ")}`);
  }
  for (const f of r.inFlight) out(`in flight: quote ${f.quoteId} (intent ${f.intentId}, ${f.intentState ?? "no intent"}): ${f.amount} USDC; ${f.why}`);
  for (const x of r.refunds.filter((x) => x.status === "not_credited")) {
    out(
      `refund not credited: intent ${x.intentId}${x.quoteId ? ` (quote ${x.quoteId})` : ""}: ${x.claimed ? `the service reports ${x.claimed.amount} USDC in ${x.claimed.transaction}` : "the execution is refunded"}` +
        `${x.chainAmount ? `; the chain shows ${x.chainAmount} USDC` : ""}; refund state ${x.refundState} (nothing counted back)`,
    );
  }
  if (r.otherWallet.length > 0) out(`not audited: ${r.otherWallet.length} journaled payment(s) of another wallet or mint (the configuration changed)`);
  if (r.discrepancies.length > 0 || r.inFlight.length > 0) out();
  const matched = r.payments.filter((p) => p.status === "on_chain").length;
  const verified = r.refunds.filter((x) => x.status === "verified");
  out(
    `Summary: ${r.outflows.length} outflow(s), ${r.payments.length} journaled payment(s) (${matched} on chain, ${r.inFlight.length} in flight), ` +
      `${verified.length} refund(s) verified, ${r.deposits.length} deposit(s); ${r.discrepancies.length} discrepanc${r.discrepancies.length === 1 ? "y" : "ies"}.`,
  );
  out(r.ok ? "The journal and the chain agree." : "The journal and the chain DISAGREE: a human should look at each discrepancy above.");
}

export async function auditCommand(env: NodeJS.ProcessEnv, o: { since?: number; json?: boolean }, now: () => number = Date.now): Promise<number> {
  let pa: PaidActions;
  try {
    pa = await openPaidActions({ env, log: () => undefined, reconcile: false, resume: false, sandbox: { providerDelayMs: 3_000 } });
  } catch (e) {
    process.stderr.write(`paid-actions-mcp audit: cannot tell: ${(e as Error).message}\n`);
    return 1;
  }
  try {
    const at = now();
    const run = await runAudit(pa, { since: o.since, now: at });
    if (o.json) out(JSON.stringify(run.report, null, 2));
    else printReport(run, pa.config!.network, at);
    return run.report.ok ? 0 : 3;
  } catch (e) {
    if (!(e instanceof AuditUnavailable)) throw e;
    process.stderr.write(`paid-actions-mcp audit: cannot tell whether the journal and the chain agree: ${e.message}\n`);
    return 1;
  } finally {
    await pa.close();
  }
}
