/**
 * The sandbox's HTTP surface: routing of the v1 API and the Solana JSON-RPC endpoint,
 * and what every request goes through first — request ids, bearer auth (constant time),
 * per-key (and per-address, unauthenticated) rate limiting, body limits and JSON parsing,
 * and Stripe-style idempotency.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type Database from "better-sqlite3";
import { newId } from "../../domain/ids.js";
import { ApiError } from "./errors.js";
import { errorReply, readJsonBody, send } from "./io.js";
import { withIdempotency } from "./idempotency.js";
import type { Ledger } from "../ledger/ledger.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";
import { buildRoutes, type Ctx, type Route } from "./routes.js";
import { handleRpc, stringifyRpc } from "../ledger/rpc.js";
import type { SandboxService } from "../service/service.js";
import type { Webhooks } from "../service/webhooks.js";

export { MAX_BODY_BYTES } from "./io.js";
export { clearUnfinishedIdempotency } from "./idempotency.js";
export type { RateLimit } from "./rate-limit.js";

export interface HttpOptions {
  service: SandboxService;
  webhooks: Webhooks;
  ledger: Ledger;
  db: Database.Database;
  apiKeys: string[];
  rateLimit: RateLimit;
  /** Per client address on /solana; default: `rateLimit`. */
  rpcRateLimit?: RateLimit;
  now: () => number;
  log: (line: string) => void;
}

export function tenantOf(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

export function createHttpHandler(o: HttpOptions) {
  const keyDigests = o.apiKeys.map((k) => ({ digest: createHash("sha256").update(k).digest(), tenant: tenantOf(k) }));
  const takeToken = createRateLimiter(o.rateLimit, o.now);
  const takeRpcToken = createRateLimiter(o.rpcRateLimit ?? o.rateLimit, o.now);
  const routes = buildRoutes(o.service, o.webhooks);

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

  let draining = false;
  const inflight = new Set<string>();
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = newId("req", 16);
    res.setHeader("X-Request-Id", requestId);
    try {
      if (draining) {
        req.resume();
        throw new ApiError(
          503,
          "unavailable",
          "the service is shutting down; retry with the same Idempotency-Key",
          {},
          {
            "Retry-After": "1",
            Connection: "close",
          },
        );
      }
      const url = new URL(req.url ?? "/", "http://sandbox.invalid");
      const method = req.method ?? "GET";
      if (url.pathname === "/solana" || url.pathname === "/solana/") {
        return await handleSolana(o.ledger, takeRpcToken, req, res, requestId);
      }
      if (url.pathname === "/health") return send(res, { status: 200, body: { ok: true } });
      if (!url.pathname.startsWith("/v1/"))
        throw new ApiError(404, "not_found", `no such path ${url.pathname}; the API lives under /v1`);
      const path = url.pathname.slice(3);

      const tenant = authenticate(req.headers.authorization);
      if (!tenant) {
        // Key guessing is throttled too, per client address.
        const wait = takeToken(`anon:${req.socket.remoteAddress ?? "?"}`);
        if (wait > 0) {
          throw new ApiError(
            429,
            "rate_limited",
            `too many unauthenticated requests; retry after ${wait} s`,
            { retryAfter: wait },
            { "Retry-After": String(wait) },
          );
        }
        throw new ApiError(
          401,
          "unauthorized",
          "missing or unknown API key: send Authorization: Bearer <API_KEY>",
          {},
          {
            "WWW-Authenticate": 'Bearer realm="paid-actions-sandbox"',
          },
        );
      }
      const wait = takeToken(tenant);
      if (wait > 0) {
        throw new ApiError(
          429,
          "rate_limited",
          `too many requests for this API key; retry after ${wait} s`,
          { retryAfter: wait },
          {
            "Retry-After": String(wait),
          },
        );
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
      if (route.mutating)
        return send(res, await withIdempotency(o, ctx, inflight, () => route!.handler(ctx, params)), requestId);
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

// ---- Solana JSON-RPC ---------------------------------------------------------------

/**
 * POST /solana: JSON-RPC 2.0 over the ledger. Throttled per client address like
 * unauthenticated /v1 requests (a batch costs one token per call), answering 429 with
 * Retry-After and a JSON-RPC error.
 */
async function handleSolana(
  ledger: Ledger,
  takeToken: (caller: string, cost?: number) => number,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): Promise<void> {
  const reply = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
    const text = stringifyRpc(payload);
    res.statusCode = status;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.setHeader("Content-Type", "application/json");
    res.setHeader("X-Request-Id", requestId);
    res.setHeader("Content-Length", Buffer.byteLength(text));
    res.end(text);
  };
  const caller = `rpc:${req.socket.remoteAddress ?? "?"}`;
  const limited = (wait: number) =>
    reply(
      429,
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32005, message: `Too many requests: retry after ${wait} s`, data: { retryAfter: wait } },
      },
      {
        "Retry-After": String(wait),
      },
    );
  const wait = takeToken(caller);
  if (wait > 0) {
    req.resume();
    return limited(wait);
  }
  if (req.method !== "POST") {
    req.resume();
    return reply(405, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "JSON-RPC over POST only" } });
  }
  let body: unknown;
  try {
    body = (await readJsonBody(req, "POST")).body;
  } catch (e) {
    const tooLarge = e instanceof ApiError && e.status === 413;
    return reply(tooLarge ? 413 : 200, {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: tooLarge ? "Request too large" : "Parse error" },
    });
  }
  // A batch costs one token per call; the first was taken above.
  const extra = Array.isArray(body) ? Math.min(body.length, 100) - 1 : 0;
  const batchWait = extra > 0 ? takeToken(caller, extra) : 0;
  if (batchWait > 0) return limited(batchWait);
  reply(200, handleRpc(ledger, body));
}
