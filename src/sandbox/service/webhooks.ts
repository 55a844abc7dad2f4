/**
 * Webhooks: registration per API key, durable deliveries of `execution.updated`, signed
 * `Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, retried with
 * exponential backoff. Deliveries live in SQLite, so retries survive a restart. Receivers
 * must be public addresses, checked at registration and again at each delivery, which
 * connects to the address it checked (webhook-guard.ts).
 */
import { createHmac, randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type Database from "better-sqlite3";
import { z } from "zod";
import { invalidRequest, notFound, zodIssues } from "../http/errors.js";
import { newId } from "../../domain/ids.js";
import { pinnedLookup, resolveWebhookTarget, WebhookTargetRefused, type Resolver } from "./webhook-guard.js";
import { statement } from "../db.js";

export const WEBHOOK_EVENTS = ["execution.updated"] as const;
const MAX_ATTEMPTS = 8;
const DELIVERY_TIMEOUT_MS = 5_000;
const MAX_WEBHOOKS_PER_KEY = 20;

export const WebhookCreate = z.strictObject({
  url: z
    .string()
    .max(2048)
    .refine((u) => {
      try {
        const url = new URL(u);
        return url.protocol === "http:" || url.protocol === "https:";
      } catch {
        return false;
      }
    }, "must be an absolute http(s) URL"),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).default(["execution.updated"]),
  description: z.string().max(200).optional(),
});

interface WebhookRow {
  webhook_id: string;
  tenant: string;
  url: string;
  events: string;
  secret: string;
  created_at: number;
}

interface DeliveryRow {
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  body: string;
  attempts: number;
  status: string;
  next_at: number | null;
}

/** Signs a raw body the way receivers verify it. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  const v1 = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
  return `t=${timestamp},v1=${v1}`;
}

export interface WebhooksOptions {
  db: Database.Database;
  now: () => number;
  log: (line: string) => void;
  /** Lifts the public-address guard (local development and tests). */
  allowPrivate: boolean;
  /** How receiver hosts are resolved. */
  resolve: Resolver;
  /** Resolves once every write so far is on disk (group-sync.ts): an event is sent only then. */
  durable: () => Promise<void>;
}

export class Webhooks {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private closed = false;
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly o: WebhooksOptions) {}

  async create(tenant: string, body: unknown) {
    const parsed = WebhookCreate.safeParse(body);
    if (!parsed.success) throw invalidRequest("invalid webhook", zodIssues(parsed.error.issues));
    if (!this.o.allowPrivate) {
      try {
        await resolveWebhookTarget(new URL(parsed.data.url), this.o);
      } catch (e) {
        if (!(e instanceof WebhookTargetRefused)) throw e;
        throw invalidRequest(`webhook url refused: ${e.message}`, [{ path: "url", message: e.message }]);
      }
    }
    const count = (
      statement(this.o.db, `SELECT COUNT(*) AS n FROM webhooks WHERE tenant = ?`).get(tenant) as { n: number }
    ).n;
    if (count >= MAX_WEBHOOKS_PER_KEY) {
      throw invalidRequest(`at most ${MAX_WEBHOOKS_PER_KEY} webhooks per API key; delete one first`);
    }
    const row: WebhookRow = {
      webhook_id: newId("wh"),
      tenant,
      url: parsed.data.url,
      events: JSON.stringify(parsed.data.events),
      secret: `whsec_${randomBytes(24).toString("base64url")}`,
      created_at: this.o.now(),
    };
    statement(
      this.o.db,
      `INSERT INTO webhooks (webhook_id, tenant, url, events, secret, created_at) VALUES (@webhook_id, @tenant, @url, @events, @secret, @created_at)`,
    ).run(row);
    return { ...this.view(row), secret: row.secret };
  }

  private view(row: WebhookRow) {
    return {
      webhookId: row.webhook_id,
      url: row.url,
      events: JSON.parse(row.events) as string[],
      createdAt: new Date(row.created_at).toISOString(),
    };
  }

  list(tenant: string) {
    const rows = statement(this.o.db, `SELECT * FROM webhooks WHERE tenant = ? ORDER BY created_at`).all(
      tenant,
    ) as WebhookRow[];
    return { items: rows.map((r) => this.view(r)) };
  }

  delete(tenant: string, webhookId: string) {
    const row = statement(this.o.db, `SELECT * FROM webhooks WHERE webhook_id = ? AND tenant = ?`).get(
      webhookId,
      tenant,
    ) as WebhookRow | undefined;
    if (!row) throw notFound(`webhook ${webhookId}`);
    this.o.db.transaction(() => {
      statement(this.o.db, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'`).run(webhookId);
      statement(this.o.db, `DELETE FROM webhooks WHERE webhook_id = ?`).run(webhookId);
    })();
    return { webhookId, deleted: true };
  }

  /** Queues an event for every matching webhook of the tenant. Synchronous: call inside the state change's transaction. */
  enqueue(tenant: string, type: (typeof WEBHOOK_EVENTS)[number], data: Record<string, unknown>): void {
    const hooks = statement(this.o.db, `SELECT * FROM webhooks WHERE tenant = ?`).all(tenant) as WebhookRow[];
    const now = this.o.now();
    for (const hook of hooks) {
      if (!(JSON.parse(hook.events) as string[]).includes(type)) continue;
      const eventId = newId("evt");
      const body = JSON.stringify({ id: eventId, type, createdAt: new Date(now).toISOString(), data });
      statement(
        this.o.db,
        `INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_id, body, status, next_at, created_at)
           VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
      ).run(newId("whd"), hook.webhook_id, eventId, body, now, now);
    }
    if (hooks.length > 0) setImmediate(() => this.schedule());
  }

  schedule(): void {
    if (this.closed) return;
    const next = statement(
      this.o.db,
      `SELECT MIN(next_at) AS at FROM webhook_deliveries WHERE status = 'pending'`,
    ).get() as {
      at: number | null;
    };
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (next.at === null) return;
    this.timer = setTimeout(() => void this.run(), Math.max(0, Math.min(next.at - this.o.now(), 60_000)));
  }

  private async run(): Promise<void> {
    if (this.running || this.closed) return;
    this.running = true;
    try {
      const due = statement(
        this.o.db,
        `SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_at <= ? ORDER BY next_at LIMIT 50`,
      ).all(this.o.now()) as DeliveryRow[];
      await Promise.all(due.map((d) => this.track(this.deliver(d))));
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  private track(p: Promise<void>): Promise<void> {
    this.inflight.add(p);
    return p.finally(() => this.inflight.delete(p));
  }

  private async deliver(d: DeliveryRow): Promise<void> {
    const hook = statement(this.o.db, `SELECT * FROM webhooks WHERE webhook_id = ?`).get(d.webhook_id) as
      WebhookRow | undefined;
    if (!hook) {
      statement(this.o.db, `DELETE FROM webhook_deliveries WHERE delivery_id = ?`).run(d.delivery_id);
      return;
    }
    try {
      await this.o.durable();
    } catch (e) {
      // Nothing reached the disk for sure any more: no event may leave (the sandbox needs a restart).
      if (!this.closed) this.o.log(`webhooks stopped: ${(e as Error).message}`);
      this.closed = true;
      return;
    }
    const timestamp = Math.floor(this.o.now() / 1000);
    let error: string | undefined;
    try {
      const status = await this.post(
        new URL(hook.url),
        {
          "content-type": "application/json",
          "user-agent": "paid-actions-sandbox-webhooks/1",
          "webhook-id": d.event_id,
          "webhook-signature": signWebhook(hook.secret, timestamp, d.body),
        },
        d.body,
      );
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (e) {
      if (e instanceof WebhookTargetRefused) {
        error = `refused: ${e.message}`;
        this.o.log(`webhook ${hook.webhook_id}: not delivering event ${d.event_id}: ${e.message}`);
      } else {
        error =
          (e as Error).name === "AbortError" || (e as Error).name === "TimeoutError"
            ? "timed out"
            : "connection failed";
      }
    }
    if (this.closed) return;
    const attempts = d.attempts + 1;
    if (!error) {
      statement(
        this.o.db,
        `UPDATE webhook_deliveries SET status = 'delivered', attempts = ?, next_at = NULL, last_error = NULL WHERE delivery_id = ?`,
      ).run(attempts, d.delivery_id);
    } else if (attempts >= MAX_ATTEMPTS) {
      statement(
        this.o.db,
        `UPDATE webhook_deliveries SET status = 'failed', attempts = ?, next_at = NULL, last_error = ? WHERE delivery_id = ?`,
      ).run(attempts, error, d.delivery_id);
      this.o.log(`webhook ${hook.webhook_id}: gave up on event ${d.event_id} after ${attempts} attempts (${error})`);
    } else {
      const backoff = Math.min(3_600_000, 1000 * 2 ** (attempts - 1));
      statement(
        this.o.db,
        `UPDATE webhook_deliveries SET attempts = ?, next_at = ?, last_error = ? WHERE delivery_id = ?`,
      ).run(attempts, this.o.now() + backoff, error, d.delivery_id);
    }
  }

  /**
   * POSTs a delivery: the host is resolved and checked again now, and the connection goes
   * to the address that was checked (no second lookup). No redirects are followed.
   */
  private async post(url: URL, headers: Record<string, string>, body: string): Promise<number> {
    const [target] = await resolveWebhookTarget(url, this.o);
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<number>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(target!),
        agent: false,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      req.on("response", (res) => {
        res.on("error", () => undefined);
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.inflight]);
  }
}
