/**
 * The state machine tests' own vocabulary: every state, outcome, budget state, effect and
 * fate (transitions-table.test.ts checks these lists against the types), the groups of states
 * the money invariants speak of, and every defined transition written out by hand — not
 * derived from the implementation's table — with the pairs left undefined.
 */
import {
  transition,
  type Outcome,
  type ReservationEffect,
  type Transition,
} from "../../src/engine/model/transitions.js";
import type { IntentState } from "../../src/engine/model/types.js";

export const STATES = [
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
export const OUTCOMES = [
  "quote_recorded",
  "approval_pending",
  "approval_used",
  "reserve",
  "sign",
  "restart",
  "landed_late",
  "refused",
  "transient",
  "cancelled",
  "proof_refused",
  "settled",
  "settlement_mismatch",
  "landed",
  "never_landed",
  "fate_unknown",
  "refused_after_payment",
  "unanswered",
  "executed",
] as const;
export const BUDGETS = ["none", "reserved", "spent", "released"] as const;
export const EFFECTS = ["none", "reserve", "hold", "release", "spend"] as const;
export const FATES = [undefined, "pending", "landed", "never"] as const;

/** A state that may lead to a new proof being signed (directly or by a fresh attempt). */
export const CAN_SIGN_AGAIN: readonly IntentState[] = [
  "new",
  "quoted",
  "awaiting_approval",
  "reserved",
  "refused",
  "failed",
];
/** The states in which a proof exists and may have left the process. */
export const PROOF_OUT: readonly IntentState[] = ["signed", "unsettled"];
export const BEFORE_RESERVATION: readonly IntentState[] = ["new", "quoted", "awaiting_approval"];

export type Row = [
  from: IntentState,
  outcome: Outcome,
  to: IntentState,
  reservation: ReservationEffect,
  follow: boolean,
  human: boolean,
];

/** Every defined transition, written out (not derived from the implementation's table). */
export const ROWS: Row[] = [
  // The way forward: every state change goes through the table.
  ["new", "quote_recorded", "quoted", "none", false, false],
  ["quoted", "approval_pending", "awaiting_approval", "none", false, false],
  ["awaiting_approval", "approval_pending", "awaiting_approval", "none", false, false],
  ["awaiting_approval", "approval_used", "quoted", "none", false, false],
  ["quoted", "approval_used", "quoted", "none", false, false],
  ["quoted", "reserve", "reserved", "reserve", false, false],
  ["awaiting_approval", "reserve", "reserved", "reserve", false, false],
  ["reserved", "sign", "signed", "hold", false, false],
  // A stop with nothing spent: a call may start a fresh attempt.
  ["refused", "restart", "new", "none", false, false],
  ["failed", "restart", "new", "none", false, false],
  // A payment the chain had shown could never land landed after all: spent, and a human's.
  ["refused", "landed_late", "attention", "spend", false, true],
  ["failed", "landed_late", "attention", "spend", false, true],
  ["attention", "landed_late", "attention", "spend", false, true],
  ["executed", "landed_late", "executed", "spend", false, true],
  // Nothing reserved, nothing signed: a stop costs nothing.
  ["new", "refused", "refused", "none", false, false],
  ["new", "transient", "failed", "none", false, false],
  ["new", "cancelled", "refused", "none", false, false],
  ["quoted", "refused", "refused", "none", false, false],
  ["quoted", "transient", "failed", "none", false, false],
  ["quoted", "cancelled", "refused", "none", false, false],
  ["awaiting_approval", "refused", "refused", "none", false, false],
  ["awaiting_approval", "transient", "failed", "none", false, false],
  ["awaiting_approval", "cancelled", "refused", "none", false, false],
  // Reserved, nothing signed: the reservation goes back.
  ["reserved", "refused", "failed", "release", false, false],
  ["reserved", "transient", "failed", "release", false, false],
  ["reserved", "cancelled", "failed", "release", false, false],
  // Signed: the proof may be out; everything stays held until settled or the chain speaks.
  ["signed", "transient", "signed", "hold", true, false],
  ["signed", "cancelled", "signed", "hold", true, false],
  ["signed", "proof_refused", "unsettled", "hold", true, false],
  ["signed", "settled", "paid", "spend", false, false],
  ["signed", "settlement_mismatch", "attention", "spend", false, true],
  ["signed", "executed", "executed", "spend", false, false],
  // No answer to the execution request, and a resume asked the chain.
  ["signed", "landed", "paid", "spend", false, false],
  ["signed", "never_landed", "failed", "release", false, false],
  // Unsettled: only the chain decides.
  ["unsettled", "transient", "unsettled", "hold", true, false],
  ["unsettled", "cancelled", "unsettled", "hold", true, false],
  ["unsettled", "fate_unknown", "unsettled", "hold", true, false],
  ["unsettled", "landed", "paid", "spend", false, true],
  ["unsettled", "never_landed", "failed", "release", false, false],
  ["unsettled", "settlement_mismatch", "attention", "spend", false, true],
  // Paid: spent; what is left is the execution.
  ["paid", "transient", "paid", "hold", true, false],
  ["paid", "cancelled", "paid", "hold", true, false],
  ["paid", "proof_refused", "attention", "hold", false, true],
  ["paid", "refused_after_payment", "attention", "hold", false, true],
  ["signed", "refused_after_payment", "attention", "hold", false, true],
  ["paid", "settlement_mismatch", "attention", "hold", false, true],
  ["paid", "unanswered", "paid", "hold", true, true],
  ["paid", "executed", "executed", "hold", false, false],
];

export const key = (s: IntentState, o: Outcome) => `${s} x ${o}`;
export const DEFINED = new Map(ROWS.map((r) => [key(r[0], r[1]), r]));
export const ALL_PAIRS = STATES.flatMap((s) => OUTCOMES.map((o) => [s, o] as [IntentState, Outcome]));
export const UNDEFINED_PAIRS = ALL_PAIRS.filter(([s, o]) => !DEFINED.has(key(s, o)));

/** What the implementation answers for every pair it accepts. */
export function actualRows(): Array<{ from: IntentState; outcome: Outcome; t: Transition }> {
  const rows: Array<{ from: IntentState; outcome: Outcome; t: Transition }> = [];
  for (const [from, outcome] of ALL_PAIRS) {
    let t: Transition | undefined;
    try {
      t = transition(from, outcome);
    } catch {
      continue;
    }
    rows.push({ from, outcome, t });
  }
  return rows;
}
