/**
 * The reconciler keeps the journal in step with the service: it polls executions that are
 * not final (and resumes intents whose outcome is unknown), each with its own backoff —
 * about 1 s growing to 30 s, with jitter — at bounded concurrency, honouring Retry-After.
 * Its work grows with the number of unfinished executions, never with the journal's size:
 * it reads only rows with a due `next_poll_at`, through a partial index.
 */
import { Execution, FINAL_STATUSES, type ExecutionStatus } from "../domain/wire.js";
import type { Engine } from "./engine.js";
import type { IntentRow, Journal } from "./journal.js";
import type { ServiceClient } from "./service-client.js";

/** A failed execution is followed this long for its refund, then handed to a human. */
const GIVE_UP_ON_REFUND_MS = 24 * 3_600_000;

export interface ReconcilerOptions {
  engine: Engine;
  journal: Journal;
  /** A client that does not retry by itself: the reconciler has its own backoff. */
  client: ServiceClient;
  now: () => number;
  random?: () => number;
  concurrency?: number;
  minIntervalMs?: number;
  maxIntervalMs?: number;
  log?: (line: string) => void;
}

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Polling on its own timer (start() was called, stop() was not). */
  private started = false;
  private stopping = false;
  private readonly inflight = new Set<string>();
  private tick: Promise<void> | undefined;
  /** Requests sent, for the benchmark. */
  requests = 0;

  constructor(private readonly o: ReconcilerOptions) {}

  private get min() {
    return this.o.minIntervalMs ?? 1_000;
  }
  private get max() {
    return this.o.maxIntervalMs ?? 30_000;
  }

  start(): void {
    this.started = true;
    this.stopping = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.tick;
  }

  /** Re-arms the timer for the earliest due row (call after new work is recorded). */
  schedule(): void {
    if (!this.started) return;
    if (this.timer) clearTimeout(this.timer);
    const next = this.o.journal.nextPollAt();
    if (next === undefined) {
      // Nothing to follow; look again now and then for work another process recorded.
      this.timer = setTimeout(() => this.schedule(), 5_000);
      this.timer.unref();
      return;
    }
    const wait = Math.max(0, Math.min(next - this.o.now(), this.max));
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

  /** One pass over what is due now. Exposed for tests and the benchmark. */
  async runOnce(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const concurrency = this.o.concurrency ?? 4;
      const due = this.o.journal.duePolls(this.o.now(), concurrency * 8).filter((r) => !this.inflight.has(r.intent_id));
      let index = 0;
      const worker = async () => {
        while (index < due.length && !this.stopping) {
          const row = due[index++]!;
          this.inflight.add(row.intent_id);
          try {
            await this.handle(row);
          } catch (e) {
            this.o.log?.(`reconciler: ${row.intent_id}: ${(e as Error).message}`);
            this.backoff(row, undefined);
          } finally {
            this.inflight.delete(row.intent_id);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, worker));
    } finally {
      this.running = false;
    }
  }

  private backoff(row: IntentRow, retryAfterMs: number | undefined, reset = false): void {
    const interval = reset ? this.min : Math.min(this.max, Math.max(this.min, (row.poll_interval_ms ?? this.min) * 2));
    const wait = Math.max(this.jitter(interval), retryAfterMs ?? 0);
    this.o.journal.update(row.intent_id, { next_poll_at: this.o.now() + wait, poll_interval_ms: interval }, this.o.now());
  }

  private async handle(row: IntentRow): Promise<void> {
    const current = this.o.journal.intent(row.intent_id);
    if (!current || current.next_poll_at === null) return;
    if (current.state !== "executed") {
      // Outcome unknown after signing: drive the intent on with its own key.
      await this.o.engine.resume(current);
      const after = this.o.journal.intent(row.intent_id);
      if (after && after.state !== "executed" && after.next_poll_at !== null) this.backoff(after, undefined);
      return;
    }
    if (!current.execution_id) return;
    this.requests++;
    const res = await this.o.client.call("GET", `/executions/${encodeURIComponent(current.execution_id)}`, { schema: Execution }).catch((e: unknown) => {
      const retryAfter = (e as { context?: { retryAfterSeconds?: number } }).context?.retryAfterSeconds;
      this.backoff(current, retryAfter !== undefined ? retryAfter * 1000 : undefined);
      return undefined;
    });
    if (!res) return;
    if (!res.ok) {
      const retryAfter = Number(res.headers["retry-after"]);
      this.backoff(current, Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined);
      return;
    }
    if (res.body.executionId !== current.execution_id) {
      this.backoff(current, undefined);
      return;
    }
    const changed = res.body.status !== current.exec_status;
    const next = this.o.engine.applyExecution(current, res.body);
    if (res.body.status === "failed" && this.o.now() - next.created_at > GIVE_UP_ON_REFUND_MS) {
      // Failed and still not refunded a day later: stop asking, and tell a human.
      this.o.journal.update(
        next.intent_id,
        { next_poll_at: null, attention: next.attention ?? "the execution failed and the service has not refunded it after 24 h" },
        this.o.now(),
      );
      return;
    }
    if (!FINAL_STATUSES.has(res.body.status as ExecutionStatus)) this.backoff(next, undefined, changed);
  }

}
