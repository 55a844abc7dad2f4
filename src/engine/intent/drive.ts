/**
 * The flow of one intent, driven by one call at a time (it holds the intent's lease):
 *
 *   new -> quoted -> (approval) -> reserved -> signed -> paid -> executed
 *                                                 \-> unsettled -> paid | failed
 *
 * Every step is committed to the journal (compare-and-set on the state and the lease)
 * before the next network call that depends on it, and every state-changing request
 * carries the attempt's one idempotency key. What each failure does is decided by the pure
 * rules in model/transitions.ts; what the chain says about money, by chain/settlement.ts.
 */
import { formatDecimal } from "../../domain/money.js";
import { FINAL_STATUSES, type Execution } from "../../domain/wire.js";
import { checkQuote, quoteRefusal, settledTransaction } from "./answers.js";
import { ensureApproved } from "../approvals/records.js";
import { challengeFor } from "../payment/challenge.js";
import { LEASE_MS, POLL_START_MS, type Ctx } from "../context.js";
import { PaidActionError, toStored } from "../errors.js";
import { frozenError, refuseIfFrozen } from "./freeze.js";
import { LeaseLost, PaymentsFrozen } from "../journal/port.js";
import { callCeiling, evaluateBudget, quoteAmount } from "../budget/policy.js";
import { paidResourceUrl, serviceApi } from "../service/api.js";
import { establishFate } from "../chain/settlement.js";
import { STATES, type DriveStep } from "../model/states.js";
import {
  budgetAfter,
  MAX_AUTOMATIC_ATTEMPTS,
  transition,
  type Outcome,
  type Transition,
} from "../model/transitions.js";
import type { Intent, IntentPatch, PaymentRecord, PayOptions } from "../model/types.js";

const stored = toStored;

export function asError(e: unknown): PaidActionError {
  if (e instanceof PaidActionError) return e;
  if (e instanceof LeaseLost)
    return new PaidActionError(
      "busy",
      "another call is driving this purchase right now; call again in a few seconds with the same intentKey",
      { intentId: e.intentId },
      true,
    );
  if (e instanceof PaymentsFrozen) return frozenError(e.freeze);
  const code = (e as { code?: unknown })?.code;
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new PaidActionError(
      "busy",
      "the journal is busy with another process's write; retry in a moment with the same intentKey",
      {},
      true,
    );
  }
  return new PaidActionError(
    "service_error",
    `unexpected failure: ${(e as Error)?.message ?? String(e)}`.slice(0, 500),
  );
}

function cancelled(intent: Intent, what: string): PaidActionError {
  return new PaidActionError("cancelled", `the call was cancelled ${what}; nothing was paid`, {
    intentId: intent.intentId,
  });
}

/** Thrown once an outcome that must be followed later has been recorded: the caller just passes it on. */
export class Paused extends Error {
  constructor(readonly error: PaidActionError) {
    super(error.message);
  }
}

export class Drive {
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly c: Ctx,
    public intent: Intent,
    private readonly owner: string,
    private readonly opts: PayOptions,
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

  private checkCancelled(what: string): void {
    if (this.opts.signal?.aborted) throw cancelled(this.intent, what);
  }

  /** Applies an outcome's transition (model/transitions.ts); throws the error when the intent must be followed later. */
  private async settle(
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
      error: error ? stored(error) : null,
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
          await this.settle(this.outcomeOf(error), error);
        } catch (paused) {
          if (paused instanceof Paused) throw paused.error;
          throw asError(paused);
        }
      }
    }
    return this.intent;
  }

  /** The step that moves the intent on from each state (model/states.ts names it). */
  private readonly steps: Record<DriveStep, () => Promise<void>> = {
    quote: () => this.requestQuote(),
    decide: () => this.decide(),
    sign: () => this.sign(),
    send: () => this.send(),
    establish: () => this.establish(),
    execute: () => this.execute(),
  };

  /** How a thrown error counts at the current state. */
  private outcomeOf(error: PaidActionError): Outcome {
    if (error.code === "cancelled") return "cancelled";
    if (error.retryable) return "transient";
    return STATES[this.intent.state].onFailure ?? "refused";
  }

  private async requestQuote(): Promise<void> {
    this.checkCancelled("before the quote");
    const { c, intent } = this;
    const { ceiling } = callCeiling(c.config.limits, intent.action, intent.agentBudget ?? undefined);
    const res = await serviceApi(c.client).quote(
      { action: intent.action, input: intent.input, budget: { amount: formatDecimal(ceiling), currency: "USDC" } },
      { idempotencyKey: intent.idemKey, trace: c.trace(intent), signal: this.opts.signal },
    );
    c.transcript(intent, "quote", { status: res.status, body: res.ok ? res.body : res.error });
    if (!res.ok) throw quoteRefusal(res.status, res.error);
    const quote = res.body;
    const { amount, expiresAt } = checkQuote(quote, intent.action);
    await this.advance("quote_recorded", {
      quoteId: quote.quoteId,
      quote,
      amount,
      payee: quote.paymentRequirement.accepts?.[0]?.payTo ?? null,
      quoteExpiresAt: expiresAt,
      quotedAt: c.now(),
    });
    c.step("quote_recorded", this.intent);
    this.checkCancelled("after the quote");
  }

  /** Budget decision, approval, challenge and drift checks, then the reservation. Signs nothing. */
  private async decide(): Promise<void> {
    const { c } = this;
    const intent = this.intent;
    const amount = intent.amount!;
    if (c.now() >= intent.quoteExpiresAt!) {
      throw new PaidActionError(
        "quote_expired",
        `quote ${intent.quoteId} expired at ${new Date(intent.quoteExpiresAt!).toISOString()} before it was paid; nothing was signed — call again for a new quote`,
        { quoteId: intent.quoteId },
      );
    }
    const charge = {
      action: intent.action,
      amount,
      payee: intent.payee ?? undefined,
      agentBudget: intent.agentBudget ?? undefined,
    };
    const withTotal = c.config.limits.maxTotal !== undefined;
    const pre = evaluateBudget(c.config.limits, await c.journal.usage(c.now(), withTotal), charge);
    if (!pre.ok) throw new PaidActionError(pre.code, pre.message, { quoteId: intent.quoteId, ...pre.context });
    if (pre.needsApproval) await ensureApproved(c, this, this.opts);
    this.checkCancelled("before the payment was reserved");
    const requirements = await challengeFor(c, this.intent, this.opts.signal);
    this.checkCancelled("before the payment was reserved");
    const payee = this.intent.payee ?? requirements.payTo;
    const reserved = await c.journal.reserve(
      intent.intentId,
      amount,
      c.now(),
      (usage) => evaluateBudget(c.config.limits, usage, { ...charge, payee }),
      { state: transition(this.intent.state, "reserve").state, requirements, payee },
      withTotal,
      { state: this.intent.state, owner: this.owner },
    );
    if (!reserved.ok)
      throw new PaidActionError(reserved.code, reserved.message, { quoteId: intent.quoteId, ...reserved.context });
    this.intent = (await c.journal.intent(intent.intentId))!;
    c.transcript(this.intent, "reserved", { amount: formatDecimal(amount), payee, decision: "within limits" });
    c.step("reserved", this.intent);
  }

  private async sign(): Promise<void> {
    const { c } = this;
    const intent = this.intent;
    this.checkCancelled("before anything was signed");
    if (c.now() >= intent.quoteExpiresAt!)
      throw new PaidActionError(
        "quote_expired",
        `quote ${intent.quoteId} expired before it was signed; nothing was signed`,
        { quoteId: intent.quoteId },
      );
    // The lowest budget any call on this intent gave applies, even to a reservation made earlier.
    const { ceiling, by } = callCeiling(c.config.limits, intent.action, intent.agentBudget ?? undefined);
    if (intent.amount! > ceiling) {
      throw new PaidActionError(
        "budget_exceeded",
        `the price ${formatDecimal(intent.amount!)} USDC is above the ${by === "budget" ? "budget given for this call" : `limit ${by}`} of ${formatDecimal(ceiling)} USDC; nothing was signed`,
        { limit: by, amount: formatDecimal(intent.amount!), ceiling: formatDecimal(ceiling) },
      );
    }
    const requirements = intent.requirements!;
    const payer = await c.payer();
    // Delegate mode: a price the allowance left on chain cannot cover is refused unsigned.
    if (payer.owner) await c.allowance.admit(await c.chain(), payer, intent.amount!);
    // The lifetime is ours: the latest blockhash our own RPC gives, never the challenge's hint.
    const lifetime = await (await c.chain()).latestBlockhash().catch((e: unknown) => {
      throw new PaidActionError(
        "payment_failed",
        `could not get a blockhash to sign with from the Solana RPC (${(e as Error).message.slice(0, 200)}); nothing was signed`,
        {},
        true,
      );
    });
    // Last look before anything is signed (the journal looks again when it records the proof).
    await refuseIfFrozen(c.journal);
    const { proof } = await payer.createProof(
      requirements,
      lifetime,
      c.config.baseUrl ? paidResourceUrl(c.config.baseUrl) : undefined,
    );
    c.d.transcripts.addSecret(proof, { ephemeral: true });
    const now = c.now();
    const patch: IntentPatch = { state: transition(intent.state, "sign").state, proof };
    const recorded = await c.journal.recordSigned(
      {
        quoteId: intent.quoteId!,
        intentId: intent.intentId,
        attempt: intent.attempt,
        amount: intent.amount!,
        payee: requirements.payTo,
        payer: payer.address,
        mint: c.config.mint,
        source: payer.source,
        blockhash: lifetime.blockhash,
        lastValidHeight: lifetime.lastValidHeight,
        signedAt: now,
        sentAt: null,
        fate: "pending",
        tx: null,
        claimedTx: null,
        checkedAt: null,
        watch: false,
      },
      { intentId: intent.intentId, patch, now, expect: { state: intent.state, owner: this.owner } },
    );
    if (!recorded) throw new LeaseLost(intent.intentId);
    this.intent = { ...this.intent, ...patch, updatedAt: now };
    c.transcript(this.intent, "signed", {
      amount: formatDecimal(intent.amount!),
      payTo: requirements.payTo,
      wallet: payer.address,
      blockhash: lifetime.blockhash,
      lastValidHeight: lifetime.lastValidHeight.toString(),
    });
    c.step("signed", this.intent);
  }

  /** Hands the proof to the service (it may settle from here on: the money is at risk). */
  private async send(): Promise<void> {
    const { c, intent } = this;
    const sentAt = c.now();
    const res = await serviceApi(c.client).confirmPayment(
      { quoteId: intent.quoteId!, paymentProof: intent.proof! },
      { idempotencyKey: intent.idemKey, trace: c.trace(intent) },
    );
    c.step("confirm_sent", intent);
    c.transcript(intent, "confirm", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) {
      const p = res.body;
      if (p.quoteId !== intent.quoteId || quoteAmount(p.amount) !== intent.amount) {
        const e = new PaidActionError(
          "payment_invalid",
          `the service confirmed a payment that does not match the quote (quote ${p.quoteId.slice(0, 64)}, amount ${p.amount.slice(0, 40)}); the budget stays held until a human checks transaction ${p.transaction.slice(0, 100)}`,
          { transaction: p.transaction },
        );
        await this.settle(
          "settlement_mismatch",
          e,
          { payment: p, paymentTx: p.transaction.slice(0, 128), settlement: "claimed" },
          { sentAt },
        );
        return;
      }
      await this.settle(
        "settled",
        null,
        { payment: p, paymentTx: p.transaction, settlement: "claimed" },
        { sentAt, claimedTx: p.transaction },
      );
      c.step("confirm_recorded", this.intent);
      return;
    }
    if (res.status === 404 || res.status === 405 || res.status === 501) return this.execute(); // no confirm: the proof settles with the execution request
    if (res.error.code === "idempotency_in_progress")
      throw new PaidActionError(
        "outcome_unknown",
        "the payment is still being settled by the service; the engine will check again",
        {},
        true,
      );
    await this.proofRefused(res.status, res.error, sentAt);
  }

  /** The service did not settle a proof that left: the chain decides (now, in the same call). */
  private async proofRefused(
    status: number,
    error: { code: string; message: string; reason?: unknown },
    sentAt: number,
  ): Promise<void> {
    const reason = typeof error.reason === "string" ? `: ${error.reason.slice(0, 120)}` : "";
    const e = new PaidActionError(
      "outcome_unknown",
      `the service did not settle the payment (HTTP ${status} ${error.code}${reason}: ${error.message}); whether money moved is being established from the chain, and the budget stays reserved`,
      { serviceCode: error.code, reason: error.reason },
      true,
    );
    await this.advance("proof_refused", { error: stored(e) }, { sentAt });
    this.c.transcript(this.intent, "unsettled", { serviceCode: error.code, message: error.message });
  }

  private async establish(): Promise<void> {
    const { c, intent } = this;
    const refusal = intent.error;
    const fate = await establishFate(c, intent);
    c.transcript(intent, "fate", {
      fate: fate.kind,
      ...(fate.kind === "landed"
        ? { transaction: fate.tx.signature, problems: fate.problems }
        : fate.kind === "unknown"
          ? { why: fate.why }
          : {}),
    });
    if (fate.kind === "landed") {
      if (fate.problems.length > 0) {
        const e = new PaidActionError(
          "payment_failed",
          `a transfer for quote ${intent.quoteId} landed in ${fate.tx.signature} but is not what was priced (${fate.problems.join("; ")}); a human should check`,
          { transaction: fate.tx.signature },
        );
        await this.settle("settlement_mismatch", e, { paymentTx: fate.tx.signature, settlement: "mismatch" });
        return;
      }
      const note = `the service refused a payment that landed on chain in ${fate.tx.signature} (${refusal?.message ?? "no reason given"}); it was paid once and the purchase goes on`;
      await this.settle("landed", null, { paymentTx: fate.tx.signature, settlement: "verified", attention: note });
      return;
    }
    if (fate.kind === "unknown") {
      await this.settle(
        "fate_unknown",
        new PaidActionError(
          "outcome_unknown",
          `the service did not settle the payment and the chain cannot tell yet whether it landed (${fate.why}); the budget stays reserved and the engine keeps checking — call again with the same intentKey`,
          { quoteId: intent.quoteId },
          true,
        ),
      );
      return;
    }
    const serviceCode = refusal?.code === "outcome_unknown" ? refusal.context?.serviceCode : undefined;
    const e = new PaidActionError(
      "payment_invalid",
      `the service refused the payment (${serviceCode ?? "refused"}) and its transfer can never land (our Solana RPC's finalized block height is past the last one its blockhash is valid for, and the wallet's history holds no transfer for quote ${intent.quoteId}): nothing was charged`,
      { quoteId: intent.quoteId, serviceCode },
    );
    await this.settle("never_landed", e);
    if (intent.attempt < MAX_AUTOMATIC_ATTEMPTS) {
      c.transcript(this.intent, "retry", { decision: "the refused proof can never land: a fresh attempt" });
      await this.restart();
    }
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

  private async execute(): Promise<void> {
    const { c, intent } = this;
    const sentAt = c.now();
    const res = await serviceApi(c.client).createExecution(
      { action: intent.action, input: intent.input },
      { quoteId: intent.quoteId!, paymentProof: intent.proof, idempotencyKey: intent.idemKey, trace: c.trace(intent) },
    );
    c.step("execution_sent", intent);
    c.transcript(intent, "execution", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) return this.recordExecution(res.body, res.headers["payment-response"], sentAt);
    if (res.error.code === "idempotency_in_progress")
      throw new PaidActionError(
        "outcome_unknown",
        "the execution request is still running at the service; the engine will check again",
        {},
        true,
      );
    if (intent.state === "signed") return this.proofRefused(res.status, res.error, sentAt); // the proof travelled with this request
    if (res.status === 402) {
      await this.settle(
        "refused_after_payment",
        new PaidActionError(
          "payment_loop",
          `the service asked for payment again after quote ${intent.quoteId} was paid${intent.paymentTx ? ` (transaction ${intent.paymentTx})` : ""}; nothing more was paid — a human should check`,
          { quoteId: intent.quoteId, transaction: intent.paymentTx },
        ),
        { attention: "402 after payment" },
      );
      return;
    }
    if (res.error.code === "quote_consumed" && typeof res.error.executionId === "string") {
      // The quote already funded an execution: if it is ours, adopt it.
      const get = await serviceApi(c.client).getExecution(res.error.executionId, { trace: c.trace(intent) });
      if (get.ok && get.body.quoteId === intent.quoteId && get.body.action === intent.action)
        return this.recordExecution(get.body, undefined, sentAt);
    }
    await this.settle(
      "refused_after_payment",
      new PaidActionError(
        "execution_rejected",
        `the payment settled but the service refused the execution (HTTP ${res.status} ${res.error.code}): ${res.error.message}; a human should ask the service for the execution or a refund`,
        { serviceCode: res.error.code, quoteId: intent.quoteId, transaction: intent.paymentTx },
      ),
      { attention: `execution refused: ${res.error.code}` },
    );
  }

  private async recordExecution(e: Execution, paymentResponse: string | undefined, sentAt: number): Promise<void> {
    const { c, intent } = this;
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(e.executionId)) {
      await this.settle(
        "refused_after_payment",
        new PaidActionError("service_error", "the service returned an execution id with characters an id cannot have"),
        { attention: "bad execution id" },
      );
      return;
    }
    if (e.action !== intent.action || (e.quoteId !== undefined && e.quoteId !== intent.quoteId)) {
      await this.settle(
        "refused_after_payment",
        new PaidActionError(
          "service_error",
          `the service returned an execution for ${e.action.slice(0, 60)} / ${String(e.quoteId).slice(0, 64)}, not for this intent`,
        ),
        { attention: "execution mismatch" },
      );
      return;
    }
    const claimed = intent.paymentTx ?? settledTransaction(paymentResponse);
    // With /payments/confirm, the payment record was completed then; without it, now.
    const payment = intent.state === "signed" ? { sentAt, ...(claimed ? { claimedTx: claimed } : {}) } : undefined;
    await this.settle(
      "executed",
      null,
      {
        executionId: e.executionId,
        execution: e,
        execStatus: e.status,
        output: e.output ?? null,
        paymentTx: claimed ?? null,
        settlement: intent.settlement === "none" ? "claimed" : intent.settlement,
        attention: intent.attention,
        // Followed until the execution is final and its settlement is verified on chain.
        nextPollAt: c.now() + POLL_START_MS,
        pollIntervalMs: POLL_START_MS,
        // The lease ends with this commit: one fsync fewer per paid call.
        leaseOwner: null,
        leaseUntil: null,
      },
      payment,
    );
    c.step("execution_recorded", this.intent);
    c.executionChanged(this.intent, null);
    if (!FINAL_STATUSES.has(e.status) || this.intent.settlement !== "verified") c.events.emit("scheduled");
  }
}
