/**
 * The flow of one intent, driven by one call at a time (it holds the intent's lease):
 *
 *   new -> quoted -> (approval) -> reserved -> signed -> paid -> executed
 *                                                 \-> unsettled -> paid | failed
 *
 * The fast path (steps/price-and-sign.ts) records new -> quoted -> reserved -> signed in one
 * commit, and the proof then travels with the execution request: signed -> executed.
 *
 * Every step is committed to the journal (compare-and-set on the state and the lease)
 * before the next network call that depends on it, and every state-changing request
 * carries the attempt's one idempotency key. What each failure does is decided by the pure
 * rules in model/transitions.ts; what the chain says about money, by chain/settlement.ts.
 * The per-state table (model/states.ts) names the step that moves an intent on from each
 * state; each step is its own module under steps/.
 */
import { STATES, type DriveStep } from "../model/states.js";
import type { Intent } from "../model/types.js";
import { LeaseLost } from "../journal/port.js";
import { asError, Paused } from "./failures.js";
import { HeldIntent } from "./held.js";
import { failureOutcome } from "./verdicts.js";
import { decide } from "./steps/decide.js";
import { deliver, undelivered } from "./steps/deliver.js";
import { probe } from "./steps/probe.js";
import { establish } from "./steps/establish.js";
import { execute } from "./steps/execute.js";
import { requestQuote } from "./steps/quote.js";
import { send } from "./steps/send.js";
import { sign } from "./steps/sign.js";

export class Drive extends HeldIntent {
  /** Drives the intent until it rests (or must wait); records every stop. */
  async run(): Promise<Intent> {
    for (let guard = 0; guard < 24; guard++) {
      const step = STATES[this.intent.state].step;
      if (step === null) return this.intent;
      try {
        await this.steps[step]();
      } catch (e) {
        if (e instanceof Paused) throw e.error;
        const error = asError(e);
        if (e instanceof LeaseLost || error.code === "approval_required") throw error;
        try {
          await this.settle(failureOutcome(this.intent.state, error), error);
        } catch (paused) {
          if (paused instanceof Paused) throw paused.error;
          throw asError(paused);
        }
      }
    }
    return this.intent;
  }

  /** The step that moves the intent on from each state (model/states.ts names it), for what the intent buys. */
  private get steps(): Record<DriveStep, () => Promise<void>> {
    return this.intent.kind === "fetch" ? this.fetchSteps : this.actionSteps;
  }

  private readonly actionSteps: Record<DriveStep, () => Promise<void>> = {
    quote: () => requestQuote(this),
    decide: () => decide(this),
    sign: () => sign(this),
    send: () => send(this),
    establish: () => establish(this),
    execute: () => execute(this),
  };

  /** An x402 resource: its price is its 402, its delivery the paid request itself. */
  private readonly fetchSteps: Record<DriveStep, () => Promise<void>> = {
    quote: () => probe(this),
    decide: () => decide(this),
    sign: () => sign(this),
    send: () => deliver(this),
    establish: () => establish(this),
    execute: () => undelivered(this),
  };
}
