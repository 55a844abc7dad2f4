/**
 * The flow of one intent, driven by one call at a time (it holds the intent's lease):
 *
 *   new -> quoted -> (approval) -> reserved -> signed -> paid -> executed
 *                                                 \-> unsettled -> paid | failed
 *
 * The fast path (steps/price-and-sign.ts) records new -> quoted -> reserved -> signed in one
 * commit, and the proof then travels with the execution request: signed -> executed.
 *
 * The per-state table (model/states.ts) names the step that moves an intent on from each
 * state; each step is its own module under steps/, takes the intent as its state has it
 * (IntentIn) and returns what it decided; the one apply (held.ts) commits it, compare-and-set
 * on the state and the lease, before the next network call that depends on it. Every
 * state-changing request carries the attempt's one idempotency key. What each failure does is
 * decided by the pure rules in model/transitions.ts; what the chain says about money, by
 * chain/settlement.ts.
 */
import { STATES, type DriveStep, type DrivenBy, type DrivenState } from "../model/states.js";
import type { Intent, IntentAt, IntentIn, IntentKind } from "../model/types.js";
import { LeaseLost } from "../journal/port.js";
import { asError } from "./failures.js";
import { HeldIntent } from "./held.js";
import { refusal, type DriveEnd, type StepResult } from "./moves.js";
import { decide } from "./steps/decide.js";
import { deliver, undelivered } from "./steps/deliver.js";
import { probe } from "./steps/probe.js";
import { establish } from "./steps/establish.js";
import { execute } from "./steps/execute.js";
import { requestQuote } from "./steps/quote.js";
import { send } from "./steps/send.js";
import { sign } from "./steps/sign.js";

/** A step: takes every state the table has it drive, as that state has the intent. */
type StepFor<D extends DriveStep, K extends IntentKind> = (
  h: HeldIntent,
  intent: IntentIn<DrivenBy<D>, K>,
) => Promise<StepResult>;
type Steps<K extends IntentKind> = { [D in DriveStep]: StepFor<D, K> };

const ACTION_STEPS: Steps<"action"> = { quote: requestQuote, decide, sign, send, establish, execute };

/** An x402 resource: its price is its 402, its delivery the paid request itself. */
const FETCH_STEPS: Steps<"fetch"> = {
  quote: probe,
  decide,
  sign,
  send: deliver,
  establish,
  execute: undelivered,
};

/** Runs step `d` (the one the table names for the intent's state) on the intent. */
function run<D extends DriveStep, K extends IntentKind>(
  steps: Steps<K>,
  d: D,
  h: HeldIntent,
  intent: IntentIn<DrivenBy<D>, K>,
): Promise<StepResult> {
  return steps[d](h, intent);
}

/** Whether a step drives the intent on from its state (else it rests: a call is answered from it at once). */
function isDriven(intent: Intent): intent is IntentAt<DrivenState> {
  return STATES[intent.state].step !== null;
}

export class Drive extends HeldIntent {
  /** Drives the intent until it rests, must wait, or is paused to be followed later; every stop is recorded. */
  async run(): Promise<DriveEnd> {
    for (let guard = 0; guard < 24; guard++) {
      const intent = this.intent;
      if (!isDriven(intent)) return { intent };
      const decided = await this.decision(intent);
      if ("wait" in decided) return { intent: this.intent, answer: decided.wait };
      const end = await this.apply(decided);
      if (end) return end;
    }
    return { intent: this.intent };
  }

  /** What the intent's step decided; a refusal thrown on its way (a helper's, a cancel), as its state's failure. */
  private async decision(intent: IntentAt<DrivenState>): Promise<StepResult> {
    try {
      const d = STATES[intent.state].step;
      return await (intent.kind === "fetch" ? run(FETCH_STEPS, d, this, intent) : run(ACTION_STEPS, d, this, intent));
    } catch (e) {
      // Another driver moved it: this call has nothing to record.
      if (e instanceof LeaseLost) throw e;
      return refusal(intent.state, asError(e));
    }
  }
}
