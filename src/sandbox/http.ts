/**
 * The sandbox's HTTP surface: routing of the v1 API and the Solana JSON-RPC endpoint,
 * and what every request goes through first — request ids, bearer auth (constant time),
 * per-key rate limiting, body limits and JSON parsing, and Stripe-style idempotency.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type Database from "better-sqlite3";
import { z } from "zod";
import { canonicalJson, ExecutionRequest, QuoteRequest, type ErrorCode } from "../domain/wire.js";
import { AgentServicesSearch, searchAgentServices } from "./agent-services.js";
import { ApiError, invalidRequest, zodIssues } from "./errors.js";
import { newId } from "../domain/ids.js";
import type { Ledger } from "./ledger.js";
import { handleRpc, stringifyRpc } from "./rpc.js";
import type { Outcome, SandboxService } from "./service.js";
import type { Webhooks } from "./webhooks.js";

export const MAX_BODY_BYTES = 64 * 1024;
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const IDEMPOTENCY_TTL_MS = 48 * 3_600_000;

export interface RateLimit {
  /** Sustained requests per second per API key. */
  perSecond: number;
  /** Bucket size: requests allowed in a burst. */
  burst: number;
}

export interface HttpOptions {
  service: SandboxService;
  webhooks: Webhooks;
  ledger: Ledger;
  db: Database.Database;
  apiKeys: string[];
  rateLimit: RateLimit;
  now: () => number;
  log: (line: string) => void;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface Ctx {
  requestId: string;
  tenant: string;
  method: string;
  path: string;
  req: IncomingMessage;
  body: unknown;
  rawBody: string;
}

type Handler = (ctx: Ctx, params: string[]) => Reply | Promise<Reply>;

interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
  /** State-changing: goes through idempotency. */
  mutating: boolean;
}

const ID = "([A-Za-z0-9_.-]{1,128})";

export function tenantOf(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

export function createHttpHandler(o: HttpOptions) {
  const keyDigests = o.apiKeys.map((k) => ({ digest: createHash("sha256").update(k).digest(), tenant: tenantOf(k) }));
  const buckets = new Map<string, { tokens: number; at: number }>();
  const routes = buildRoutes(o);

  /** Constant-time: every configured key is compared, whatever matches. */
  function authenticate(header: string | undefined): string | undefined {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? "");
    if (!m) return undefined;
    const presented = createHash("sha256").update(m[1]!).digest();
    let tenant: string | undefined;
    for (const k of keyDigests) {
      if (timingSafeEqual(presented, k.digest)) tenant = k.tenant;
    }
    return tenant;
  }

  function takeToken(tenant: string): number {
    const now = o.now();
    const b = buckets.get(tenant) ?? { tokens: o.rateLimit.burst, at: now };
    b.tokens = Math.min(o.rateLimit.burst, b.tokens + ((now - b.at) / 1000) * o.rateLimit.perSecond);
    b.at = now;
    buckets.set(tenant, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / o.rateLimit.perSecond));
  }

  let draining = false;
  const inflight = new Set<string>();
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = newId("req", 16);
    res.setHeader("X-Request-Id", requestId);
    try {
      if (draining) {
        req.resume();
        throw new ApiError(503, "unavailable", "the service is shutting down; retry with the same Idempotency-Key", {}, {
          "Retry-After": "1",
          Connection: "close",
        });
      }
      const url = new URL(req.url ?? "/", "http://sandbox.invalid");
      const method = req.method ?? "GET";
      if (url.pathname === "/solana" || url.pathname === "/solana/") {
        return await handleSolana(o, req, res, requestId);
      }
      if (url.pathname === "/health") return send(res, { status: 200, body: { ok: true } });
      if (!url.pathname.startsWith("/v1/")) throw new ApiError(404, "not_found", `no such path ${url.pathname}; the API lives under /v1`);
      const path = url.pathname.slice(3);

      const tenant = authenticate(req.headers.authorization);
      if (!tenant) {
        // Key guessing is throttled too, per client address.
        const wait = takeToken(`anon:${req.socket.remoteAddress ?? "?"}`);
        if (wait > 0) {
          throw new ApiError(429, "rate_limited", `too many unauthenticated requests; retry after ${wait} s`, { retryAfter: wait }, { "Retry-After": String(wait) });
        }
        throw new ApiError(401, "unauthorized", "missing or unknown API key: send Authorization: Bearer <API_KEY>", {}, {
          "WWW-Authenticate": 'Bearer realm="paid-actions-sandbox"',
        });
      }
      const wait = takeToken(tenant);
      if (wait > 0) {
        throw new ApiError(429, "rate_limited", `too many requests for this API key; retry after ${wait} s`, { retryAfter: wait }, {
          "Retry-After": String(wait),
        });
      }

      let route: Route | undefined;
      let params: string[] = [];
      for (const r of routes) {
        const m = r.pattern.exec(path);
        if (m && r.method === method) {
          route = r;
          params = m.slice(1).map((p) => decodeURIComponent(p));
          break;
        }
      }
      if (!route) throw new ApiError(404, "not_found", `no endpoint ${method} /v1${path}`);

      const { body, raw } = await readJsonBody(req, method);
      const ctx: Ctx = { requestId, tenant, method, path: url.pathname, req, body, rawBody: raw };
      if (route.mutating) return send(res, await withIdempotency(o, ctx, inflight, () => route!.handler(ctx, params)), requestId);
      return send(res, await route.handler(ctx, params), requestId);
    } catch (e) {
      return send(res, errorReply(e, requestId, o.log), requestId);
    }
  }
  /** From now on, every request is answered 503 unavailable (safe to retry). */
  handle.drain = () => {
    draining = true;
  };
  return handle;
}

function errorReply(e: unknown, requestId: string, log: (line: string) => void): Reply {
  const sqliteCode = (e as { code?: unknown })?.code;
  if (sqliteCode === "SQLITE_BUSY" || sqliteCode === "SQLITE_LOCKED") {
    e = new ApiError(503, "unavailable", "the service's storage is busy; retry with the same Idempotency-Key", {}, { "Retry-After": "1" });
  }
  if (e instanceof ApiError) {
    return {
      status: e.status,
      body: { error: { code: e.code, message: e.message, requestId, ...e.details } },
      headers: e.headers,
    };
  }
  log(`internal error on ${requestId}: ${(e as Error)?.stack ?? String(e)}`);
  return {
    status: 500,
    body: { error: { code: "internal_error" satisfies ErrorCode, message: "internal error; nothing was half-written, retry with the same key", requestId } },
  };
}

function send(res: ServerResponse, reply: Reply, requestId?: string): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(reply.body);
  res.statusCode = reply.status;
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (requestId) res.setHeader("X-Request-Id", requestId);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** Reads at most 64 KiB; parses JSON; strict about content type and UTF-8. */
async function readJsonBody(req: IncomingMessage, method: string): Promise<{ body: unknown; raw: string }> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    throw new ApiError(413, "payload_too_large", `request bodies are limited to ${MAX_BODY_BYTES} bytes`, { limit: MAX_BODY_BYTES });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.resume();
      throw new ApiError(413, "payload_too_large", `request bodies are limited to ${MAX_BODY_BYTES} bytes`, { limit: MAX_BODY_BYTES });
    }
    chunks.push(chunk);
  }
  if (size === 0) return { body: method === "GET" || method === "DELETE" ? undefined : {}, raw: "" };
  const type = (req.headers["content-type"] ?? "").toLowerCase();
  if (!/^application\/json\s*(;|$)/.test(type)) {
    throw new ApiError(415, "unsupported_media_type", "request bodies must be JSON, sent with Content-Type: application/json");
  }
  let raw: string;
  try {
    raw = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw invalidRequest("the body is not valid UTF-8", [{ path: "", message: "invalid UTF-8" }]);
  }
  try {
    return { body: JSON.parse(raw), raw };
  } catch {
    throw invalidRequest("the body is not valid JSON", [{ path: "", message: "malformed JSON" }]);
  }
}

// ---- Idempotency (Stripe semantics) -------------------------------------------------

interface IdemRow {
  fingerprint: string;
  state: "running" | "done";
  status: number | null;
  headers: string | null;
  body: string | null;
}

/**
 * Outcomes a retry with the same key must run again: 5xx, the 402 pay-and-retry branch,
 * and a transient idempotency_in_progress (another request was settling the same payment).
 */
function storable(reply: Reply): boolean {
  const code = (reply.body as { error?: { code?: unknown } } | undefined)?.error?.code;
  return reply.status < 500 && reply.status !== 402 && code !== "idempotency_in_progress";
}

/**
 * `inflight` holds the keys this process is running right now. A 'running' row that is not
 * in it belongs to a request that died (a crash, or a write that failed while storing its
 * outcome): the same request may take it over.
 */
async function withIdempotency(o: HttpOptions, ctx: Ctx, inflight: Set<string>, run: () => Reply | Promise<Reply>): Promise<Reply> {
  const key = ctx.req.headers["idempotency-key"];
  if (key === undefined) return run();
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    throw invalidRequest("Idempotency-Key must be 1-255 printable ASCII characters", [
      { path: "header.Idempotency-Key", message: "1-255 printable ASCII characters" },
    ]);
  }
  const quoteHeader = ctx.req.headers["x-quote-id"];
  const fingerprint = createHash("sha256")
    .update(canonicalJson({ method: ctx.method, path: ctx.path, body: ctx.body ?? null, quote: quoteHeader ?? null }))
    .digest("hex");
  const id = { tenant: ctx.tenant, key, method: ctx.method, path: ctx.path };
  const flightKey = `${ctx.tenant}\n${key}\n${ctx.method}\n${ctx.path}`;

  // Check and claim in one synchronous transaction, before the first await.
  const claim = o.db.transaction((): IdemRow | undefined => {
    const row = o.db
      .prepare(`SELECT fingerprint, state, status, headers, body, created_at FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`)
      .get(id) as (IdemRow & { created_at: number }) | undefined;
    const stale = row !== undefined && row.state === "running" && !inflight.has(flightKey) && row.fingerprint === fingerprint;
    if (row && !stale && row.created_at > o.now() - IDEMPOTENCY_TTL_MS) return row;
    if (row) o.db.prepare(`DELETE FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`).run(id);
    o.db
      .prepare(`INSERT INTO idempotency (tenant, key, method, path, fingerprint, state, created_at) VALUES (@tenant, @key, @method, @path, @fingerprint, 'running', @now)`)
      .run({ ...id, fingerprint, now: o.now() });
    return undefined;
  })();

  if (claim) {
    if (claim.fingerprint !== fingerprint) {
      throw new ApiError(422, "idempotency_key_reused", "this Idempotency-Key was used with a different request; use a new key for a new intent");
    }
    if (claim.state === "running") {
      throw new ApiError(409, "idempotency_in_progress", "a request with this Idempotency-Key is still running; retry shortly", {}, { "Retry-After": "1" });
    }
    return {
      status: claim.status!,
      body: JSON.parse(claim.body!) as unknown,
      headers: { ...(JSON.parse(claim.headers ?? "{}") as Record<string, string>), "Idempotent-Replayed": "true" },
    };
  }

  let reply: Reply;
  inflight.add(flightKey);
  try {
    reply = await run();
  } catch (e) {
    reply = errorReply(e, ctx.requestId, o.log);
  } finally {
    inflight.delete(flightKey);
  }
  try {
    if (storable(reply)) {
      o.db
        .prepare(`UPDATE idempotency SET state = 'done', status = @status, headers = @headers, body = @body WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`)
        .run({ ...id, status: reply.status, headers: JSON.stringify(reply.headers ?? {}), body: JSON.stringify(reply.body) });
    } else {
      o.db.prepare(`DELETE FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`).run(id);
    }
  } catch (e) {
    // The row stays 'running' without an owner: a retry with the same key takes it over.
    o.log(`could not record the outcome of ${ctx.method} ${ctx.path} (key kept for a retry): ${(e as Error).message}`);
  }
  return reply;
}

/** At start: requests that were running when the process died never finished; forget them. */
export function clearUnfinishedIdempotency(db: Database.Database, now: number): void {
  db.prepare(`DELETE FROM idempotency WHERE state = 'running'`).run();
  db.prepare(`DELETE FROM idempotency WHERE created_at < ?`).run(now - IDEMPOTENCY_TTL_MS);
}

// ---- Routes ---------------------------------------------------------------------

function parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw invalidRequest(`invalid ${what}`, zodIssues(result.error.issues));
  return result.data;
}

const JsonObject = z.record(z.string(), z.unknown());

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function sandboxControls(req: IncomingMessage): { outcome: Outcome; delayMs?: number } {
  const outcomeHeader = header(req, "x-sandbox-outcome");
  if (outcomeHeader !== undefined && outcomeHeader !== "fail" && outcomeHeader !== "succeed") {
    throw invalidRequest("X-Sandbox-Outcome must be 'fail' or 'succeed'", [{ path: "header.X-Sandbox-Outcome", message: "fail or succeed" }]);
  }
  const delayHeader = header(req, "x-sandbox-delay-ms");
  let delayMs: number | undefined;
  if (delayHeader !== undefined) {
    delayMs = Number(delayHeader);
    if (!/^\d{1,7}$/.test(delayHeader) || delayMs > 3_600_000) {
      throw invalidRequest("X-Sandbox-Delay-Ms must be an integer 0-3600000", [{ path: "header.X-Sandbox-Delay-Ms", message: "0-3600000" }]);
    }
  }
  return { outcome: outcomeHeader === "fail" ? "fail" : "succeed", delayMs };
}

function buildRoutes(o: HttpOptions): Route[] {
  const { service, webhooks } = o;

  /** POST /executions and the paid dedicated endpoints share this. */
  const execute = async (ctx: Ctx, action: string, input: Record<string, unknown>): Promise<Reply> => {
    const proof = header(ctx.req, "x-payment-proof") ?? header(ctx.req, "payment-signature") ?? header(ctx.req, "x-payment");
    const { execution, payment } = await service.createExecution(ctx.tenant, {
      action,
      input,
      quoteId: header(ctx.req, "x-quote-id"),
      proof,
      ...sandboxControls(ctx.req),
    });
    const settle = { success: true, transaction: payment.transaction_sig, network: service.paymentView(payment).network, payer: payment.payer };
    return {
      status: 201,
      body: execution,
      headers: {
        "PAYMENT-RESPONSE": Buffer.from(JSON.stringify(settle)).toString("base64"),
        Location: `/v1/executions/${String(execution.executionId)}`,
      },
    };
  };

  const dedicated = (actionName: string) => async (ctx: Ctx) => {
    const input = parse(JsonObject, ctx.body, `${actionName} body`);
    return execute(ctx, actionName, input);
  };

  const r = (method: string, path: string, handler: Handler, mutating = method !== "GET"): Route => ({
    method,
    pattern: new RegExp(`^${path.replace(/:id/g, ID)}$`),
    handler,
    mutating,
  });

  return [
    r("GET", "/actions", () => ({ status: 200, body: service.listActions() })),
    r("GET", "/actions/:id", (_ctx, [name]) => ({ status: 200, body: service.getAction(name!) })),
    r("POST", "/quotes", (ctx) => {
      const body = ctx.body as { budget?: { currency?: unknown } } | undefined;
      if (body?.budget && typeof body.budget.currency === "string" && body.budget.currency !== "USDC") {
        throw new ApiError(400, "unsupported_currency", `budget.currency ${JSON.stringify(body.budget.currency)} is not supported; use USDC`);
      }
      const q = parse(QuoteRequest, ctx.body, "quote request");
      return { status: 201, body: service.createQuote(ctx.tenant, q.action, q.input, q.budget).view };
    }),
    r("GET", "/quotes/:id", (ctx, [id]) => ({ status: 200, body: service.getQuote(ctx.tenant, id!) })),
    r("POST", "/payments/prepare", (ctx) => {
      const { quoteId } = parse(z.object({ quoteId: z.string().min(1).max(128) }), ctx.body, "prepare request");
      return { status: 200, body: service.prepare(ctx.tenant, quoteId) };
    }),
    r("POST", "/payments/confirm", async (ctx) => {
      const { quoteId, paymentProof } = parse(
        z.object({ quoteId: z.string().min(1).max(128), paymentProof: z.string().min(1).max(16_384) }),
        ctx.body,
        "confirm request",
      );
      return { status: 200, body: await service.confirm(ctx.tenant, quoteId, paymentProof) };
    }),
    r("POST", "/executions", (ctx) => {
      const e = parse(ExecutionRequest, ctx.body, "execution request");
      return execute(ctx, e.action, e.input);
    }),
    r("GET", "/executions", (ctx) => {
      const url = new URL(ctx.req.url ?? "/", "http://x");
      const q = parse(
        z.object({
          status: z.enum(["pending", "processing", "completed", "failed", "refunded"]).optional(),
          limit: z.coerce.number().int().min(1).max(100).default(20),
          cursor: z.string().max(200).optional(),
        }),
        Object.fromEntries(url.searchParams),
        "query",
      );
      return { status: 200, body: service.listExecutions(ctx.tenant, q) };
    }),
    r("GET", "/executions/:id", (ctx, [id]) => ({ status: 200, body: service.getExecution(ctx.tenant, id!) })),
    r("POST", "/companies", dedicated("companies.create")),
    r("GET", "/companies/:id", (ctx, [id]) => ({ status: 200, body: service.getCompany(ctx.tenant, id!) })),
    r("POST", "/servers/provision", dedicated("servers.provision")),
    r("GET", "/servers/:id", (ctx, [id]) => ({ status: 200, body: service.getServer(ctx.tenant, id!) })),
    r("POST", "/servers/:id/renew", async (ctx, [serverId]) => {
      const body = parse(JsonObject, ctx.body, "renew body");
      return execute(ctx, "servers.renew", { ...body, serverId: serverId! });
    }),
    r("POST", "/domains/register", dedicated("domains.register")),
    r("POST", "/storage/purchase", dedicated("storage.purchase")),
    r("POST", "/agent-services/search", (ctx) => ({
      status: 200,
      body: searchAgentServices(parse(AgentServicesSearch, ctx.body, "search request")),
    }), false),
    r("POST", "/agent-services/purchase", dedicated("agent-services.purchase")),
    r("POST", "/webhooks", (ctx) => ({ status: 201, body: webhooks.create(ctx.tenant, ctx.body) })),
    r("GET", "/webhooks", (ctx) => ({ status: 200, body: webhooks.list(ctx.tenant) })),
    r("DELETE", "/webhooks/:id", (ctx, [id]) => ({ status: 200, body: webhooks.delete(ctx.tenant, id!) })),
  ];
}

// ---- Solana JSON-RPC ---------------------------------------------------------------

async function handleSolana(o: HttpOptions, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
  const reply = (status: number, payload: unknown) => {
    const text = stringifyRpc(payload);
    res.statusCode = status;
    res.setHeader("Content-Type", "application/json");
    res.setHeader("X-Request-Id", requestId);
    res.setHeader("Content-Length", Buffer.byteLength(text));
    res.end(text);
  };
  if (req.method !== "POST") {
    req.resume();
    return reply(405, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "JSON-RPC over POST only" } });
  }
  let body: unknown;
  try {
    body = (await readJsonBody(req, "POST")).body;
  } catch (e) {
    const tooLarge = e instanceof ApiError && e.status === 413;
    return reply(tooLarge ? 413 : 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: tooLarge ? "Request too large" : "Parse error" } });
  }
  reply(200, handleRpc(o.ledger, body));
}
