/**
 * The audit of `paid-actions-mcp audit` (and of `doctor` and the console): the wallet's USDC
 * account, read by the Solana rail through the configured Solana RPC, reconciled with the
 * journal.
 */
import {
  AUDIT_SKEW_MS,
  ChainScanError,
  reconcile,
  type AuditReport,
  type ChainScan,
  type Intent,
  type ScanOptions,
} from "../engine/index.js";
import { railsFor, type PaidActions } from "./index.js";

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
 * Runs the audit over an opened engine: the wallet's address from its keypair file, its
 * token account's history since `since` (default: the journal's first payment of this
 * wallet, minus the skew margin), the journal's payments and intents. Throws AuditUnavailable
 * when it cannot tell.
 */
export async function runAudit(
  pa: PaidActions,
  o: { since?: number; now: number; scan?: ScanOptions },
): Promise<AuditRun> {
  const config = pa.config;
  if (!config) {
    const issues = pa.configResult.ok ? [] : pa.configResult.issues;
    throw new AuditUnavailable(
      `the configuration is invalid (${issues.map((i) => `${i.key}: ${i.message}`).join("; ")}); see: paid-actions-mcp doctor`,
    );
  }
  if (!config.walletPath)
    throw new AuditUnavailable("no wallet is configured (PAID_ACTIONS_WALLET): there is no token account to audit");
  if (!config.rpcUrl)
    throw new AuditUnavailable("no Solana RPC is configured (SOLANA_RPC_URL): the chain cannot be read");
  const rail = await railsFor(config).rail(config.network);
  let wallet: string;
  let walletAta: string;
  try {
    // The agent key signs; the token account is its own, or the owner's in delegate mode.
    const account = await rail.account();
    wallet = account.wallet;
    walletAta = account.account;
  } catch (e) {
    throw new AuditUnavailable(`the wallet cannot be read: ${(e as Error).message}`);
  }
  const journal = pa.journal;

  let since = o.since;
  let empty = false;
  if (since === undefined) {
    const first = (await journal.paymentsSince(0)).find(
      (p) => (p.payer === null || p.payer === wallet) && (p.mint === null || p.mint === config.mint),
    );
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
    scan = await rail.scanHistory(from, o.scan);
  } catch (e) {
    const message = (e as Error).message.split(config.rpcUrl).join(rpc);
    throw new AuditUnavailable(
      e instanceof ChainScanError ? `${message} (RPC ${rpc})` : `the Solana RPC ${rpc} cannot be used: ${message}`,
    );
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

  const report = reconcile({
    since,
    now: o.now,
    wallet,
    walletAta,
    mint: config.mint,
    txs: scan.txs,
    payments,
    intents: [...intents.values()],
  });
  return { report: { ...report, scan: scanSummary(scan, rpc) }, empty };
}

/** What the audit says of its scan: the counts, where it read back to, through which RPC (the transactions stay out). */
function scanSummary(scan: ChainScan, rpc: string): AuditRun["report"]["scan"] {
  return {
    signatures: scan.signatures,
    transactionsRead: scan.transactionsRead,
    failed: scan.failed,
    pages: scan.pages,
    from: new Date(scan.from).toISOString(),
    rpc,
  };
}
