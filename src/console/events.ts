/**
 * Server-sent events for the console's pages: `approvals` (the pending set, at once and
 * whenever it changes), `freeze` (whether payments are frozen, likewise), `executions`
 * (which executions changed status or state) and `purchases` (which paid_fetch purchases
 * were made or changed state, answer or settlement). The
 * journal may be shared by several processes, on this machine or (PostgreSQL) many, so
 * changes are found by polling it — every 500 ms, only while a page listens — not by
 * listening to this process's engine. A `: ping` comment every 15 s keeps proxies and the
 * browser from thinking the stream died.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { freezeView, pendingReviews, type Config, type Intent, type JournalStore } from "../engine/index.js";

/** How many of the newest purchases are watched for changes. */
const WATCHED = 50;

export interface EventHubDeps {
  journal: JournalStore;
  config: Config | undefined;
  now: () => number;
  log: (line: string) => void;
  pollMs?: number;
  pingMs?: number;
}

export class EventHub {
  private readonly clients = new Set<ServerResponse>();
  private pollTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  /** The pending set last told (approval ids), undefined before the first look. */
  private approvals: string | undefined;
  /** The freeze last told (as JSON), undefined before the first look. */
  private freeze: string | undefined;
  /** Each watched purchase's status and state last seen, undefined before the first look. */
  private executions: Map<string, string> | undefined;
  /** Each watched fetch purchase's state, answer and settlement last seen, undefined before the first look. */
  private purchases: Map<string, string> | undefined;
  private lastError: string | undefined;
  private closed = false;

  constructor(private readonly d: EventHubDeps) {}

  get listening(): number {
    return this.clients.size;
  }

  /** Takes over a request as an event stream: the pending approvals at once, then changes. */
  async open(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    res.write("retry: 2000\n\n");
    this.clients.add(res);
    const gone = () => this.drop(res);
    req.on("close", gone);
    res.on("close", gone);
    res.on("error", gone);
    this.start();
    try {
      const items = await pendingReviews(this.d.journal, this.d.config, this.d.now());
      // A later look compares with what was first told, so no client misses a change.
      this.approvals ??= signature(items.map((a) => a.approvalId));
      if (this.clients.has(res)) send(res, "approvals", { items });
      const freeze = { freeze: freezeView(await this.d.journal.frozen()) };
      this.freeze ??= JSON.stringify(freeze);
      if (this.clients.has(res)) send(res, "freeze", freeze);
    } catch (e) {
      this.report(e);
    }
  }

  /** Ends every stream and stops polling. */
  close(): void {
    this.closed = true;
    for (const res of this.clients) res.end();
    this.clients.clear();
    this.stop();
  }

  private drop(res: ServerResponse): void {
    if (!this.clients.delete(res)) return;
    if (this.clients.size === 0) this.stop();
  }

  private start(): void {
    if (this.closed || this.pingTimer) return;
    this.pingTimer = setInterval(() => {
      for (const res of this.clients) res.write(": ping\n\n");
    }, this.d.pingMs ?? 15_000);
    this.schedule();
  }

  private stop(): void {
    clearTimeout(this.pollTimer);
    clearInterval(this.pingTimer);
    this.pollTimer = undefined;
    this.pingTimer = undefined;
    // Nobody listens: the next listener starts from what is then.
    this.approvals = undefined;
    this.freeze = undefined;
    this.executions = undefined;
    this.purchases = undefined;
  }

  private schedule(): void {
    if (this.closed || this.clients.size === 0) return;
    this.pollTimer = setTimeout(() => {
      this.poll()
        .catch((e: unknown) => this.report(e))
        .finally(() => {
          if (this.pingTimer) this.schedule();
        });
    }, this.d.pollMs ?? 500);
  }

  private async poll(): Promise<void> {
    const now = this.d.now();
    const pending = await this.d.journal.pendingApprovals(now);
    const sig = signature(pending.map((a) => a.approvalId));
    if (sig !== this.approvals) {
      const items = await pendingReviews(this.d.journal, this.d.config, now);
      this.approvals = signature(items.map((a) => a.approvalId));
      this.broadcast("approvals", { items });
    }
    const freeze = JSON.stringify({ freeze: freezeView(await this.d.journal.frozen()) });
    if (freeze !== this.freeze) {
      this.freeze = freeze;
      this.broadcast("freeze", JSON.parse(freeze));
    }
    const newest = { before: Number.MAX_SAFE_INTEGER, beforeId: "~", limit: WATCHED };
    const rows = await this.d.journal.executions(newest);
    const seen = new Map(
      rows.map((i) => [
        i.executionId ?? i.intentId,
        `${i.execStatus ?? ""}|${i.state}|${i.settlement}|${i.refundState}`,
      ]),
    );
    const changed = changes(this.executions, seen);
    this.executions = seen;
    if (changed.length > 0) this.broadcast("executions", { changed });
    const bought = new Map((await this.d.journal.purchases(newest)).map((i) => [i.intentId, purchaseSignature(i)]));
    const boughtChanged = changes(this.purchases, bought);
    this.purchases = bought;
    if (boughtChanged.length > 0) this.broadcast("purchases", { changed: boughtChanged });
    this.lastError = undefined;
  }

  private broadcast(event: string, data: unknown): void {
    for (const res of this.clients) send(res, event, data);
  }

  /** A failing look is said once (not every 500 ms) and tried again. */
  private report(e: unknown): void {
    const message = (e as Error).message;
    if (message === this.lastError) return;
    this.lastError = message;
    this.d.log(`console: reading the journal for live updates failed: ${message}`);
  }
}

function signature(ids: string[]): string {
  return ids.join(",");
}

/** A fetch purchase's state, answer and settlement, as one comparable string. */
function purchaseSignature(i: Intent): string {
  return `${i.state}|${i.response?.status ?? ""}|${i.settlement}|${i.paymentTx ?? ""}`;
}

/** The ids whose signature is new or changed since `before` (nothing before the first look). */
function changes(before: Map<string, string> | undefined, seen: Map<string, string>): string[] {
  if (!before) return [];
  return [...seen].filter(([id, s]) => before.get(id) !== s).map(([id]) => id);
}

function send(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
