/**
 * Who may call /v1: bearer API keys compared in constant time (a tenant is the hash of its
 * key), and the per-key rate limit — per client address for callers without a valid key,
 * so key guessing is throttled too.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { ApiError } from "./errors.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";

export function tenantOf(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

/** Constant-time: every configured key is compared, whatever matches. Returns the tenant, if any. */
function createAuthenticator(apiKeys: string[]): (header: string | undefined) => string | undefined {
  const keyDigests = apiKeys.map((k) => ({ digest: createHash("sha256").update(k).digest(), tenant: tenantOf(k) }));
  return (header) => {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? "");
    if (!m) return undefined;
    const presented = createHash("sha256").update(m[1]!).digest();
    let tenant: string | undefined;
    for (const k of keyDigests) {
      if (timingSafeEqual(presented, k.digest)) tenant = k.tenant;
    }
    return tenant;
  };
}

/**
 * The gate in front of /v1: answers the caller's tenant, or throws 401 unauthorized
 * (429 rate_limited first, when an address without a valid key tries too often) or
 * 429 rate_limited for a key over its rate.
 */
export function createAuthGate(o: {
  apiKeys: string[];
  rateLimit: RateLimit;
  now: () => number;
}): (req: IncomingMessage) => string {
  const authenticate = createAuthenticator(o.apiKeys);
  const takeToken = createRateLimiter(o.rateLimit, o.now);
  return (req) => {
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
    return tenant;
  };
}
