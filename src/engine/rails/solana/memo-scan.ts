/**
 * The memo search: the wallet's token account history read newest first, back to the
 * signing time, for a successful transaction carrying a quote's memo. One pass reads at most
 * `maxPages` pages; where it stopped is kept in a ScanState, so a later pass may go on from
 * there (memo-resume.ts says when that is sound).
 */
import { carriesMemo, type ChainTx } from "../../chain/chain.js";
import type { ChainPort, SignatureEntry } from "./chain.js";

export interface ScanLimits {
  /** Entries per page (getSignaturesForAddress limit). */
  pageSize: number;
  /** Pages at most, before the answer is "cannot tell". */
  maxPages: number;
  /** Clock skew allowed between this machine and the cluster's block times. */
  skewMs: number;
}

export const DEFAULT_SCAN: ScanLimits = { pageSize: 100, maxPages: 20, skewMs: 600_000 };

export type MemoSearch = { kind: "found"; tx: ChainTx } | { kind: "absent" } | { kind: "unknown"; why: string };

/**
 * How far a search has read, as of its last whole page: everything newer than `before`
 * (from the newest entry when the search began) holds no successful transaction carrying the
 * memo, except perhaps `unreadable`.
 */
export interface ScanState {
  /** The oldest entry read: the next page starts after it (undefined: from the newest). */
  before: string | undefined;
  /** Entries read so far. */
  read: number;
  /** The block time (seconds) of the oldest entry read that had one. */
  oldestBlockTime: number | null;
  /** An entry the node lists, that may carry the memo, but did not return: "absent" is then impossible. */
  unreadable: string | undefined;
}

export const freshScan = (): ScanState => ({
  before: undefined,
  read: 0,
  oldestBlockTime: null,
  unreadable: undefined,
});

/** A pass's answer, and why it stopped: at the end of the search, or before it (`state` says where to go on from). */
export interface ScanPass {
  search: MemoSearch;
  /** "limit": it read `maxPages` pages; "rpc": the RPC failed. Either way the rest is still to read. */
  stopped: "end" | "limit" | "rpc";
}

/**
 * Looks through the wallet's token account history, newest first, back to `sinceMs`, for a
 * successful transaction carrying `memo`. "absent" only when the history was read to a
 * point older than `sinceMs` (or to its beginning); otherwise "unknown". One pass, from the
 * newest entry.
 */
export async function findByMemo(
  chain: ChainPort,
  walletAta: string,
  memo: string,
  sinceMs: number,
  limits: ScanLimits = DEFAULT_SCAN,
): Promise<MemoSearch> {
  return (await scanHistory(chain, walletAta, memo, sinceMs, limits, freshScan())).search;
}

/**
 * One pass of the search from `state` (updated in place, one whole page at a time). With
 * `resumed`, `state.before` was saved by an earlier pass: an empty first page then means
 * the history ends there only if our RPC still has that entry (a node answers an empty page
 * for a `before` it does not know, e.g. one rolled back with its fork).
 */
export async function scanHistory(
  chain: ChainPort,
  walletAta: string,
  memo: string,
  sinceMs: number,
  limits: ScanLimits,
  state: ScanState,
  resumed = false,
): Promise<ScanPass> {
  const absent = (): ScanPass => ({
    stopped: "end",
    search: state.unreadable
      ? {
          kind: "unknown",
          why: `the wallet's history lists ${state.unreadable}, which may carry the memo, but the Solana RPC did not return it`,
        }
      : { kind: "absent" },
  });
  try {
    for (let page = 0; page < limits.maxPages; page++) {
      const before = state.before;
      const entries = await chain.signaturesFor(walletAta, { limit: limits.pageSize, ...(before ? { before } : {}) });
      if (resumed && page === 0 && entries.length === 0 && before && (await chain.transaction(before)) === null)
        return { stopped: "end", search: { kind: "unknown", why: lostCursor(before) } };
      const seen = await readPage(chain, entries, memo, sinceMs - limits.skewMs);
      state.unreadable ??= seen.unreadable;
      if (seen.found) return { stopped: "end", search: { kind: "found", tx: seen.found } };
      if (seen.old || entries.length < limits.pageSize) return absent();
      state.read += entries.length;
      state.before = entries[entries.length - 1]!.signature;
      state.oldestBlockTime = entries.findLast((e) => e.blockTime !== null)?.blockTime ?? state.oldestBlockTime;
    }
    return {
      stopped: "limit",
      search: {
        kind: "unknown",
        why: `the wallet's history since signing is longer than ${limits.pageSize * limits.maxPages} transactions`,
      },
    };
  } catch (e) {
    return {
      stopped: "rpc",
      search: { kind: "unknown", why: `the Solana RPC did not answer (${(e as Error).message.slice(0, 200)})` },
    };
  }
}

const lostCursor = (before: string) =>
  `the wallet's history was being read over several passes, but our Solana RPC no longer lists ${before}, where the last pass stopped: it is read again from the newest entry`;

/** One page: the transfer, if there; whether it reached entries older than `oldestMs`; the first unreadable candidate. */
async function readPage(
  chain: ChainPort,
  entries: SignatureEntry[],
  memo: string,
  oldestMs: number,
): Promise<{ found?: ChainTx; old?: true; unreadable?: string }> {
  let unreadable: string | undefined;
  for (const entry of entries) {
    if (entry.blockTime !== null && entry.blockTime * 1000 < oldestMs)
      return { old: true, ...(unreadable ? { unreadable } : {}) };
    if (entry.failed) continue;
    if (entry.memo === null || (typeof entry.memo === "string" && !entry.memo.includes(memo))) continue;
    const tx = await chain.transaction(entry.signature);
    if (tx === null) unreadable ??= entry.signature;
    else if (!tx.failed && carriesMemo(tx, memo)) return { found: tx };
  }
  return unreadable ? { unreadable } : {};
}
