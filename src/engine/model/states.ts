/**
 * The intent's states, one row each: what drives it on, whether it is still driven, what an
 * unexpected failure there counts as, and where its money is. Every other list of states is
 * derived from this table, and the table is checked by the compiler: a state added to
 * INTENT_STATES does not compile until its row says what it does.
 */
import type { Outcome } from "./transitions.js";

export const INTENT_STATES = [
  "new",
  "quoted",
  "awaiting_approval",
  "reserved",
  "signed",
  "unsettled",
  "paid",
  "executed",
  "refused",
  "failed",
  "attention",
] as const;
export type IntentState = (typeof INTENT_STATES)[number];

/** The step of the drive (intent/drive.ts; each one in intent/steps/) that moves an intent on from a state. */
export type DriveStep = "quote" | "decide" | "sign" | "send" | "establish" | "execute";

/** Where an intent's money is, in a state. */
export type Money =
  /** Nothing was spent: no proof was signed, or the one signed can never land. */
  | "none"
  /** A proof may have left and nobody knows yet whether it moved money. */
  | "in_flight"
  /** It counts as spent (settled, seen on chain, or held for a human). */
  | "settled";

export interface StateRow {
  meaning: string;
  /** The step that drives the intent on from here; null: it rests (a call is answered from it at once). */
  step: DriveStep | null;
  /** Resumed by every server (at start-up, and by the reconciler's sweep) when nobody drives it. */
  unfinished: boolean;
  /** What an unexpected failure that is not worth retrying counts as here (one worth retrying is `transient`). */
  onFailure: Outcome | null;
  money: Money;
  /** A new call on the intent may start a fresh attempt from here (when its proof, if any, can never land). */
  restartable: boolean;
}

/** A row; its step stays a literal in the table's type, so the steps' types can follow it (DrivenBy). */
const row = <D extends DriveStep | null>(
  meaning: string,
  step: D,
  unfinished: boolean,
  onFailure: Outcome | null,
  money: Money,
  restartable = false,
): StateRow & { step: D } => ({
  meaning,
  step,
  unfinished,
  onFailure,
  money,
  restartable,
});

export const STATES = {
  new: row("recorded, nothing sent yet", "quote", true, "refused", "none"),
  quoted: row("quote recorded", "decide", true, "refused", "none"),
  // Waits for a person: driven on when a call comes back with the approvalId, never resumed alone.
  awaiting_approval: row("a person must approve before anything is signed", "decide", false, "refused", "none"),
  reserved: row("budget reserved, challenge checked; nothing signed yet", "sign", true, "refused", "none"),
  // After a proof left, an unexpected answer means nobody knows whether money moved.
  signed: row(
    "proof stored: from now on it may leave the process, so the money is at risk",
    "send",
    true,
    "proof_refused",
    "in_flight",
  ),
  unsettled: row(
    "the service did not settle a proof that left: the chain decides its fate",
    "establish",
    true,
    "transient",
    "in_flight",
  ),
  paid: row(
    "settlement established (the service's word, checked on chain later) or seen on chain",
    "execute",
    true,
    "refused_after_payment",
    "settled",
  ),
  executed: row("execution id recorded; the reconciler follows it", null, false, null, "settled"),
  refused: row("stopped before anything was reserved: nothing spent", null, false, null, "none", true),
  failed: row(
    "stopped with nothing spent: before signing, or the proof can never land",
    null,
    false,
    null,
    "none",
    true,
  ),
  attention: row("inconsistent: a human should look; the budget stays held", null, false, null, "settled"),
} satisfies Record<IntentState, StateRow>;

/** The states the table has `step` drive on: a step written for them must take each (intent/drive.ts). */
export type DrivenBy<D extends DriveStep> = {
  [S in IntentState]: (typeof STATES)[S]["step"] extends D ? S : never;
}[IntentState];

/** The states a step drives on (the others rest). */
export type DrivenState = DrivenBy<DriveStep>;

const where = (test: (r: StateRow) => boolean): readonly IntentState[] => INTENT_STATES.filter((s) => test(STATES[s]));

/** States a call or the reconciler still drives. */
export const UNFINISHED_STATES = where((r) => r.unfinished);

/** The states a caller can be answered from at once (nothing left to drive now). */
export function resting(state: IntentState): boolean {
  return STATES[state].step === null;
}
