/**
 * The one check that turns a flat intent record into an Intent: its state is one of ours,
 * its kind too, and it holds every field its state's phases prove (model/intent.ts). The
 * journal narrows every row it reads through it (journal/rows.ts), and the drive every
 * intent it is about to commit (intent/held.ts), so a record missing what its state requires
 * is a fault — a corrupt journal, or a step that forgot a field — never silently accepted.
 */
import { INTENT_STATES } from "./states.js";
import { PHASES, provenThrough, type Intent, type IntentRecord } from "./intent.js";

/** A record whose state requires a field it does not have: the journal is corrupt. */
export class CorruptIntent extends Error {
  constructor(
    readonly intentId: string,
    readonly state: string,
    readonly field: string,
  ) {
    super(
      `intent ${intentId} is in state ${state} without ${field}, which that state requires: the journal is corrupt and a human should look`,
    );
    this.name = "CorruptIntent";
  }
}

const KINDS: ReadonlySet<unknown> = new Set(["action", "fetch"]);
const STATES: ReadonlySet<unknown> = new Set(INTENT_STATES);

const absent = (v: unknown) => v === null || v === undefined;

/**
 * The field `r` lacks for the first phase its state allows, or undefined when it has reached
 * one of them (the furthest it has reached wins; a state reached from several phases needs one).
 */
export function lacking(r: IntentRecord): string | undefined {
  if (!STATES.has(r.state)) return "a known state";
  if (!KINDS.has(r.kind)) return "a known kind";
  const phases = PHASES[r.state];
  let first: string | undefined;
  for (let i = phases.length - 1; i >= 0; i--) {
    const missing = provenThrough(r.kind, phases[i]!).find((f) => absent(r[f]));
    if (missing === undefined) return undefined;
    first = missing;
  }
  return first;
}

/** The record as an Intent, once it holds what its state requires; throws CorruptIntent when it does not. */
export function narrowIntent(r: IntentRecord): Intent {
  const missing = lacking(r);
  if (missing !== undefined) throw new CorruptIntent(r.intentId, String(r.state), missing);
  // `lacking` has checked, field by field, what Intent's member for this state and kind
  // declares non-null (both read PHASES and PHASE_FIELDS): the compiler cannot follow a
  // runtime loop over a table, so it is told here, once.
  return r as Intent;
}
