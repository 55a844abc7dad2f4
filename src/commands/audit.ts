/**
 * `paid-actions-mcp audit`: on each network paid on, the paying account's USDC (Solana: the
 * wallet's token account via SOLANA_RPC_URL; EVM: the key via PAID_ACTIONS_EVM_RPC_URL),
 * reconciled with the journal. stdout carries the report (plain lines or one JSON
 * document); why the audit could not be made goes to stderr. Exit 0: journal and chain
 * agree; 3: they do not; 1: cannot tell. `doctor` runs the same check over the last 24 h.
 */
import { AuditUnavailable, runAudit, type AuditRun } from "../app/audit.js";
import { openPaidActions, type PaidActions } from "../app/index.js";

export { AuditUnavailable, runAudit, urlOrigin, type AuditRun } from "../app/audit.js";

const out = (line = "") => process.stdout.write(`${line}\n`);

/**
 * `--since`: an ISO date (`2026-11-01`, midnight UTC) or datetime (`2026-11-01T12:00:00Z`,
 * an offset, or no zone = UTC). Undefined when it is neither, or names no real day.
 */
export function parseSince(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/i.exec(
    text.trim(),
  );
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d))
    return undefined;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}${zone.toUpperCase()}`);
  return Number.isFinite(ms) ? ms : undefined;
}

function printReport(run: AuditRun, solana: string, now: number): void {
  const r = run.report;
  for (const rail of r.rails) {
    const s = rail.scan;
    if (rail.network === solana) {
      out(
        `Audit of wallet ${rail.wallet} (USDC token account ${rail.walletTokenAccount}) on ${rail.network}, since ${rail.since}`,
      );
      out(
        `Read ${s.transactionsRead} transaction(s) of the token account via ${s.rpc} (${s.signatures} in its history back to ${s.from}, ${s.failed} failed on chain, ${s.pages} page(s)).`,
      );
    } else {
      out(`Audit of EVM key ${rail.wallet} (USDC ${rail.mint}) on ${rail.network}, since ${rail.since}`);
      out(
        `Read ${s.transactionsRead} transaction(s) that moved the key's USDC via ${s.rpc} (its Transfer logs back to ${s.from}, ${s.pages} log request(s)).`,
      );
    }
    if (rail.empty && !run.empty) out(`The journal holds no payment of this key on ${rail.network}.`);
  }
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
  for (const f of r.inFlight)
    out(
      `in flight: quote ${f.quoteId} (intent ${f.intentId}, ${f.intentState ?? "no intent"}): ${f.amount} USDC; ${f.why}`,
    );
  for (const x of r.refunds.filter((x) => x.status === "not_credited")) {
    out(
      `refund not credited: intent ${x.intentId}${x.quoteId ? ` (quote ${x.quoteId})` : ""}: ${x.claimed ? `the service reports ${x.claimed.amount} USDC in ${x.claimed.transaction}` : "the execution is refunded"}` +
        `${x.chainAmount ? `; the chain shows ${x.chainAmount} USDC` : ""}; refund state ${x.refundState} (nothing counted back)`,
    );
  }
  if (r.otherWallet.length > 0)
    out(
      `not audited: ${r.otherWallet.length} journaled payment(s) of another wallet or mint (the configuration changed)`,
    );
  if (r.discrepancies.length > 0 || r.inFlight.length > 0) out();
  const matched = r.payments.filter((p) => p.status === "on_chain").length;
  const verified = r.refunds.filter((x) => x.status === "verified");
  out(
    `Summary: ${r.outflows.length} outflow(s), ${r.payments.length} journaled payment(s) (${matched} on chain, ${r.inFlight.length} in flight), ` +
      `${verified.length} refund(s) verified, ${r.deposits.length} deposit(s); ${r.discrepancies.length} discrepanc${r.discrepancies.length === 1 ? "y" : "ies"}.`,
  );
  out(
    r.ok
      ? "The journal and the chain agree."
      : "The journal and the chain DISAGREE: a human should look at each discrepancy above.",
  );
}

export async function auditCommand(
  env: NodeJS.ProcessEnv,
  o: { since?: number; json?: boolean },
  now: () => number = Date.now,
): Promise<number> {
  let pa: PaidActions;
  try {
    pa = await openPaidActions({
      env,
      log: () => undefined,
      reconcile: false,
      resume: false,
      sandbox: { providerDelayMs: 3_000 },
    });
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
