/**
 * What a step decides, as a value: a move by the transitions table (an outcome, what the step
 * learnt, what it signed or reserves, how it is recorded), or a wait with nothing to record.
 * The one apply (held.ts) turns a move into a commit; steps never write the journal, and
 * nothing is thrown to pause a drive.
 */
import type { BudgetDecision, Usage } from "../budget/policy.js";
import type { PaidActionError } from "../errors.js";
import { wholePatch } from "../journal/rows.js";
import { freshAttempt } from "../model/intent.js";
import type { Intent, IntentIn, IntentPatch, IntentState, PaymentRecord, Step } from "../model/types.js";
import type { Outcome } from "../model/transitions.js";
import { failureOutcome } from "./verdicts.js";

/** A transcript entry of the call that drives the intent. */
export interface Note {
  step: string;
  data?: Record<string, unknown>;
}

/** A reservation taken with the move: decided over the usage in the journal's own transaction. */
export interface Reservation {
  amount: bigint;
  decide: (usage: Usage) => BudgetDecision;
  withTotal: boolean;
}

export interface Move {
  /** What happened: the transitions table (model/transitions.ts) moves the state by it, or by each in turn. */
  outcome: Outcome | readonly [Outcome, ...Outcome[]];
  /** The fields the step learnt, committed with the move (the state is the table's to say). */
  patch?: Omit<IntentPatch, "state">;
  /** A patch of the current proof's payment record, in the same transaction. */
  payment?: Partial<PaymentRecord>;
  /** The error the intent records with the move (none: cleared), and what the caller is told if it pauses. */
  error?: PaidActionError;
  /**
   * How the call's transcript records the move: by default as a stop (where it went, from
   * where, and why); null when the step has said it already; or the step's own entry.
   */
  note?: Note | null;
  /** Crash boundaries passed once the commit is durable (model/types.ts STEPS). */
  boundaries?: readonly Step[];
  /** The budget's reservation, when the table's row for the outcome reserves. */
  reserve?: Reservation;
  /** A proof signed for this move: its payment record lands in the same transaction, before it can leave. */
  signed?: PaymentRecord;
  /** What is committed instead when the journal refuses this move (the budget, a freeze); by default the state's failure. */
  otherwise?: (refusal: PaidActionError) => Move;
  /** The move that follows this one at once (a fresh attempt after a proof that can never land). */
  then?: Move;
}

/** Nothing to record: the call stops here with this answer (a person has yet to decide). */
export interface Wait {
  wait: PaidActionError;
}

/** What a step returns. */
export type StepResult = Move | Wait;

/** How the drive ended: at rest, or paused (or stopped) with the caller's answer. */
export interface DriveEnd {
  intent: Intent;
  /** The error the caller is answered with (the outcome is recorded, or there is none to record). */
  answer?: PaidActionError;
}

/** A refusal (a helper's, or the journal's) as a move: how it counts at `state` (verdicts.ts), recorded with it. */
export function refusal(state: IntentState, error: PaidActionError, patch?: Move["patch"]): Move {
  return { outcome: failureOutcome(state, error), error, ...(patch ? { patch } : {}) };
}

/**
 * A fresh attempt at an intent stopped with nothing spent (the table allows it from no other
 * state): a new idempotency key, and only its head — every field of the last attempt is
 * written as one never written (journal/rows.ts).
 */
export function restart(intent: IntentIn, note: Note | null = null): Move {
  return { outcome: "restart", patch: wholePatch(freshAttempt(intent)), note };
}
