/**
 * The sandbox's HTTP surface: routing of the v1 API, the Solana JSON-RPC endpoint, the x402
 * facilitator (/facilitator, facilitator/api.ts) and the paid resources (/x402,
 * resources/server.ts), and what every request goes through first — request ids, bearer
 * auth (constant time), per-key (and per-address, unauthenticated) rate limiting (auth.ts),
 * body limits and JSON parsing, Stripe-style idempotency, and answers held until what they
 * tell is on disk (durable-reply.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type Database from "better-sqlite3";
import { newId } from "../../domain/ids.js";
import type { GroupSync } from "../group-sync.js";
import { createAuthGate } from "./auth.js";
import { holdUntilDurable } from "./durable-reply.js";
import { ApiError } from "./errors.js";
import { errorReply, readJsonBody, send } from "./io.js";
import { withIdempotency } from "./idempotency.js";
import type { Ledger } from "../ledger/ledger.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";
import { buildRoutes, matchRoute, type Ctx } from "./routes.js";
import { handleSolana } from "./solana-rpc.js";
import type { SandboxService } from "../service/service.js";
import type { Webhooks } from "../service/webhooks.js";

export { MAX_BODY_BYTES } from "./io.js";
export { clearUnfinishedIdempotency } from "./idempotency.js";
export type { RateLimit } from "./rate-limit.js";

/** A part of the surface with a path prefix of its own; `url.pathname` starts with its prefix. */
export type PrefixHandler = (req: IncomingMessage, res: ServerResponse, url: URL, requestId: string) => Promise<void>;

export interface HttpOptions {
  service: SandboxService;
  /** Everything under /facilitator. */
  facilitator: PrefixHandler;
  /** Everything under /x402. */
  paidResources: PrefixHandler;
  webhooks: Webhooks;
  ledger: Ledger;
  db: Database.Database;
  /** The store's group fsync: every answer waits for it (durable-reply.ts). */
  sync: GroupSync;
  apiKeys: string[];
  rateLimit: RateLimit;
  /** Per client address on /solana; default: `rateLimit`. */
  rpcRateLimit?: RateLimit;
  now: () => number;
  log: (line: string) => void;
}

/** What a draining service answers every request: safe to retry. */
function shuttingDown(): ApiError {
  return new ApiError(
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

export function createHttpHandler(o: HttpOptions) {
  const admit = createAuthGate(o);
  const takeRpcToken = createRateLimiter(o.rpcRateLimit ?? o.rateLimit, o.now);
  const routes = buildRoutes(o.service, o.webhooks);

  let draining = false;
  const inflight = new Set<string>();
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = newId("req", 16);
    holdUntilDurable(res, o.sync, o.log);
    res.setHeader("X-Request-Id", requestId);
    try {
      if (draining) {
        req.resume();
        throw shuttingDown();
      }
      const url = new URL(req.url ?? "/", "http://sandbox.invalid");
      const method = req.method ?? "GET";
      if (url.pathname === "/solana" || url.pathname === "/solana/") {
        return await handleSolana(o.ledger, takeRpcToken, req, res, requestId);
      }
      if (url.pathname === "/health") return send(res, { status: 200, body: { ok: true } });
      if (url.pathname === "/facilitator" || url.pathname.startsWith("/facilitator/")) {
        return await o.facilitator(req, res, url, requestId);
      }
      if (url.pathname.startsWith("/x402/")) return await o.paidResources(req, res, url, requestId);
      if (!url.pathname.startsWith("/v1/"))
        throw new ApiError(404, "not_found", `no such path ${url.pathname}; the API lives under /v1`);
      const path = url.pathname.slice(3);

      const tenant = admit(req);
      const { route, params } = matchRoute(routes, method, path);

      const { body, raw } = await readJsonBody(req, method);
      const ctx: Ctx = { requestId, tenant, method, path: url.pathname, req, body, rawBody: raw };
      if (route.mutating)
        return send(res, await withIdempotency(o, ctx, inflight, () => route.handler(ctx, params)), requestId);
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
