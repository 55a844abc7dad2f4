/**
 * An intent as held by the one call that drives it: the lease it renews while it holds it,
 * and the one way the intent changes under it — apply, which turns a step's move into a
 * commit: the state and the reservation's effect by the transitions table
 * (model/transitions.ts), a follow-up when the intent must be driven on later, the error and a
 * human's note, the transcript; written compare-and-set (on the state this call saw and on
 * its lease), with the reservation or the signed proof's record in the same transaction
 * when the move carries one. The steps (steps/) decide; only apply writes.
 */
import { LEASE_MS, POLL_START_MS, type Ctx } from "../context.js";
import type { CancelStage } from "../error-contexts.js";
import { fromStored, paidError, toStored, type PaidActionError } from "../errors.js";
import { LeaseLost, PaymentsFrozen, QuoteTaken } from "../journal/port.js";
import { narrowIntent } from "../model/narrow.js";
import { passage, type Passage } from "../model/transitions.js";
import type { Intent, IntentPatch, PayOptions, ResumeOptions } from "../model/types.js";
import type { FetchedResponse } from "../x402-http/http.js";
import { budgetRefusal, cancelled } from "./failures.js";
import { frozenError } from "./freeze.js";
import { refusal, type DriveEnd, type Move } from "./moves.js";

/** How soon an intent left to be driven on later is looked at again. */
const FOLLOW_MS = POLL_START_MS * 5;

export class HeldIntent {
  private renewTimer: NodeJS.Timeout | undefined;
  /** A fetch: the unpaid answer the call already got before recording the intent (used once, by the probe step). */
  private probed: FetchedResponse | undefined;

  constructor(
    readonly c: Ctx,
    public intent: Intent,
    readonly owner: string,
    readonly opts: PayOptions,
    /** Set when a resume drives the intent (no caller waits): the chain is asked where the service gives no answer. */
    readonly resuming?: ResumeOptions,
  ) {
    this.renewTimer = setInterval(() => {
      Promise.resolve(this.c.journal.renew(this.intent.intentId, owner, this.c.now(), LEASE_MS)).then(
        (held) => {
          if (!held) this.stopRenewing();
        },
        () => undefined, // the store was briefly unreachable: the next renewal tries again
      );
    }, LEASE_MS / 3);
    this.renewTimer.unref();
  }

  /** Hands the probe step the answer the call already has, so the request is not sent twice. */
  withProbe(res: FetchedResponse | undefined): this {
    this.probed = res;
    return this;
  }

  takeProbe(): FetchedResponse | undefined {
    const res = this.probed;
    this.probed = undefined;
    return res;
  }

  stopRenewing(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /** Throws `cancelled` when the caller gave up; `stage` says when (nothing was paid by then). */
  checkCancelled(stage: CancelStage): void {
    if (this.opts.signal?.aborted) throw cancelled(this.intent, stage);
  }

  /**
   * Commits a move: only if the intent is still in the state this call saw and held by it
   * (else LeaseLost). The drive ends here when the move pauses it — the intent stays where
   * it was, to be followed later, and the caller is answered with the move's error — or goes
   * on: undefined. A move the journal refuses (the budget, a
   * freeze) is not written; what it says instead is applied in its place.
   */
  async apply(move: Move): Promise<DriveEnd | undefined> {
    const from = this.intent;
    const outcomes = typeof move.outcome === "string" ? ([move.outcome] as const) : move.outcome;
    const by = passage(from.state, from.budgetState, outcomes);
    if (by.reserves !== (move.reserve !== undefined))
      throw new Error(
        `a move by ${outcomes.join(", ")} from ${from.state} must carry a reservation exactly when it reserves`,
      );
    const now = this.c.now();
    const patch = this.commitOf(from, by, move, now);
    // The record as it will be: a move that leaves its state short of a proven field is a fault, found before it is written.
    const next = narrowIntent({ ...from, ...patch, updatedAt: now });
    const refused = await this.write(from, patch, move, now);
    if (refused) return this.apply(move.otherwise ? move.otherwise(refused) : refusal(from.state, refused));
    this.intent = next;
    this.record(from, next, by, move);
    if (by.pause) return { intent: next, answer: paused(next, move.error) };
    return move.then ? this.apply(move.then) : undefined;
  }

  /** What the commit writes: the passage's effects, then what the step learnt (which wins), then the state. */
  private commitOf(from: Intent, by: Passage, move: Move, now: number): IntentPatch {
    const patch: IntentPatch = {
      budgetState: by.budget,
      ...(move.reserve ? { budgetAmount: move.reserve.amount, budgetAt: now } : {}),
      error: move.error ? toStored(move.error) : null,
      nextPollAt: by.follow ? now + FOLLOW_MS : null,
      pollIntervalMs: by.follow ? FOLLOW_MS : from.pollIntervalMs,
      ...move.patch,
      state: by.state,
    };
    if (by.human && !patch.attention)
      patch.attention = from.attention ?? move.error?.message ?? `needs a human after ${by.outcome}`;
    return patch;
  }

  /**
   * Writes the commit, compare-and-set: with the reservation (decided in the journal's own
   * transaction), or the signed proof's record, or the proof's payment-record patch. The
   * refusal when the journal refused it (nothing written); throws LeaseLost when the intent
   * moved under this call.
   */
  private async write(from: Intent, patch: IntentPatch, move: Move, now: number): Promise<PaidActionError | undefined> {
    const { journal } = this.c;
    const expect = { state: from.state, owner: this.owner };
    try {
      if (move.reserve) {
        const { amount, decide, withTotal } = move.reserve;
        const decision = await journal.reserve(
          from.intentId,
          amount,
          now,
          decide,
          patch,
          withTotal,
          expect,
          move.signed,
        );
        if (decision.ok) return undefined;
        return budgetRefusal(decision, { quoteId: patch.quoteId ?? from.quoteId });
      }
      if (move.signed) {
        if (await journal.recordSigned(move.signed, { intentId: from.intentId, patch, now, expect })) return undefined;
      } else {
        const payment = move.payment && from.quoteId ? { quoteId: from.quoteId, patch: move.payment } : undefined;
        if (await journal.update(from.intentId, patch, now, expect, payment)) return undefined;
      }
    } catch (e) {
      // A freeze committed since the last look: the proof was not recorded, so it never leaves.
      if (e instanceof PaymentsFrozen) return frozenError(e.freeze);
      // Another purchase journaled a proof with this memo first: this one was not recorded either.
      if (e instanceof QuoteTaken) return quoteTaken(from, e.quoteId);
      throw e;
    }
    throw new LeaseLost(from.intentId);
  }

  /** Once the commit is durable: the transcript, the crash boundaries passed, a human told, listeners and the reconciler woken. */
  private record(from: Intent, next: Intent, by: Passage, move: Move): void {
    const { c } = this;
    if (move.note === undefined)
      c.transcript(next, by.state === from.state ? "paused" : by.state, {
        from: from.state,
        outcome: by.outcome,
        ...(move.error ? { code: move.error.code, message: move.error.message } : {}),
      });
    else if (move.note) c.transcript(next, move.note.step, move.note.data);
    if (by.human) c.d.log(`intent ${from.intentId} needs attention: ${next.attention}`);
    for (const boundary of move.boundaries ?? []) c.step(boundary, next);
    if (next.executionId !== null && next.executionId !== from.executionId) c.executionChanged(next, null);
    if (next.nextPollAt !== null) c.events.emit("scheduled");
  }
}

/**
 * The refusal for a proof whose memo another purchase's proof carries: for a fetch, the
 * resource's memo is in use (its seller gave it twice); for an action, the service handed
 * out one quote twice. Nothing was recorded or sent for this one.
 */
function quoteTaken(intent: Intent, quoteId: string): PaidActionError {
  if (intent.kind === "fetch")
    return paidError("payment_unsupported", {
      origin: intent.origin,
      problem: "memo_in_use",
      memo: quoteId.slice(0, 64),
    });
  return paidError("quote_drift", {
    problem: "quote",
    quoteId,
    detail: `quote ${quoteId.slice(0, 64)} already names another payment of this wallet`,
  });
}

/** What the caller is told when its drive pauses: the move's error, with where the purchase now stands. */
function paused(intent: Intent, error: PaidActionError | undefined): PaidActionError {
  const e =
    error ?? paidError("outcome_unknown", { problem: "stopped", intentId: intent.intentId, state: intent.state });
  // The same words, with where the purchase now stands; it is followed, so calling again may succeed.
  return fromStored(
    e.code,
    e.message,
    { ...e.context, intentId: intent.intentId, intentKey: intent.intentKey, state: intent.state },
    true,
  );
}
