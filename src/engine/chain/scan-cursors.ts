/**
 * Where a search of a long history stands between passes, for every rail: a bounded map in
 * memory, from who searches (a proof's fate, the watch on a released payment) and for what
 * (an account and a payment's reference) to where the search stopped. What a saved state
 * holds, and when a pass may go on from one, is the rail's to say (Solana: a `before`
 * signature cursor, saved only once the proof can no longer land: rails/solana/memo-resume.ts;
 * EVM: a block range of log reads, when the RPC bounds one). Losing a cursor (a restart,
 * the bound) only costs passes, never soundness: the search starts again from the newest
 * entry. Past `capacity`, the oldest saved search is forgotten.
 */

/** The saved searches of one rail, in memory. */
export class ScanCursors<S> {
  private readonly saved = new Map<string, S>();

  constructor(private readonly capacity = 1_000) {}

  get size(): number {
    return this.saved.size;
  }

  get(key: string): S | undefined {
    return this.saved.get(key);
  }

  save(key: string, scan: S): void {
    this.saved.delete(key);
    this.saved.set(key, scan);
    if (this.saved.size > this.capacity) this.saved.delete(this.saved.keys().next().value!);
  }

  drop(key: string): void {
    this.saved.delete(key);
  }
}
