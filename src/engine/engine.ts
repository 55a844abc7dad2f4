/**
 * The paid-call engine: one agent intent becomes at most one paid execution.
 *
 * This is the engine's surface — pay, quote, approve, resume, and the reads — over the
 * flow (intent/drive.ts), the rules (model/transitions.ts, budget/policy.ts) and the chain
 * (chain/settlement.ts).
 * At most one call drives an intent at a time: in this process a second call on the same
 * intent waits for the first and gets the same outcome; across processes the intent's lease
 * (renewed while held, every state change compare-and-set) does the same.
 */
import { EventEmitter } from "node:events";
import { FINAL_STATUSES, type Execution, type ExecutionStatus } from "../domain/wire.js";
import { AllowanceGate } from "./payment/allowance.js";
import { approvalReview, pendingReviews, type ApprovalReview } from "./approvals/review.js";
import { approvalWithInput, approve, decline, type DecidedIn } from "./approvals/records.js";
import type { ChainPort } from "./chain/chain.js";
import { describeIssues, unknownPerActionKeys, type Config, type ConfigIssue } from "./config/config.js";
import { LEASE_MS, makeTrace, makeTranscript, type Ctx, type EngineDeps } from "./context.js";
import { PaidActionError } from "./errors.js";
import { refuseIfFrozen, stoppedByFreeze } from "./intent/freeze.js";
import { fingerprint, validateRequest } from "./intent/input.js";
import { IntentKeyTaken } from "./journal/port.js";
import { executionPatch, listExecutions, paidCallOf, spending, view } from "./read/executions.js";
import { Drive } from "./intent/drive.js";
import { asError } from "./intent/failures.js";
import type { Payer } from "./payment/payer.js";
import { evaluateBudget } from "./budget/policy.js";
import { quoteOnly } from "./intent/quote-only.js";
import { watchReleased, type WatchPass } from "./chain/released-watch.js";
import { serviceApi } from "./service/api.js";
import { checkRefund, checkSettlement } from "./chain/settlement.js";
import { STATES } from "./model/states.js";
import { restartable, resting } from "./model/transitions.js";
import { Turns } from "./intent/turns.js";
import type {
  ExecutionEvent,
  ExecutionView,
  Intent,
  IntentPatch,
  PaidCall,
  PayOptions,
  PayRequest,
} from "./model/types.js";

export type { EngineDeps } from "./context.js";
export { STEPS, type Step } from "./model/types.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** What a resumed intent may end with that is no news for the log. */
const QUIET_ON_RESUME = new Set([
  "approval_required",
  "budget_exceeded",
  "action_not_allowed",
  "quote_expired",
  "cancelled",
  "frozen",
]);

/** Errors after which a call may wait a little and look again: the outcome is being settled. */
const WAITABLE = new Set(["outcome_unknown", "busy"]);

export class Engine extends EventEmitter {
  private readonly config: Config | undefined;
  private readonly configIssues: ConfigIssue[] | undefined;
  private payerPromise: Promise<Payer> | undefined;
  private chainPromise: Promise<ChainPort> | undefined;
  private ataPromise: Promise<{ wallet: string; ata: string }> | undefined;
  /** Intents a call of this process is driving now, with that call's outcome. */
  private readonly driving = new Map<string, Promise<PaidCall>>();
  /** Finding or recording an intent: one call at a time per intent key in this process. */
  private readonly turns = new Turns();
  private ctxCache: Ctx | undefined;
  /** perAction keys that name no action of the service's catalog (once the catalog is known). */
  private catalogIssues: ConfigIssue[] = [];

  constructor(private readonly d: EngineDeps) {
    super();
    if ("issues" in d.config) this.configIssues = d.config.issues;
    else this.config = d.config;
  }

  get service(): string {
    return this.config?.serviceId ?? this.config?.baseUrl ?? "unconfigured";
  }

  /**
   * Tells the engine the service's catalog: a perAction limit naming no action of it (a
   * misspelt key caps nothing) makes every paying operation fail closed, naming the key.
   */
  useCatalog(actionNames: readonly string[]): ConfigIssue[] {
    this.catalogIssues =
      this.config && actionNames.length > 0
        ? unknownPerActionKeys(this.config.limits.perAction, actionNames, this.config.configFile)
        : [];
    return this.catalogIssues;
  }

  /** For paying and quoting: fails closed on a config issue, catalog issues included. */
  private payingCtx(): Ctx {
    if (this.catalogIssues.length > 0 && !this.configIssues) {
      throw new PaidActionError(
        "config_invalid",
        `the configuration is invalid, so nothing will be paid: ${describeIssues(this.catalogIssues)}`,
        { issues: this.catalogIssues },
      );
    }
    return this.ctx();
  }

  /** Fails closed: a broken config refuses every operation that talks to the service, naming each key. */
  private ctx(): Ctx {
    if (!this.config || !this.d.client) {
      throw new PaidActionError(
        "config_invalid",
        `the configuration is invalid, so nothing will be paid: ${describeIssues(this.configIssues ?? [])}`,
        { issues: this.configIssues ?? [] },
      );
    }
    const config = this.config;
    const client = this.d.client;
    return (this.ctxCache ??= {
      d: this.d,
      config,
      client,
      journal: this.d.journal,
      now: this.d.now,
      payer: () =>
        (this.payerPromise ??= this.d.payer().catch((e: unknown) => {
          this.payerPromise = undefined; // a failed load is retried on the next call
          throw e;
        })),
      chain: () =>
        (this.chainPromise ??= this.d.chain().catch((e: unknown) => {
          this.chainPromise = undefined;
          throw e;
        })),
      walletAta: () =>
        (this.ataPromise ??= (async () => {
          const payer = await this.ctx().payer();
          return { wallet: payer.address, ata: payer.source };
        })().catch((e: unknown) => {
          this.ataPromise = undefined;
          throw e;
        })),
      allowance: new AllowanceGate(this.d.now),
      events: this,
      executionChanged: (intent, previous) => this.emitUpdate(intent, previous),
      transcript: makeTranscript(this.d),
      trace: makeTrace(this.d),
      step: (step, intent) => this.d.onStep?.(step, intent.intentId),
    });
  }

  // ---- Quote only -----------------------------------------------------------------

  /** Prices an intent and says whether it could be paid now. Pays nothing, records nothing. */
  async quote(req: Omit<PayRequest, "intentKey" | "approvalId">, callId?: string) {
    return quoteOnly(this.payingCtx(), req, callId);
  }

  // ---- Pay ----------------------------------------------------------------------------

  /**
   * Runs one paid call to the point where the service has accepted an execution, and
   * returns its id and status. Refusals and failures throw a PaidActionError. When the
   * outcome is still being settled (a payment settling, another call driving the same
   * intent), waits a little (settleWaitMs, with progress) before answering.
   */
  async pay(req: PayRequest, opts: PayOptions = {}): Promise<PaidCall> {
    const c = this.payingCtx();
    const { input, agentBudget } = validateRequest(req);
    if (opts.signal?.aborted)
      throw new PaidActionError("cancelled", "the call was cancelled before it started; nothing was paid");
    const fp = fingerprint(req.action, input);
    // Refuse early what the policy would refuse anyway, before anything is recorded.
    const early = evaluateBudget(c.config.limits, { day: 0n, total: 0n }, { action: req.action, amount: 0n });
    // Finding or recording the intent, and starting its drive, happen one call at a time per
    // key in this process: a second call with the key then finds the first one's drive.
    const found = await this.turns.run(
      req.intentKey,
      async (): Promise<{ intent: Intent; started?: Promise<PaidCall> }> => {
        let intent: Intent | undefined;
        if (req.approvalId !== undefined) {
          const approval = typeof req.approvalId === "string" ? await c.journal.approval(req.approvalId) : undefined;
          if (!approval)
            throw new PaidActionError(
              "approval_invalid",
              `approval ${String(req.approvalId).slice(0, 60)} does not exist`,
              { approvalId: req.approvalId },
            );
          intent = await c.journal.intent(approval.intentId);
          if (!intent || intent.fingerprint !== fp) {
            throw new PaidActionError(
              "approval_invalid",
              `approval ${req.approvalId} was given for a different action or input; send exactly the input that was approved`,
              { approvalId: req.approvalId },
            );
          }
        } else if (req.intentKey !== undefined) {
          intent = await c.journal.intentByKey(req.intentKey);
          if (intent && intent.fingerprint !== fp) {
            throw new PaidActionError(
              "intent_conflict",
              `intentKey ${req.intentKey} was used for a different action or input; use a new key for a new intent`,
              { intentKey: req.intentKey, intentId: intent.intentId },
            );
          }
        }
        if (!early.ok) throw new PaidActionError(early.code, early.message, early.context);
        // Frozen: nothing new is recorded, quoted or signed; a purchase whose proof left is still answered.
        if (stoppedByFreeze(intent)) await refuseIfFrozen(c.journal);
        if (intent) return { intent };
        const created = await this.record(c, req, fp, agentBudget, opts);
        if ("conflict" in created) {
          // Another process recorded the same key a moment ago: it is that intent.
          if (created.conflict.fingerprint !== fp)
            throw new PaidActionError(
              "intent_conflict",
              `intentKey ${req.intentKey} was used for a different action or input; use a new key for a new intent`,
              { intentKey: req.intentKey, intentId: created.conflict.intentId },
            );
          return { intent: created.conflict };
        }
        return {
          intent: created.intent,
          started: this.tracked(created.intent.intentId, this.drive(c, created.intent, opts)),
        };
      },
    );
    const intent = found.intent;
    let started = found.started;
    const intentId = intent.intentId;
    const deadline = this.d.now() + (this.d.settleWaitMs ?? 15_000);
    for (let looks = 1; ; looks++) {
      try {
        if (started) {
          const mine = started;
          started = undefined;
          return await mine;
        }
        const inFlight = this.driving.get(intentId);
        if (inFlight) return await this.waitFor(inFlight, deadline, opts);
        return await this.tracked(intentId, this.driveExisting(c, intentId, agentBudget, opts));
      } catch (e) {
        const error = asError(e);
        const waitMore = WAITABLE.has(error.code) && this.d.now() < deadline && !opts.signal?.aborted;
        if (!waitMore) throw error;
        opts.onProgress?.(
          `${error.code === "busy" ? "another call is finishing this purchase" : "the payment is still settling"}; looking again (${looks})`,
        );
        await sleep(this.d.settleWaitStepMs ?? 1_000);
      }
    }
  }

  /** Records a new intent, leased to this process; or finds the one another process just recorded under the same key. */
  private async record(
    c: Ctx,
    req: PayRequest,
    fp: string,
    agentBudget: bigint | undefined,
    opts: PayOptions,
  ): Promise<{ intent: Intent } | { conflict: Intent }> {
    const now = this.d.now();
    const intentId = this.d.newId("int");
    const intentKey = req.intentKey ?? `pam-${intentId}`;
    try {
      await c.journal.insertIntent({
        intentId,
        intentKey,
        idemKey: intentKey,
        service: this.service,
        action: req.action,
        input: req.input,
        fingerprint: fp,
        agentBudget: agentBudget ?? null,
        callId: opts.callId ?? null,
        createdAt: now,
        leaseOwner: this.d.owner,
        leaseUntil: now + LEASE_MS,
      });
    } catch (e) {
      const existing =
        req.intentKey !== undefined && e instanceof IntentKeyTaken
          ? await c.journal.intentByKey(req.intentKey)
          : undefined;
      if (existing) return { conflict: existing };
      throw e;
    }
    const created = (await c.journal.intent(intentId))!;
    c.transcript(created, "intent", { action: req.action, input: req.input, budget: req.budget ?? null, intentKey });
    c.step("intent_recorded", created);
    return { intent: created };
  }

  private tracked(intentId: string, p: Promise<PaidCall>): Promise<PaidCall> {
    this.driving.set(intentId, p);
    const forget = () => {
      if (this.driving.get(intentId) === p) this.driving.delete(intentId);
    };
    p.then(forget, forget);
    return p;
  }

  /** Waits for the call of this process that drives the intent; its outcome is ours. */
  private async waitFor(inFlight: Promise<PaidCall>, deadline: number, opts: PayOptions): Promise<PaidCall> {
    opts.onProgress?.("another call is driving this purchase; waiting for its outcome");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new PaidActionError(
              "busy",
              "another call is still driving this purchase (it may be waiting for a human's approval); call again in a little while with the same intentKey",
              {},
              true,
            ),
          ),
        Math.max(0, deadline - this.d.now()),
      );
    });
    try {
      return await Promise.race([inFlight, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async driveExisting(
    c: Ctx,
    intentId: string,
    agentBudget: bigint | undefined,
    opts: PayOptions,
  ): Promise<PaidCall> {
    if (!(await c.journal.claim(intentId, this.d.owner, this.d.now(), LEASE_MS))) {
      throw new PaidActionError(
        "busy",
        "another process is driving this purchase right now; call again in a few seconds with the same intentKey",
        { intentId },
        true,
      );
    }
    let intent = (await c.journal.intent(intentId))!;
    const lower = agentBudget !== undefined && (intent.agentBudget === null || agentBudget < intent.agentBudget);
    if (opts.callId || lower) {
      await c.journal.update(
        intentId,
        { ...(opts.callId ? { callId: opts.callId } : {}), ...(lower ? { agentBudget } : {}) },
        this.d.now(),
      );
      intent = (await c.journal.intent(intentId))!;
    }
    const fate = intent.proof && intent.quoteId ? (await c.journal.payment(intent.quoteId))?.fate : undefined;
    const fresh = restartable(intent.state, intent.proof, fate);
    c.transcript(intent, "resume", {
      state: intent.state,
      intentKey: intent.intentKey,
      attempt: intent.attempt,
      ...(fresh ? { decision: "a fresh attempt" } : {}),
    });
    return this.drive(c, intent, opts, fresh);
  }

  private async drive(c: Ctx, intent: Intent, opts: PayOptions, restart = false): Promise<PaidCall> {
    const drive = new Drive(c, intent, this.d.owner, opts);
    try {
      if (restart) await drive.restart();
      const done = resting(drive.intent.state) ? drive.intent : await drive.run();
      return paidCallOf(done, opts.callId);
    } finally {
      drive.stopRenewing();
      await c.journal.release(intent.intentId, this.d.owner);
    }
  }

  emitUpdate(intent: Intent, previous: string | null): void {
    if (!intent.executionId) return;
    const event: ExecutionEvent = {
      intentId: intent.intentId,
      executionId: intent.executionId,
      status: intent.execStatus ?? "pending",
      previous,
      view: view(intent),
    };
    this.emit("execution", event);
  }

  // ---- Recovery ---------------------------------------------------------------------

  /** Resumes every unfinished intent of this service with its own key; never throws. */
  async resumeUnfinished(): Promise<{ resumed: number; stillUnfinished: number }> {
    if (!this.config) return { resumed: 0, stillUnfinished: 0 };
    let resumed = 0;
    for (const intent of await this.d.journal.unfinished(this.service)) if (await this.resume(intent)) resumed++;
    return { resumed, stillUnfinished: (await this.d.journal.unfinished(this.service)).length };
  }

  /** Drives one unfinished intent as far as it goes without a human. */
  async resume(intent: Intent): Promise<boolean> {
    if (this.driving.has(intent.intentId)) return false;
    // Nothing new is signed while a limit is misconfigured; what is already at risk is still followed.
    if (this.catalogIssues.length > 0 && STATES[intent.state].money === "none") return false;
    // Nor while payments are frozen: such a purchase waits (its reservation held) until a person lifts the freeze.
    if (stoppedByFreeze(intent) && (await this.d.journal.frozen())) return false;
    const c = this.ctx();
    if (!(await c.journal.claim(intent.intentId, this.d.owner, this.d.now(), LEASE_MS))) return false;
    const claimed = await c.journal.intent(intent.intentId);
    if (!claimed) return false;
    const p = this.drive(c, claimed, {});
    this.tracked(intent.intentId, p).catch(() => undefined);
    try {
      await p;
    } catch (e) {
      const error = asError(e);
      // A resumed purchase the limits now refuse simply ends refused (its record says so).
      if (!QUIET_ON_RESUME.has(error.code))
        this.d.log(`resuming ${intent.intentId}: ${error.code}: ${this.d.transcripts.scrub(error.message)}`);
    }
    return true;
  }

  /** One look at the payments the chain showed could never land, for a late landing (chain/released-watch.ts). */
  watchReleased(): Promise<WatchPass> {
    if (!this.config) return Promise.resolve({ watched: 0, landed: 0 });
    return watchReleased(this.ctx(), this.d.owner);
  }

  /** What the chain says of the settlement the service claimed for an executed intent (the reconciler records it). */
  checkSettlement(intent: Intent) {
    return checkSettlement(this.ctx(), intent);
  }

  /** What the chain says of the service's refund claim, and the credit it earns (the reconciler records it). */
  checkRefund(intent: Intent) {
    return checkRefund(this.ctx(), intent);
  }

  // ---- Approvals: a person decides (the host's prompt, the console, the terminal) ------

  /** A person approves a pending approval: that quote and amount, once, before it expires. */
  approve(approvalId: string, via?: DecidedIn) {
    return approve({ journal: this.d.journal, now: this.d.now, transcript: makeTranscript(this.d) }, approvalId, via);
  }

  /** A person declines a pending approval: recorded, and the intent it was for stays unpaid. */
  decline(approvalId: string, via?: DecidedIn): Promise<void> {
    return decline({ journal: this.d.journal, now: this.d.now, transcript: makeTranscript(this.d) }, approvalId, via);
  }

  /** A recorded approval, with the input of the purchase it is for. */
  approval(approvalId: string) {
    return approvalWithInput(this.d.journal, approvalId);
  }

  /** Everything a person needs to decide on one approval (see approvals/review.ts). */
  approvalReview(approvalId: string): Promise<ApprovalReview | undefined> {
    return approvalReview(this.d.journal, this.config, approvalId, this.d.now());
  }

  /** The approvals waiting for a person (pending, not expired), oldest first. */
  pendingReviews(): Promise<ApprovalReview[]> {
    return pendingReviews(this.d.journal, this.config, this.d.now());
  }

  // ---- Reads ------------------------------------------------------------------------

  /**
   * Folds a fresh execution record from the service into the journal, with `extra` in the
   * same commit (the reconciler's own findings); emits on a status change.
   */
  async applyExecution(intent: Intent, e: Execution, extra: IntentPatch = {}): Promise<Intent> {
    const now = this.d.now();
    const patch: IntentPatch = executionPatch(intent, e, now);
    if (
      FINAL_STATUSES.has(e.status) &&
      intent.settlement === "verified" &&
      patch.refundState !== "pending" &&
      intent.refundState !== "pending"
    )
      patch.nextPollAt = null;
    Object.assign(patch, extra);
    await this.d.journal.update(intent.intentId, patch, now);
    const next = { ...intent, ...patch, updatedAt: now };
    if (intent.execStatus !== e.status) {
      makeTranscript(this.d)(next, "status", { executionId: e.executionId, from: intent.execStatus, to: e.status });
      this.emitUpdate(next, intent.execStatus);
    }
    return next;
  }

  /** An execution from the journal, refreshed from the service when it is not final. */
  async getExecution(executionId: string, refresh = true): Promise<ExecutionView | undefined> {
    let intent = await this.d.journal.intentByExecution(executionId);
    if (!intent) return undefined;
    if (refresh && this.d.client && !FINAL_STATUSES.has((intent.execStatus ?? "pending") as ExecutionStatus)) {
      try {
        const res = await serviceApi(this.d.client).getExecution(executionId);
        if (res.ok && res.body.executionId === executionId) intent = await this.applyExecution(intent, res.body);
      } catch {
        // The journal's copy is still the best answer.
      }
    }
    return view(intent);
  }

  listExecutions(opts: { status?: string; action?: string; limit?: number; cursor?: string }) {
    return listExecutions(this.d.journal, opts);
  }

  /** Intents a human should look at: outcome unknown, or the service misbehaved after payment. */
  async needsAttention(): Promise<ExecutionView[]> {
    return (await this.d.journal.needingAttention(100)).map(view);
  }

  spending() {
    const issues = this.configIssues ?? (this.catalogIssues.length > 0 ? this.catalogIssues : undefined);
    return spending(this.d.journal, this.config, issues, this.d.now());
  }
}
