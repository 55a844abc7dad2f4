/**
 * The freeze: a person's stop on new payments, for every server sharing the journal.
 * Stopping is always safe, so anyone may freeze; only a person at a terminal lifts it.
 * While frozen no call starts a purchase and no proof is signed — the engine looks before
 * it builds one, and the journal refuses to record one (JournalStore.recordSigned) — but a
 * purchase whose proof already left is still followed: its money is at risk either way, and
 * only the chain says whether it moved.
 */
import { paidError, type PaidActionError } from "../errors.js";
import type { Freeze, JournalStore } from "../journal/port.js";
import type { Intent } from "../model/types.js";

/**
 * The refusal while frozen. It addresses the person and says where the freeze is lifted,
 * but holds no command line: an agent with a shell must not be handed the means to lift it.
 */
export function frozenError(f: Freeze): PaidActionError {
  return paidError("frozen", { reason: f.reason, since: new Date(f.since).toISOString(), frozenBy: f.by });
}

/** Throws `frozen` when payments are frozen. */
export async function refuseIfFrozen(journal: JournalStore): Promise<void> {
  const f = await journal.frozen();
  if (f) throw frozenError(f);
}

/**
 * Whether driving this purchase (none yet: a new one) could sign a new proof, so that a
 * freeze stops it. A proof is kept from signing until a fresh attempt, so the current
 * attempt has signed nothing exactly when it holds none. A purchase holding one is still
 * answered and followed (a fresh attempt after a proof that can never land is stopped at
 * the signature instead).
 */
export function stoppedByFreeze(intent: Pick<Intent, "proof"> | undefined): boolean {
  return intent === undefined || intent.proof === null;
}

/** A freeze as the console and other readers show it: the time as ISO 8601; null when not frozen. */
export function freezeView(f: Freeze | undefined): { reason: string | null; since: string; by: string } | null {
  return f ? { reason: f.reason, since: new Date(f.since).toISOString(), by: f.by } : null;
}
