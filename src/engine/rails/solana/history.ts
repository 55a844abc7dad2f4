/**
 * The Solana rail's history read for the audit: the wallet's token account history back to
 * a time, through the chain port — paged with `before`, bounded, retried — complete or
 * "cannot tell" (ChainScanError), never a partial history.
 */
import type { ChainTx } from "../../chain/chain.js";
import { ChainScanError, type ChainScan, type ScanOptions } from "../port.js";
import type { ChainPort, SignatureEntry } from "./chain.js";

export { ChainScanError, type ChainScan, type ChainScanReason, type ScanOptions } from "../port.js";

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One RPC read, tried again (with growing pauses) on a failure or while `again` says its answer is not there yet. */
type Retried = <T>(what: string, read: () => Promise<T>, again?: (value: T) => boolean) => Promise<T>;

/**
 * Reads the token account's history, newest first, back to `fromMs` (entries without a block
 * time are kept), then each successful transaction. Complete or throws ChainScanError: an
 * audit over part of a history would report absences that are not.
 */
export async function scanWalletHistory(
  chain: ChainPort,
  walletAta: string,
  fromMs: number,
  o: ScanOptions = {},
): Promise<ChainScan> {
  const pageSize = Math.min(1000, Math.max(1, o.pageSize ?? 1000));
  const maxSignatures = o.maxSignatures ?? 5000;
  const retried = retrier(Math.max(1, o.attempts ?? 3), o.sleep ?? pause);
  const { entries, pages } = await readSignatures(chain, walletAta, fromMs, pageSize, maxSignatures, retried);
  const wanted = entries.filter((e) => !e.failed);
  const txs = await readTransactions(chain, wanted, o.concurrency ?? 4, retried);
  txs.reverse(); // the node lists newest first (its order within a slot too): oldest first here
  return {
    txs,
    signatures: entries.length,
    transactionsRead: wanted.length,
    failed: entries.length - wanted.length,
    pages,
    from: fromMs,
  };
}

/** Reads as `Retried` says, `attempts` tries each; the last failure is "cannot tell" (rpc_unavailable). */
function retrier(attempts: number, sleep: (ms: number) => Promise<void>): Retried {
  return async <T>(what: string, read: () => Promise<T>, again?: (value: T) => boolean): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let value: T;
      try {
        value = await read();
      } catch (e) {
        if (attempt >= attempts)
          throw new ChainScanError(
            "rpc_unavailable",
            `the Solana RPC did not answer ${what} (${(e as Error).message.slice(0, 200)})`,
          );
        await sleep(250 * 4 ** (attempt - 1));
        continue;
      }
      if (!again?.(value) || attempt >= attempts) return value;
      await sleep(250 * 4 ** (attempt - 1));
    }
  };
}

/** The history's entries back to `fromMs`, newest first, page by page (with `before`), each once. */
async function readSignatures(
  chain: ChainPort,
  walletAta: string,
  fromMs: number,
  pageSize: number,
  maxSignatures: number,
  retried: Retried,
): Promise<{ entries: SignatureEntry[]; pages: number }> {
  const entries: SignatureEntry[] = [];
  const seen = new Set<string>();
  let before: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await retried("getSignaturesForAddress", () =>
      chain.signaturesFor(walletAta, { limit: pageSize, ...(before ? { before } : {}) }),
    );
    pages++;
    let reached = false;
    let fresh = 0;
    for (const entry of page) {
      if (entry.blockTime !== null && entry.blockTime * 1000 < fromMs) {
        reached = true;
        break;
      }
      if (seen.has(entry.signature)) continue;
      seen.add(entry.signature);
      entries.push(entry);
      fresh++;
    }
    if (entries.length > maxSignatures) {
      throw new ChainScanError(
        "history_too_long",
        `the wallet's token account has more than ${maxSignatures} transactions since ${new Date(fromMs).toISOString()}; audit a shorter period with --since`,
      );
    }
    if (reached || page.length < pageSize) break;
    if (fresh === 0)
      throw new ChainScanError(
        "rpc_unavailable",
        "the Solana RPC answered the same history page twice: its history cannot be read to the end",
      );
    before = page[page.length - 1]!.signature;
  }
  return { entries, pages };
}

/** Each entry's transaction, in the entries' order, `concurrency` reads in flight at once. */
async function readTransactions(
  chain: ChainPort,
  wanted: SignatureEntry[],
  concurrency: number,
  retried: Retried,
): Promise<ChainTx[]> {
  const txs: ChainTx[] = new Array(wanted.length);
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < wanted.length && !stopped) {
      const index = next++;
      const entry = wanted[index]!;
      // A node can list a signature a moment before it serves the transaction: asked again.
      const tx = await retried(
        `getTransaction for ${entry.signature}`,
        () => chain.transaction(entry.signature),
        (t) => t === null,
      );
      if (tx === null)
        throw new ChainScanError(
          "transaction_missing",
          `the Solana RPC lists transaction ${entry.signature} in the wallet's history but does not return it (a node without full history?)`,
        );
      txs[index] = tx;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), Math.max(1, wanted.length)) }, worker));
  } finally {
    stopped = true; // one failed read ends the scan: the other workers ask nothing more
  }
  return txs;
}
