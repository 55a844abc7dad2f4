/**
 * The Solana rail's memo searches that go on over passes, so a busy wallet's proof does not
 * stay "unknown" forever. One pass reads at most `pageSize × maxPages` entries of the wallet's history,
 * newest first; a wallet with more than that since signing (a fleet sharing it, a proof
 * looked at hours later) would stop every pass at the same depth below a top that keeps
 * moving. Instead a pass may save where it stopped (the oldest entry it read, as a `before`
 * cursor) and the next pass reads on from there.
 *
 * Why that is sound. A search that spans passes P1…Pn answers what one search begun at P1
 * would: "found" if a transfer carrying the memo is in the history since signing, "absent"
 * only if none is. Entries older than the cursor were there, in this order, when P1 began;
 * what it could miss is a transfer that appears *newer* than where P1 began reading,
 * after P1 read the top. That cannot happen once the proof can no longer land: a cursor is
 * saved only by a pass whose finalized height, read BEFORE its history, is past the
 * proof's last valid height (known, not null; rules.ts mayResumeScan), the same order
 * proofFate and the watch rely on. Nothing signed with that blockhash lands after that
 * read, so every transfer carrying the memo is already in a finalized block, older than
 * the top P1 read, and so either among what P1…Pk read or older than the cursor. A pass
 * without that condition reads from the newest entry and saves nothing (a cursor saved
 * earlier is left alone). The verdict is never weaker than a single full scan's:
 * - an entry the node listed but did not return (`unreadable`) is carried in the saved
 *   state, so a later pass cannot say "absent" past it;
 * - the height a finished search reports is the one read before P1, so a rule that needs
 *   the height past some mark (the watch's margin) judges the scan as of its start;
 * - an empty page after a saved cursor ends the history only if our RPC still has the
 *   cursor's transaction (a node answers an empty page for a `before` it does not know, such
 *   as one rolled back with its fork); otherwise the state is dropped and the next pass
 *   starts from the newest entry.
 * A search that ends "unknown" (an unreadable entry, a lost cursor) is dropped like one that
 * ends "found" or "absent": the next pass starts from the newest entry and asks again.
 * Any history is then covered within ⌈length / (pageSize × maxPages)⌉ passes after the
 * height passes (an RPC failure keeps the pages read before it).
 *
 * Where the cursor lives: in memory, in the rail (chain/scan-cursors.ts keeps it), keyed by
 * who searches (a proof's fate, the watch on a released payment — each from its own start), the
 * wallet's token account and the memo; dropped when the search ends either way. After a
 * restart a search starts again from the newest entry and goes on over passes as before;
 * losing a cursor only costs passes, never soundness, which is why no journal column (and
 * no migration in two stores) is needed. The map is bounded: past `capacity`, the oldest
 * saved search is forgotten.
 */
import { ScanCursors } from "../../chain/scan-cursors.js";
import type { ChainPort } from "./chain.js";
import { DEFAULT_SCAN, freshScan, scanHistory, type MemoSearch, type ScanLimits, type ScanState } from "./memo-scan.js";
import { mayResumeScan } from "./rules.js";

/** Who is searching: a proof's fate, or the watch on a payment found unable to land. */
export type ScanScope = "fate" | "watch";

/** Where a search spanning passes stands. */
export interface SavedScan extends ScanState {
  /** Our finalized height read before the pass that began the search (past the last valid height). */
  startHeight: bigint;
  /** Passes made so far. */
  passes: number;
}

/** The Solana rail's saved memo searches (chain/scan-cursors.ts keeps them). */
export class MemoScans extends ScanCursors<SavedScan> {}

export const scanKey = (scope: ScanScope, walletAta: string, memo: string) => `${scope} ${walletAta} ${memo}`;

export interface ScanRequest {
  scope: ScanScope;
  walletAta: string;
  memo: string;
  sinceMs: number;
  /** The proof's last valid height (null: our RPC never vouched for its blockhash). */
  lastValidHeight: bigint | null;
  /** Our finalized height, read before this pass's history. */
  finalizedHeight: bigint | undefined;
}

/** The search's answer, and our finalized height read before the history it speaks for. */
export interface ResumedSearch {
  search: MemoSearch;
  finalizedHeight: bigint | undefined;
}

/**
 * One pass of a memo search that may go on from where an earlier pass stopped (see the
 * module comment for when). Without `scans`, exactly one pass from the newest entry.
 */
export async function findByMemoResuming(
  chain: ChainPort,
  scans: MemoScans | undefined,
  r: ScanRequest,
  limits: ScanLimits = DEFAULT_SCAN,
): Promise<ResumedSearch> {
  const key = scanKey(r.scope, r.walletAta, r.memo);
  const resumable = scans !== undefined && mayResumeScan(r.lastValidHeight, r.finalizedHeight);
  const saved = resumable ? scans.get(key) : undefined;
  const state: ScanState = saved ? { ...saved } : freshScan();
  const pass = await scanHistory(chain, r.walletAta, r.memo, r.sinceMs, limits, state, saved !== undefined);
  if (pass.stopped === "end") {
    scans?.drop(key);
    return { search: pass.search, finalizedHeight: saved ? saved.startHeight : r.finalizedHeight };
  }
  const why = pass.search.kind === "unknown" ? pass.search.why : "";
  if (!resumable || state.read === 0) {
    const hint =
      pass.stopped === "limit" && r.lastValidHeight !== null
        ? `; it is read over several passes once our Solana RPC's finalized height is past ${r.lastValidHeight}`
        : "";
    return { search: { kind: "unknown", why: why + hint }, finalizedHeight: r.finalizedHeight };
  }
  const next: SavedScan = {
    ...state,
    startHeight: saved?.startHeight ?? r.finalizedHeight!,
    passes: (saved?.passes ?? 0) + 1,
  };
  scans.save(key, next);
  const progress = inProgress(next, r.sinceMs - limits.skewMs);
  return {
    search: { kind: "unknown", why: pass.stopped === "limit" ? progress : `${why}; ${progress}` },
    finalizedHeight: r.finalizedHeight,
  };
}

/** For the person reading `attention`: how far a search spanning passes has read. */
function inProgress(s: SavedScan, targetMs: number): string {
  const reached = s.oldestBlockTime === null ? "" : `, back to ${new Date(s.oldestBlockTime * 1000).toISOString()}`;
  return (
    `the wallet's history since signing is long and is being read over several passes: ` +
    `${s.read} transactions read in ${s.passes} pass${s.passes === 1 ? "" : "es"}${reached}, ` +
    `of the history back to ${new Date(targetMs).toISOString()}; the next pass goes on from there`
  );
}
