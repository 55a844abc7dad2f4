/**
 * Token buckets, one per caller (an API key's tenant, or a client address): a burst, then
 * a sustained rate. `take` answers how many seconds to wait (0: go ahead).
 */
export interface RateLimit {
  /** Sustained requests per second per caller. */
  perSecond: number;
  /** Bucket size: requests allowed in a burst. */
  burst: number;
}

export function createRateLimiter(limit: RateLimit, now: () => number) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  /** Takes `cost` tokens (at most a whole burst) from `caller`'s bucket; returns the seconds to wait, 0 when taken. */
  return function take(caller: string, cost = 1): number {
    const t = now();
    const need = Math.max(1, Math.min(cost, limit.burst));
    const b = buckets.get(caller) ?? { tokens: limit.burst, at: t };
    b.tokens = Math.min(limit.burst, b.tokens + ((t - b.at) / 1000) * limit.perSecond);
    b.at = t;
    buckets.set(caller, b);
    if (b.tokens >= need) {
      b.tokens -= need;
      return 0;
    }
    return Math.max(1, Math.ceil((need - b.tokens) / limit.perSecond));
  };
}
