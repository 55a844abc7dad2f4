/**
 * The reconciler keeps the journal in step with the service and with the chain: it polls
 * executions that are not final, resumes intents whose outcome is unknown, verifies each
 * settlement the service claimed and each refund it reported against our own RPC — each
 * intent with its own backoff (about 1 s growing to 30 s, with jitter), at bounded
 * concurrency, honouring Retry-After. Its work grows with the number of unfinished
 * intents, never with the journal's size: it reads only rows with a due `next_poll_at`,
 * through a partial index. A look that finds nothing new only moves the intent's next poll:
 * those writes of one pass are committed together at its end (reschedule()); what the
 * service or the chain says of an execution or of money is committed as soon as it is known.
 *
 * It also sweeps for orphans: a purchase whose driver died mid-way (a server killed, on this
 * machine or another sharing the journal) keeps its lease until the lease expires, so the
 * dead driver's restart may not get it back; every `sweepIntervalMs` the engine resumes
 * each unfinished intent whose lease has expired, with its own idempotency key — and looks
 * again at each payment the chain showed could never land, until that is beyond doubt.
 *
 * A resume whose execution request gets no answer asks the chain (intent/steps/unanswered.ts):
 * a payment our RPC shows landed is recorded as spent and the execution asked for again, and
 * once the service has stayed silent `unansweredAttentionMs` after the transfer landed, a
 * person is told.
 */
import { FINAL_STATUSES, type Execution } from "../domain/wire.js";
import type { ClaimRead } from "./chain/settlement.js";
import type { Engine } from "./engine.js";
import { isCode } from "./errors.js";
import { executionPatch } from "./read/executions.js";
import type { DuePoll, JournalStore, PollMove } from "./journal/port.js";
import { nextInterval, nextPassWait, scheduleOnly, type LastPass } from "./model/polling.js";
import { serviceApi } from "./service/api.js";
import type { ServiceClient } from "./service/client.js";
import type { Intent, IntentAt, IntentPatch } from "./model/types.js";

/** What the chain's word on an executed intent's money changes: never what its state has proven. */
type MoneyPatch = Pick<
  IntentPatch,
  "settlement" | "paymentTx" | "refundCredit" | "refundState" | "refundTx" | "attention"
>;

/** A failed execution is followed this long for its refund, then handed to a human. */
const GIVE_UP_ON_REFUND_MS = 24 * 3_600_000;

/** A landed payment whose service has not created the execution this long after is flagged for a person. */
export const UNANSWERED_ATTENTION_MS = 15 * 60_000;

export interface ReconcilerOptions {
  engine: Engine;
  journal: JournalStore;
  /** A client that does not retry by itself: the reconciler has its own backoff. */
  client: ServiceClient;
  now: () => number;
  random?: () => number;
  concurrency?: number;
  minIntervalMs?: number;
  maxIntervalMs?: number;
  /** How often unfinished intents whose driver is gone are resumed (default 15 s; 0: never). */
  sweepIntervalMs?: number;
  /**
   * How long after our RPC showed a payment landed a service that has not answered the
   * execution request since is flagged for a person (default 15 min); it is asked again all the same.
   */
  unansweredAttentionMs?: number;
  /**
   * After a pass that took every row then due, the next one waits at least this long from
   * its start (default a quarter of minIntervalMs, at most 250 ms), so that the looks falling
   * due meanwhile are made together: one batch of settlement reads and one commit of
   * schedules for them, and the agent's calls, which run on the same thread, are interrupted
   * once in a while rather than once per call made a second earlier. A pass that left rows
   * due is followed at once.
   */
  passGapMs?: number;
  log?: (line: string) => void;
}

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** When the last pass began, and whether it left rows due (then the next is not held back). */
  private lastPass: LastPass = { at: Number.NEGATIVE_INFINITY, full: false };
  /** Polling on its own timer (start() was called, stop() was not). */
  private started = false;
  private stopping = false;
  private readonly inflight = new Set<string>();
  private tick: Promise<void> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** Whether a pass's settlements read together failed yet (said once: a node may refuse every batch). */
  private claimsFailed = false;
  /** Requests sent, for the benchmark. */
  requests = 0;

  constructor(private readonly o: ReconcilerOptions) {}

  private get min() {
    return this.o.minIntervalMs ?? 1_000;
  }
  private get max() {
    return this.o.maxIntervalMs ?? 30_000;
  }
  private get passGap() {
    return this.o.passGapMs ?? Math.min(250, this.min / 4);
  }
  /** How a resume of this reconciler drives an intent. */
  private get resuming() {
    return { unansweredAttentionMs: this.o.unansweredAttentionMs ?? UNANSWERED_ATTENTION_MS };
  }

  start(): void {
    this.started = true;
    this.stopping = false;
    this.schedule();
    const every = this.o.sweepIntervalMs ?? 15_000;
    if (every > 0 && !this.sweepTimer) {
      this.sweepTimer = setInterval(() => void this.sweep(), every);
      this.sweepTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    await this.tick;
    await this.sweeping;
  }

  /**
   * Resumes the unfinished intents nobody drives any more (their lease expired), then looks
   * again at the payments found unable to land (chain/released-watch.ts); one sweep at a time.
   */
  sweep(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.sweeping ??= this.o.engine
      .resumeUnfinished(this.resuming)
      .then(({ resumed }) => {
        if (resumed > 0) this.schedule();
      })
      .catch((e: unknown) => this.o.log?.(`reconciler: resuming unfinished purchases: ${(e as Error).message}`))
      .then(() => this.o.engine.watchReleased())
      .then(
        () => undefined,
        (e: unknown) => this.o.log?.(`reconciler: watching released payments: ${(e as Error).message}`),
      )
      .finally(() => {
        this.sweeping = undefined;
      });
    return this.sweeping;
  }

  /** Re-arms the timer for the earliest due row (call after new work is recorded). */
  schedule(): void {
    if (!this.started) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    Promise.resolve(this.o.journal.nextPollAt()).then(
      (next) => this.arm(next),
      (e: unknown) => {
        // The store did not answer: look again in a while.
        this.o.log?.(`reconciler: reading the next due poll failed: ${(e as Error).message}`);
        this.arm(this.o.now() + 5_000);
      },
    );
  }

  private arm(next: number | undefined): void {
    if (!this.started || this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    if (next === undefined) {
      // Nothing to follow; look again now and then for work another process recorded.
      this.timer = setTimeout(() => this.schedule(), 5_000);
      this.timer.unref();
      return;
    }
    const wait = nextPassWait({
      nextDue: next,
      now: this.o.now(),
      maxMs: this.max,
      gapMs: this.passGap,
      last: this.lastPass,
    });
    this.timer = setTimeout(() => {
      this.tick = this.runOnce().finally(() => {
        this.tick = undefined;
        this.schedule();
      });
    }, wait);
    this.timer.unref();
  }

  private jitter(ms: number): number {
    const r = this.o.random ?? Math.random;
    return Math.round(ms * (0.8 + 0.4 * r()));
  }

  /** One pass over what is due now (or by `dueBy`). Exposed for tests and the benchmark. */
  async runOnce(dueBy = this.o.now()): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const concurrency = this.o.concurrency ?? 4;
      const limit = concurrency * 8;
      this.lastPass = { at: this.o.now(), full: false };
      const listed = await this.o.journal.duePolls(dueBy, limit);
      this.lastPass.full = listed.length >= limit;
      const due = listed.filter((r) => !this.inflight.has(r.intentId));
      // The pass's schedule-only writes, committed together once it is done (journal.reschedule).
      const moves: PollMove[] = [];
      const reads = await this.readClaims(due);
      let index = 0;
      const worker = async () => {
        while (index < due.length && !this.stopping) {
          const row = due[index++]!;
          this.inflight.add(row.intentId);
          try {
            await this.handle(row, moves, reads.get(row.intentId));
          } catch (e) {
            this.o.log?.(`reconciler: ${row.intentId}: ${(e as Error).message}`);
            await this.backoff(row, undefined).catch(() => undefined);
          } finally {
            this.inflight.delete(row.intentId);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, worker));
      await this.reschedule(moves);
    } finally {
      this.running = false;
    }
  }

  /**
   * Commits a pass's schedule-only writes together: one commit, where each was its own (fsynced)
   * one. Why that is safe: a crash, or a store that does not answer, loses only when to look
   * next — those intents stay due as they were and are polled again, their interval not yet
   * doubled; nothing about an execution or money is ever in this write.
   */
  private async reschedule(moves: readonly PollMove[]): Promise<void> {
    if (moves.length === 0) return;
    try {
      await this.o.journal.reschedule(moves, this.o.now());
    } catch (e) {
      this.o.log?.(`reconciler: rescheduling ${moves.length} polls failed (they stay due): ${(e as Error).message}`);
    }
  }

  /**
   * The chain's reading of the settlements claimed among a pass's due intents, read together
   * (one round trip to our RPC where each took one). Each is still judged and recorded as its
   * intent is handled, on the row read then, and only for the proof and transaction it was
   * read for (chain/settlement.ts checkSettlement); anything not read here is read alone.
   */
  private async readClaims(due: readonly DuePoll[]): Promise<Map<string, ClaimRead>> {
    const ids = due.filter((r) => r.settlementClaimed).map((r) => r.intentId);
    if (ids.length < 2) return new Map();
    try {
      const intents = (await Promise.all(ids.map((id) => this.o.journal.intent(id)))).filter(
        (i): i is Intent => i?.state === "executed" && i.settlement === "claimed",
      );
      return intents.length < 2 ? new Map() : await this.o.engine.readClaims(intents);
    } catch (e) {
      if (!this.claimsFailed)
        this.o.log?.(
          `reconciler: reading claimed settlements together failed, reading each alone: ${(e as Error).message}`,
        );
      this.claimsFailed = true;
      return new Map();
    }
  }

  /** When to look again: the interval doubles (or resets), with jitter, never before Retry-After. */
  private nextLook(
    row: Pick<Intent, "pollIntervalMs">,
    retryAfterMs: number | undefined,
    reset = false,
  ): { nextPollAt: number; pollIntervalMs: number } {
    const interval = nextInterval(row.pollIntervalMs, { minMs: this.min, maxMs: this.max }, reset);
    const wait = Math.max(this.jitter(interval), retryAfterMs ?? 0);
    return { nextPollAt: this.o.now() + wait, pollIntervalMs: interval };
  }

  private async backoff(row: Pick<Intent, "intentId" | "pollIntervalMs">, retryAfterMs: number | undefined) {
    await this.o.journal.update(row.intentId, this.nextLook(row, retryAfterMs), this.o.now());
  }

  /**
   * One pass over one intent: the service's word on the execution, the chain's on the money,
   * in one journal commit — or, when all it moves is the next poll, in the pass's (`moves`).
   */
  private async handle(row: DuePoll, moves: PollMove[], read: ClaimRead | undefined): Promise<void> {
    const current = await this.o.journal.intent(row.intentId);
    if (!current || current.nextPollAt === null) return;
    if (current.state !== "executed") {
      // Outcome unknown after signing: drive the intent on with its own key.
      await this.o.engine.resume(current, this.resuming);
      const after = await this.o.journal.intent(row.intentId);
      if (after && after.state !== "executed" && after.nextPollAt !== null) await this.backoff(after, undefined);
      return;
    }
    let retryAfter: number | undefined;
    let record: Execution | undefined;
    let seen = current; // the intent as this pass sees it
    if (current.executionId && !FINAL_STATUSES.has(current.execStatus ?? "pending")) {
      this.requests++;
      const res = await serviceApi(this.o.client)
        .getExecution(current.executionId)
        .catch((e: unknown) => {
          const seconds = isCode(e, "service_unavailable") ? e.context.retryAfterSeconds : undefined;
          retryAfter = seconds !== undefined ? seconds * 1000 : undefined;
          return undefined;
        });
      if (res && !res.ok) {
        const header = Number(res.headers["retry-after"]);
        retryAfter = Number.isFinite(header) ? header * 1000 : undefined;
      } else if (res?.ok && res.body.executionId === current.executionId) {
        record = res.body;
        seen = { ...current, ...executionPatch(current, record, this.o.now()) };
      }
    }
    // Money: what the chain says of the settlement and of any refund.
    const money = await this.followMoney(seen, read);
    seen = { ...seen, ...money };
    let next: IntentPatch;
    if (
      seen.execStatus === "failed" &&
      seen.refundState === "none" &&
      this.o.now() - seen.createdAt > GIVE_UP_ON_REFUND_MS
    ) {
      // Failed and still not refunded a day later: stop asking, and tell a human.
      next = {
        nextPollAt: null,
        attention: seen.attention ?? "the execution failed and the service has not refunded it after 24 h",
      };
    } else if (
      FINAL_STATUSES.has(seen.execStatus ?? "pending") &&
      seen.settlement !== "claimed" &&
      seen.refundState !== "pending"
    ) {
      next = { nextPollAt: null };
    } else {
      next = this.nextLook(seen, retryAfter, record !== undefined && record.status !== current.execStatus);
    }
    const move = scheduleOnly(current, {
      ...(record ? executionPatch(current, record, this.o.now()) : {}),
      ...money,
      ...next,
    });
    if (move) moves.push({ intentId: current.intentId, ...move, seenNextPollAt: current.nextPollAt });
    else if (record) await this.o.engine.applyExecution(current, record, { ...money, ...next });
    else {
      await this.o.journal.update(current.intentId, { ...money, ...next }, this.o.now());
      if (Object.keys(money).length > 0) this.o.engine.emitUpdate({ ...seen, ...next }, seen.execStatus);
    }
  }

  /** What the chain says of a claimed settlement and a reported refund, as a patch (not yet written). */
  private async followMoney(intent: IntentAt<"executed">, read: ClaimRead | undefined): Promise<MoneyPatch> {
    const patch: MoneyPatch = {};
    const notes: string[] = [];
    if (intent.settlement === "claimed") {
      const v = await this.o.engine.checkSettlement(intent, read);
      if (v.kind === "verified") {
        Object.assign(patch, { settlement: "verified", paymentTx: v.tx });
        if (v.note) notes.push(v.note);
      } else if (v.kind === "mismatch") {
        Object.assign(patch, { settlement: "mismatch", ...(v.tx ? { paymentTx: v.tx } : {}) });
        notes.push(v.detail);
      }
    }
    if (intent.refundState === "pending") {
      const v = await this.o.engine.checkRefund(intent);
      if (v.settled) {
        Object.assign(patch, {
          refundCredit: v.credit,
          refundState: v.tx ? "verified" : "unverified",
          ...(v.tx ? { refundTx: v.tx } : {}),
        });
        if (v.attention) notes.push(v.attention);
      }
    }
    if (notes.length > 0) {
      patch.attention = [intent.attention, ...notes].filter(Boolean).join("; ");
      this.o.log?.(`intent ${intent.intentId} needs attention: ${notes.join("; ")}`);
    }
    return patch;
  }
}
