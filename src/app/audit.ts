/**
 * The audit of `paid-actions-mcp audit` (and of `doctor` and the console): for each network
 * paid on, the paying account as that network's rail reads it through our own RPC (Solana:
 * the wallet's USDC token account via SOLANA_RPC_URL; EVM: the key's USDC via
 * PAID_ACTIONS_EVM_RPC_URL), reconciled with the journal's payments on that network. One
 * report: the rails' findings side by side, agreeing only when every rail agrees.
 */
import {
  AUDIT_SKEW_MS,
  ChainScanError,
  reconcile,
  type AuditReport,
  type ChainScan,
  type Config,
  type Intent,
  type PaymentRecord,
  type ScanOptions,
} from "../engine/index.js";
import { railsFor, type PaidActions } from "./index.js";

/** The audit could not be made (configuration, wallet, RPC): nothing can be said about agreement. */
export class AuditUnavailable extends Error {
  override name = "AuditUnavailable";
}

type ScanSummary = Omit<ChainScan, "txs" | "from"> & { from: string; rpc: string };

/** What one network's rail found. */
export interface RailAudit {
  network: string;
  wallet: string;
  /** The account money moves from (Solana: a USDC token account; EVM: the key itself). */
  walletTokenAccount: string;
  mint: string;
  since: string;
  scan: ScanSummary;
  /** The journal holds no payment of this wallet on this network (by default: nothing to compare). */
  empty: boolean;
  ok: boolean;
}

export interface AuditRun {
  /**
   * Every rail's findings together; `wallet`, `walletTokenAccount`, `mint` and `scan` are the
   * first network's (as before there were several), `rails` says each one's.
   */
  report: AuditReport & { scan: ScanSummary; rails: RailAudit[] };
  /** The default window found no journaled payment on any network: there was nothing to compare. */
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

/** The network a journaled payment or intent was made on (those journaled before networks were: the Solana one). */
const onNetwork = (config: Config, network: string | undefined) => network ?? config.network;

/** What a rail needs configured to be audited, and its RPC; AuditUnavailable naming what is missing. */
function railSettings(config: Config, network: string): { rpcUrl: string } {
  if (network === config.network) {
    if (!config.walletPath)
      throw new AuditUnavailable("no wallet is configured (PAID_ACTIONS_WALLET): there is no token account to audit");
    if (!config.rpcUrl)
      throw new AuditUnavailable("no Solana RPC is configured (SOLANA_RPC_URL): the chain cannot be read");
    return { rpcUrl: config.rpcUrl };
  }
  if (!config.evmWalletPath)
    throw new AuditUnavailable(
      `no EVM key is configured (PAID_ACTIONS_EVM_WALLET): there is nothing to audit on ${network}`,
    );
  if (!config.evmRpcUrl)
    throw new AuditUnavailable(`no EVM RPC is configured (PAID_ACTIONS_EVM_RPC_URL): ${network} cannot be read`);
  return { rpcUrl: config.evmRpcUrl };
}

/** One network's audit: its rail's account and history, the journal's payments and intents on it. */
async function auditRail(
  pa: PaidActions,
  config: Config,
  network: string,
  o: { since?: number; now: number; scan?: ScanOptions },
): Promise<{ report: AuditReport; rail: RailAudit }> {
  const { rpcUrl } = railSettings(config, network);
  const rail = await railsFor(config).rail(network);
  // The agent key signs; the account is its own, or the owner's in delegate mode.
  const {
    wallet,
    account: walletAta,
    asset: mint,
  } = await rail.account().catch((e: unknown) => {
    throw new AuditUnavailable(`the wallet cannot be read: ${(e as Error).message}`);
  });
  const journal = pa.journal;
  const mine = (p: { network?: string }) => onNetwork(config, p.network) === network;

  let since = o.since;
  let empty = false;
  if (since === undefined) {
    const first = (await journal.paymentsSince(0)).find(
      (p) => mine(p) && (p.payer === null || p.payer === wallet) && (p.mint === null || p.mint === mint),
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
  const rpc = urlOrigin(rpcUrl);
  try {
    scan = await rail.scanHistory(from, o.scan);
  } catch (e) {
    const message = (e as Error).message.split(rpcUrl).join(rpc);
    throw new AuditUnavailable(
      e instanceof ChainScanError
        ? `${message} (RPC ${rpc})`
        : `the ${network === config.network ? "Solana" : "EVM"} RPC ${rpc} cannot be used: ${message}`,
    );
  }

  const { payments, intents } = await journalSide(pa, from, scan, mine);
  const report = reconcile({
    since,
    now: o.now,
    wallet,
    walletAta,
    mint,
    txs: scan.txs,
    payments,
    intents,
  });
  const summary = scanSummary(scan, rpc);
  return {
    report,
    rail: {
      network,
      wallet,
      walletTokenAccount: walletAta,
      mint,
      since: report.since,
      scan: summary,
      empty,
      ok: report.ok,
    },
  };
}

/**
 * The journal's side of one network's audit: its payments signed since `from`, their
 * intents and the intents made since then on it, and those of the refunds in its history.
 */
async function journalSide(
  pa: PaidActions,
  from: number,
  scan: ChainScan,
  mine: (p: { network?: string }) => boolean,
): Promise<{ payments: PaymentRecord[]; intents: Intent[] }> {
  const journal = pa.journal;
  const payments = (await journal.paymentsSince(from)).filter(mine);
  const intents = new Map<string, Intent>(
    (await journal.intentsSince(from))
      .filter((i) => i.requirements === null || mine({ network: i.requirements.network }))
      .map((i) => [i.intentId, i]),
  );
  const add = async (intentId: string | undefined) => {
    if (intentId && !intents.has(intentId)) {
      const i = await journal.intent(intentId);
      if (i) intents.set(intentId, i);
    }
  };
  for (const p of payments) await add(p.intentId);
  // A refund inside the window for a purchase made before it: its intent says what it credited.
  for (const tx of scan.txs) await add(await journal.refundTxOwner(tx.signature));
  return { payments, intents: [...intents.values()] };
}

/**
 * Runs the audit over an opened engine, network by network: each rail's paying account,
 * its history since `since` (default: the journal's first payment of that wallet on that
 * network, minus the skew margin), the journal's payments and intents there. Throws
 * AuditUnavailable when it cannot tell for any of them.
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
  const parts: Array<{ report: AuditReport; rail: RailAudit }> = [];
  for (const network of config.networks) parts.push(await auditRail(pa, config, network, o));
  const first = parts[0]!;
  const all = <K extends keyof AuditReport>(k: K) => parts.flatMap((p) => p.report[k] as unknown[]) as AuditReport[K];
  const report: AuditRun["report"] = {
    ...first.report,
    since: parts.map((p) => p.report.since).sort()[0]!,
    outflows: all("outflows"),
    payments: all("payments"),
    refunds: all("refunds"),
    deposits: all("deposits"),
    discrepancies: all("discrepancies"),
    inFlight: all("inFlight"),
    otherWallet: all("otherWallet"),
    ok: parts.every((p) => p.report.ok),
    scan: first.rail.scan,
    rails: parts.map((p) => p.rail),
  };
  return { report, empty: parts.every((p) => p.rail.empty) };
}

/** What the audit says of its scan: the counts, where it read back to, through which RPC (the transactions stay out). */
function scanSummary(scan: ChainScan, rpc: string): ScanSummary {
  return {
    signatures: scan.signatures,
    transactionsRead: scan.transactionsRead,
    failed: scan.failed,
    pages: scan.pages,
    from: new Date(scan.from).toISOString(),
    rpc,
  };
}
