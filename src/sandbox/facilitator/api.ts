/**
 * `<sandbox>/facilitator`: the facilitator's HTTP surface, as `@x402/core`'s
 * `HTTPFacilitatorClient` and `@x402/extensions/bazaar`'s `withBazaar` call it —
 * `GET /supported`, `POST /verify`, `POST /settle`, `GET /discovery/resources`,
 * `GET /discovery/search`. No API key (sellers call it), but every request is throttled per
 * client address and bodies are read bounded (http/io.ts). A malformed request is answered
 * 400 in the shape the client turns into a typed error (`isValid` / `success` false).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { EvmPaymentPayload, PaymentPayload, PaymentRequirements } from "../../domain/wire.js";
import { isEvmNetwork } from "../evm/settle.js";
import { ApiError } from "../http/errors.js";
import { errorReply, readJsonBody, send, type Reply } from "../http/io.js";
import { createRateLimiter, type RateLimit } from "../http/rate-limit.js";
import type { DiscoveryCatalog, DiscoveryFilter } from "./discovery.js";
import type { FacilitatorRequest, SandboxFacilitator } from "./facilitator.js";

export interface FacilitatorApiOptions {
  facilitator: SandboxFacilitator;
  catalog: DiscoveryCatalog;
  /** Per client address. */
  rateLimit: RateLimit;
  now: () => number;
  log: (line: string) => void;
}

const WireRequest = z.object({
  x402Version: z.number().int().optional(),
  paymentPayload: PaymentPayload,
  paymentRequirements: PaymentRequirements,
});
/** A request for the EVM ledger: its payload is a signed EIP-3009 authorization, not a transaction. */
const EvmWireRequest = WireRequest.extend({ paymentPayload: EvmPaymentPayload });

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** How a failure of each POST endpoint is shaped, so the stock client reads it as a verify or settle failure. */
const failureBody = {
  verify: (reason: string, message: string) => ({ isValid: false, invalidReason: reason, invalidMessage: message }),
  settle: (reason: string, message: string) => ({
    success: false,
    errorReason: reason,
    errorMessage: message,
    transaction: "",
    network: "",
  }),
};

type Operation = keyof typeof failureBody;

const plainError = (status: number, message: string, headers: Record<string, string> = {}): Reply => ({
  status,
  body: { error: message },
  headers,
});

async function readRequest(req: IncomingMessage, op: Operation): Promise<FacilitatorRequest | Reply> {
  let body: unknown;
  try {
    body = (await readJsonBody(req, "POST")).body;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { status: e.status, body: failureBody[op]("invalid_payload", e.message) };
  }
  const network = (body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements?.network;
  const parsed = (isEvmNetwork(network) ? EvmWireRequest : WireRequest).safeParse(body);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") || "the body";
    const message = `expected {x402Version, paymentPayload, paymentRequirements}: ${where} is missing or malformed`;
    return { status: 400, body: failureBody[op]("invalid_payload", message) };
  }
  return parsed.data as unknown as FacilitatorRequest;
}

/** A query parameter as a bounded integer, or a 400 reply. */
function intParam(url: URL, name: string, fallback: number, min: number, max: number): number | Reply {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d{1,7}$/.test(raw) || value < min || value > max) {
    return plainError(400, `${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function filterOf(url: URL): DiscoveryFilter {
  const filter: DiscoveryFilter = {};
  for (const key of ["type", "payTo", "scheme", "network", "extensions"] as const) {
    const value = url.searchParams.get(key);
    if (value !== null) filter[key] = value;
  }
  return filter;
}

function discovery(catalog: DiscoveryCatalog, url: URL, search: boolean): Reply {
  const limit = intParam(url, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT);
  if (typeof limit !== "number") return limit;
  if (search) {
    const query = url.searchParams.get("query") ?? "";
    if (query.length > 500) return plainError(400, "query is limited to 500 characters");
    return { status: 200, body: catalog.search(query, filterOf(url), limit) };
  }
  const offset = intParam(url, "offset", 0, 0, 1_000_000);
  if (typeof offset !== "number") return offset;
  return { status: 200, body: catalog.list(filterOf(url), limit, offset) };
}

interface Route {
  method: "GET" | "POST";
  run: (o: FacilitatorApiOptions, req: IncomingMessage, url: URL) => Promise<Reply>;
}

const ROUTES = new Map<string, Route>([
  ["/supported", { method: "GET", run: async (o) => ({ status: 200, body: o.facilitator.supported() }) }],
  [
    "/verify",
    {
      method: "POST",
      run: async (o, req) => {
        const request = await readRequest(req, "verify");
        return "status" in request ? request : { status: 200, body: await o.facilitator.verify(request) };
      },
    },
  ],
  [
    "/settle",
    {
      method: "POST",
      run: async (o, req) => {
        const request = await readRequest(req, "settle");
        return "status" in request ? request : { status: 200, body: await o.facilitator.settle(request) };
      },
    },
  ],
  ["/discovery/resources", { method: "GET", run: async (o, _req, url) => discovery(o.catalog, url, false) }],
  ["/discovery/search", { method: "GET", run: async (o, _req, url) => discovery(o.catalog, url, true) }],
]);

/** The handler of every path under /facilitator; `url.pathname` starts with it. */
export function createFacilitatorApi(o: FacilitatorApiOptions) {
  const takeToken = createRateLimiter(o.rateLimit, o.now);
  return async function handleFacilitator(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    requestId: string,
  ): Promise<void> {
    const wait = takeToken(`facilitator:${req.socket.remoteAddress ?? "?"}`);
    if (wait > 0) {
      req.resume();
      return send(res, plainError(429, `too many requests; retry after ${wait} s`, { "Retry-After": String(wait) }));
    }
    const path = url.pathname.slice("/facilitator".length).replace(/\/+$/, "");
    const route = ROUTES.get(path);
    if (!route) {
      req.resume();
      return send(res, plainError(404, `no such facilitator path ${url.pathname}`));
    }
    if (req.method !== route.method) {
      req.resume();
      return send(res, plainError(405, `${path} takes ${route.method}`, { Allow: route.method }));
    }
    try {
      send(res, await route.run(o, req, url), requestId);
    } catch (e) {
      // Storage busy: 503, retry; anything else: 500 naming only the request id.
      send(res, errorReply(e, requestId, o.log), requestId);
    }
  };
}
