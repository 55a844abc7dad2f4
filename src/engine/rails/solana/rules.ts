/**
 * The Solana rail's rules: when a proof that left the process has landed, can never land, or
 * nobody can tell yet — and how long a payment found unable to land is still watched — as
 * pure functions of the facts our own Solana RPC established. No I/O; table-tested.
 *
 * The transaction's lifetime is ours: it is signed with a blockhash our RPC gave, recorded
 * with the last block height at which it can land (`lastValidHeight`, from our RPC too)
 * before the proof leaves. "Can never land" follows only from our RPC's finalized block
 * height being past that height, with the history read afterwards holding no transfer with
 * the memo. A blockhash our RPC never vouched for (a service may name one that is not valid
 * *yet*) gives no such fact: its proof's fate stays unknown until the memo is seen.
 */

/** How many blocks a blockhash stays usable after the block it names (Solana's MAX_PROCESSING_AGE). */
export const BLOCKHASH_LIFETIME_BLOCKS = 150n;

/** A payment found unable to land is watched until our finalized height is this far past its last valid height. */
export const WATCH_MARGIN_BLOCKS = 150n;

/**
 * A payment found unable to land whose blockhash our RPC never vouched for (journaled before
 * heights were recorded) is watched this long after it was signed.
 */
export const UNVOUCHED_WATCH_MS = 24 * 3_600_000;

/** What the wallet's history since signing showed about a transfer carrying the memo. */
export type MemoSeen = "found" | "absent" | "unknown";

export interface FateFacts {
  /**
   * The last block height at which the proof's transaction can land, as our RPC gave it
   * (null: our RPC never vouched for the proof's blockhash).
   */
  lastValidHeight: bigint | null;
  /** Our RPC's finalized block height, read before the history; undefined when it did not answer. */
  finalizedHeight: bigint | undefined;
  /** The history, read after the height. */
  memo: MemoSeen;
  /** Why the history could not be read, when it could not. */
  memoWhy?: string;
}

export type FateRuling = { kind: "landed" } | { kind: "never" } | { kind: "unknown"; why: string };

/** The landed / never / unknown rule. */
export function fateRuling(f: FateFacts): FateRuling {
  if (f.memo === "found") return { kind: "landed" };
  if (f.memo === "unknown")
    return { kind: "unknown", why: f.memoWhy ?? "the wallet's history since signing could not be read to the end" };
  if (f.lastValidHeight === null) {
    return {
      kind: "unknown",
      why: "our Solana RPC never vouched for the blockhash the transfer was signed with, so nothing says when it stops being able to land",
    };
  }
  if (f.finalizedHeight === undefined)
    return { kind: "unknown", why: "our Solana RPC did not say its finalized block height" };
  if (f.finalizedHeight <= f.lastValidHeight) {
    return {
      kind: "unknown",
      why: `its blockhash is valid up to block height ${f.lastValidHeight} and our Solana RPC is at ${f.finalizedHeight}, so the transfer may still land`,
    };
  }
  return { kind: "never" };
}

/**
 * May a memo search go on from where an earlier pass stopped (and save where this one
 * stops)? Only when our finalized height, read before this pass, is past the proof's last
 * valid height: nothing carrying the memo can land any more, so nothing can appear newer
 * than where the scan began, and the history older than where it stopped no longer changes
 * (memo-resume.ts).
 */
export function mayResumeScan(lastValidHeight: bigint | null, finalizedHeight: bigint | undefined): boolean {
  return lastValidHeight !== null && finalizedHeight !== undefined && finalizedHeight > lastValidHeight;
}

/**
 * The last valid height our RPC vouches for when it calls a blockhash valid at `finalized`
 * with its finalized height read afterwards: the blockhash is at most
 * BLOCKHASH_LIFETIME_BLOCKS old there, so its last valid height is at most this (an upper
 * bound, which only makes "never" come later).
 */
export function vouchedLastValidHeight(
  validAtFinalized: boolean | undefined,
  heightAfter: bigint | undefined,
): bigint | null {
  return validAtFinalized === true && heightAfter !== undefined ? heightAfter + BLOCKHASH_LIFETIME_BLOCKS : null;
}

export interface WatchFacts extends FateFacts {
  signedAt: number;
  now: number;
}

/** For a payment found unable to land: it landed after all, keep watching, or done watching. */
export type WatchRuling = "landed" | "watch" | "done";

export function watchRuling(f: WatchFacts): WatchRuling {
  if (f.memo === "found") return "landed";
  if (f.lastValidHeight === null) return f.now - f.signedAt > UNVOUCHED_WATCH_MS ? "done" : "watch";
  if (
    f.memo === "absent" &&
    f.finalizedHeight !== undefined &&
    f.finalizedHeight > f.lastValidHeight + WATCH_MARGIN_BLOCKS
  )
    return "done";
  return "watch";
}
