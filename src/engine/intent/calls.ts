/**
 * The paid calls of this process, and how each reaches its outcome: it finds or records its
 * intent, then drives it (intent/drive.ts), or waits for the call that drives it, or looks
 * again while the outcome is being settled.
 *
 * At most one call drives an intent at a time: in this process a second call on the same
 * intent waits for the first and gets the same outcome; across processes the intent's lease
 * (renewed while held, every state change compare-and-set) does the same.
 */
import type { BudgetDecision } from "../budget/policy.js";
import { LEASE_MS, type Ctx, type EngineDeps } from "../context.js";
import { PaidActionError, paidError } from "../errors.js";
import { LeaseLost } from "../journal/port.js";
import { narrowIntent } from "../model/narrow.js";
import { restartable } from "../model/transitions.js";
import type {
  Intent,
  IntentAt,
  IntentPatch,
  PaidCall,
  PayOptions,
  PayRequest,
  ResumeOptions,
  StoredRequest,
} from "../model/types.js";
import { executedOrThrow, paidCallOf } from "../read/executions.js";
import { sellerWordOf } from "../evidence/seller-word.js";
import type { FetchedResponse } from "../x402-http/http.js";
import { Drive } from "./drive.js";
import { asError, budgetRefusal } from "./failures.js";
import { refuseIfFrozen, stoppedByFreeze } from "./freeze.js";
import { restart } from "./moves.js";
import { withMoney } from "./money.js";
import { findIntent, recordIntent } from "./record.js";
import { Turns } from "./turns.js";

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

/** A call's outcome: the intent carried out (or its refusal, thrown). */
type Done = IntentAt<"executed">;

/** The intent a call found or recorded, and the drive it started when it recorded it. */
interface Found {
  intent: Intent;
  started?: Promise<Done>;
}

/** A fetch's own: its origin and request (recorded with a new intent), and the unpaid answer already in hand. */
export interface FetchTarget {
  origin: string;
  request: StoredRequest;
  probe?: FetchedResponse;
}

/** One paid call as the engine took it in, checked: what it asks for, and how it is to be answered. */
export interface Call {
  req: PayRequest;
  /** What identifies its content (its action and input): a key used again for other content is refused. */
  fp: string;
  /** The budget the caller gave for it, in atomic units. */
  agentBudget: bigint | undefined;
  /** The policy's answer before anything is recorded: a refusal throws once the call's intent is known (an intent the call names is checked first). */
  early: BudgetDecision;
  opts: PayOptions;
  /** A fetch's own (absent: an action). */
  fetch?: FetchTarget;
}

export class Calls {
  /** Intents a call of this process is driving now, with that call's outcome. */
  private readonly driving = new Map<string, Promise<Done>>();
  /** Finding or recording an intent: one call at a time per intent key in this process. */
  private readonly turns = new Turns();

  constructor(
    private readonly d: EngineDeps,
    /** The service new intents are recorded for. */
    private readonly service: string,
  ) {}

  /** Whether a call of this process drives the intent now. */
  isDriving(intentId: string): boolean {
    return this.driving.has(intentId);
  }

  /** Finds or records the intent an action's call names and reaches its outcome: the paid call, or its refusal thrown. */
  async pay(c: Ctx, call: Call): Promise<PaidCall> {
    const intent = await this.run(c, call);
    // Whether the service signed its offer and receipt, as paid_fetch's result says of a seller.
    return paidCallOf(intent, call.opts.callId, await sellerWordOf(c.journal, intent.intentId));
  }

  /**
   * The same for any intent (an action, or a fetch given its target): the executed intent, or
   * its refusal thrown — with where the purchase's money is, as the journal says now.
   */
  async run(c: Ctx, call: Call): Promise<Done> {
    try {
      // Finding or recording the intent, and starting its drive, happen one call at a time per
      // key in this process: a second call with the key then finds the first one's drive.
      const found = await this.turns.run(call.req.intentKey, () => this.findOrRecord(c, call));
      return await this.outcome(c, found, call);
    } catch (e) {
      if (e instanceof LeaseLost || !(e instanceof PaidActionError)) throw e;
      throw await withMoney(c, e);
    }
  }

  private async findOrRecord(c: Ctx, call: Call): Promise<Found> {
    const { req, fp, early, opts, fetch } = call;
    const intent = await findIntent(c, req, fp);
    // A call that names a recorded purchase is refused about it (and told where its money is).
    if (!early.ok) throw budgetRefusal(early, intent ? { intentId: intent.intentId, intentKey: intent.intentKey } : {});
    // Frozen: nothing new is recorded, quoted or signed; a purchase whose proof left is still answered.
    if (stoppedByFreeze(intent)) await refuseIfFrozen(c.journal);
    if (intent) return { intent };
    const created = await recordIntent(c, this.service, call);
    if ("conflict" in created) {
      // Another process recorded the same key a moment ago: it is that intent.
      if (created.conflict.fingerprint !== fp)
        throw paidError("intent_conflict", { intentKey: req.intentKey, intentId: created.conflict.intentId });
      return { intent: created.conflict };
    }
    return {
      intent: created.intent,
      started: this.tracked(created.intent.intentId, this.drive(c, created.intent, opts, false, fetch?.probe)),
    };
  }

  /**
   * The call's outcome: its own drive's, else that of the call of this process driving the
   * intent, else a drive of its own; while the outcome is being settled, it looks again
   * (settleWaitMs, with progress) before answering.
   */
  private async outcome(c: Ctx, found: Found, call: Call): Promise<Done> {
    const { opts } = call;
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
        return await this.tracked(intentId, this.driveExisting(c, intentId, call));
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

  /**
   * Drives one unfinished intent no call of this process drives, as far as it goes without a
   * human; false when another process holds it.
   */
  async resume(c: Ctx, intent: Intent, resuming: ResumeOptions = {}): Promise<boolean> {
    if (!(await c.journal.claim(intent.intentId, this.d.owner, this.d.now(), LEASE_MS))) return false;
    const claimed = await c.journal.intent(intent.intentId);
    if (!claimed) return false;
    const p = this.drive(c, claimed, {}, false, undefined, resuming);
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

  private tracked(intentId: string, p: Promise<Done>): Promise<Done> {
    this.driving.set(intentId, p);
    const forget = () => {
      if (this.driving.get(intentId) === p) this.driving.delete(intentId);
    };
    p.then(forget, forget);
    return p;
  }

  /** Waits for the call of this process that drives the intent; its outcome is ours. */
  private async waitFor(inFlight: Promise<Done>, deadline: number, opts: PayOptions): Promise<Done> {
    opts.onProgress?.("another call is driving this purchase; waiting for its outcome");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(paidError("busy", { by: "waiting_call" })), Math.max(0, deadline - this.d.now()));
    });
    try {
      return await Promise.race([inFlight, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async driveExisting(c: Ctx, intentId: string, { agentBudget, opts }: Call): Promise<Done> {
    if (!(await c.journal.claim(intentId, this.d.owner, this.d.now(), LEASE_MS))) {
      throw paidError("busy", { by: "process", intentId });
    }
    let intent = await c.journal.intent(intentId);
    if (!intent) throw new Error(`intent ${intentId} was claimed but is not in the journal`);
    const lower = agentBudget !== undefined && (intent.agentBudget === null || agentBudget < intent.agentBudget);
    if (opts.callId || lower) {
      const patch: IntentPatch = { ...(opts.callId ? { callId: opts.callId } : {}), ...(lower ? { agentBudget } : {}) };
      const now = this.d.now();
      // Compare-and-set like every other write: the state just read, the lease just claimed.
      if (!(await c.journal.update(intentId, patch, now, { state: intent.state, owner: this.d.owner })))
        throw new LeaseLost(intentId);
      intent = narrowIntent({ ...intent, ...patch, updatedAt: now });
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

  private async drive(
    c: Ctx,
    intent: Intent,
    opts: PayOptions,
    fresh = false,
    probe?: FetchedResponse,
    resuming?: ResumeOptions,
  ): Promise<Done> {
    const drive = new Drive(c, intent, this.d.owner, opts, resuming).withProbe(probe);
    try {
      // A fresh attempt at a stop with nothing spent: recorded before it is driven (it never pauses).
      if (fresh) await drive.apply(restart(drive.intent));
      const end = await drive.run();
      if (end.answer) throw end.answer;
      return executedOrThrow(end.intent);
    } finally {
      drive.stopRenewing();
      // The outcome's commit may have ended the lease already (steps/execute.ts): no write then.
      if (drive.intent.leaseOwner !== null) await c.journal.release(intent.intentId, this.d.owner);
    }
  }
}
