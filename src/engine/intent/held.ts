/**
 * An intent as held by the one call that drives it: the lease it renews while it holds it,
 * and the only ways the intent changes under it — a compare-and-set commit (on the state this
 * call saw and on its lease), a move by the transitions table (model/transitions.ts), and a
 * settled outcome that may pause the call to be followed later. The steps (steps/) act through it.
 */
import { LEASE_MS, POLL_START_MS, type Ctx } from "../context.js";
import { PaidActionError, toStored } from "../errors.js";
import { cancelled, Paused } from "./failures.js";
import { LeaseLost } from "../journal/port.js";
import { budgetAfter, transition, type Outcome, type Transition } from "../model/transitions.js";
import type { Intent, IntentPatch, PaymentRecord, PayOptions } from "../model/types.js";
import type { FetchedResponse } from "../x402-http/http.js";

export class HeldIntent {
  private renewTimer: NodeJS.Timeout | undefined;
  /** A fetch: the unpaid answer the call already got before recording the intent (used once, by the probe step). */
  private probed: FetchedResponse | undefined;

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

  constructor(
    readonly c: Ctx,
    public intent: Intent,
    readonly owner: string,
    readonly opts: PayOptions,
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

  stopRenewing(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /**
   * Commits a patch: only if the intent is still in the state this call saw and held by it.
   * A patch of the current proof's payment record lands in the same transaction.
   */
  async commit(patch: IntentPatch, payment?: Partial<PaymentRecord>): Promise<Intent> {
    const now = this.c.now();
    const expect = { state: this.intent.state, owner: this.owner };
    const paymentPatch = payment && this.intent.quoteId ? { quoteId: this.intent.quoteId, patch: payment } : undefined;
    if (!(await this.c.journal.update(this.intent.intentId, patch, now, expect, paymentPatch)))
      throw new LeaseLost(this.intent.intentId);
    this.intent = { ...this.intent, ...patch, updatedAt: now };
    return this.intent;
  }

  /**
   * Moves the intent on by its state's row for `outcome` in the transitions table (the only
   * way its state changes), committing `extra` and the payment patch with it.
   */
  async advance(outcome: Outcome, extra: IntentPatch = {}, payment?: Partial<PaymentRecord>): Promise<Transition> {
    const tr = transition(this.intent.state, outcome);
    await this.commit({ ...this.effects(tr), ...extra }, payment);
    return tr;
  }

  /** What a transition writes besides `extra`: the state, the reservation's effect, and a follow-up when it needs one. */
  private effects(tr: Transition): IntentPatch {
    const budget =
      tr.reservation === "none" || tr.reservation === "hold"
        ? {}
        : { budgetState: budgetAfter(this.intent.budgetState, tr.reservation) };
    const follow = tr.follow ? { nextPollAt: this.c.now() + POLL_START_MS * 5, pollIntervalMs: POLL_START_MS * 5 } : {};
    return { state: tr.state, ...budget, ...follow };
  }

  /** Throws `cancelled` when the caller gave up; `what` says when (nothing was paid by then). */
  checkCancelled(what: string): void {
    if (this.opts.signal?.aborted) throw cancelled(this.intent, what);
  }

  /** Applies an outcome's transition (model/transitions.ts); throws the error when the intent must be followed later. */
  async settle(
    outcome: Outcome,
    error: PaidActionError | null,
    extra: IntentPatch = {},
    payment?: Partial<PaymentRecord>,
  ): Promise<Intent> {
    const from = this.intent;
    const tr = transition(from.state, outcome);
    const patch: IntentPatch = {
      state: tr.state,
      budgetState: budgetAfter(from.budgetState, tr.reservation),
      error: error ? toStored(error) : null,
      nextPollAt: tr.follow ? this.c.now() + POLL_START_MS * 5 : null,
      pollIntervalMs: tr.follow ? POLL_START_MS * 5 : from.pollIntervalMs,
      ...extra,
    };
    if (tr.human && !patch.attention)
      patch.attention = from.attention ?? error?.message ?? `needs a human after ${outcome}`;
    await this.commit(patch, payment);
    this.c.transcript(this.intent, tr.state === from.state ? "paused" : tr.state, {
      from: from.state,
      outcome,
      ...(error ? { code: error.code, message: error.message } : {}),
    });
    if (tr.human) this.c.d.log(`intent ${from.intentId} needs attention: ${this.intent.attention}`);
    if (tr.follow) {
      this.c.events.emit("scheduled");
      const e = error ?? new PaidActionError("outcome_unknown", `intent ${from.intentId} is ${tr.state}`, {}, true);
      throw new Paused(
        new PaidActionError(
          e.code,
          e.message,
          { ...e.context, intentId: from.intentId, intentKey: from.intentKey, state: tr.state },
          true,
        ),
      );
    }
    return this.intent;
  }

  /** A fresh attempt at the same intent under a new idempotency key: only after a stop with nothing spent. */
  async restart(): Promise<void> {
    const attempt = this.intent.attempt + 1;
    await this.advance("restart", {
      attempt,
      idemKey: `${this.intent.intentKey}.a${attempt}`,
      error: null,
      quoteId: null,
      quote: null,
      amount: null,
      payee: null,
      quoteExpiresAt: null,
      quotedAt: null,
      requirements: null,
      proof: null,
      approvalId: null,
      budgetState: "none",
      budgetAmount: null,
      budgetAt: null,
      payment: null,
      paymentTx: null,
      settlement: "none",
      attention: null,
      nextPollAt: null,
    });
  }
}
