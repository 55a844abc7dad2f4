/**
 * The blockhash payments are signed with, fetched from our own RPC ahead of the signature:
 * a paid call starts the fetch when it asks for its quote (warm), so the RPC round trip runs
 * beside the service's and the signature waits for it only if the RPC is the slower of the
 * two. The blockhash is as fresh as the quote request, as it would be fetched at the
 * signature. When that fetch fails, the last one fetched is used while it is young (a
 * cluster honours a blockhash for about a minute); else the call waits for a fetch of its
 * own. A proof that can never land drops the one held (its blockhash may be the reason).
 *
 * Ages are measured from when the fetch began, so a slow answer is counted older, never younger.
 */
import type { Lifetime } from "./chain.js";

/** The last one fetched is signed with up to this age when a fresher one cannot be had (10 s). */
export const LIFETIME_MAX_AGE_MS = 10_000;

/** Whether a blockhash fetched `age` ms ago may still be signed with. */
export function young(age: number, maxAgeMs = LIFETIME_MAX_AGE_MS): boolean {
  return age >= 0 && age < maxAgeMs;
}

export class Lifetimes {
  private held: { lifetime: Lifetime; at: number } | undefined;
  private fetching: Promise<Lifetime> | undefined;
  /** Moved on by drop(): a fetch begun before it neither serves nor sets what comes after. */
  private generation = 0;

  constructor(
    private readonly latest: () => Promise<Lifetime>,
    private readonly now: () => number,
    private readonly maxAgeMs = LIFETIME_MAX_AGE_MS,
  ) {}

  /** Starts a fetch ahead (unless one is under way): a paid call does it beside its quote request. */
  warm(): void {
    this.fetch().catch(() => undefined); // a failure is met by the call that takes one
  }

  /** A blockhash to sign with now: the fetch under way, else the one held while young, else a fetch now. */
  async take(): Promise<Lifetime> {
    const held = this.held;
    const usable = held && young(this.now() - held.at, this.maxAgeMs) ? held.lifetime : undefined;
    if (this.fetching) {
      try {
        return await this.fetching;
      } catch (e) {
        if (usable && this.held === held) return usable;
        throw e;
      }
    }
    return usable ?? this.fetch();
  }

  /** Forgets the one held: the next call fetches a fresh one. */
  drop(): void {
    this.held = undefined;
    this.fetching = undefined;
    this.generation++;
  }

  private fetch(): Promise<Lifetime> {
    if (this.fetching) return this.fetching;
    const generation = this.generation;
    const fetching = (async () => {
      const at = this.now();
      const lifetime = await this.latest();
      if (generation === this.generation) this.held = { lifetime, at };
      return lifetime;
    })().finally(() => {
      if (this.fetching === fetching) this.fetching = undefined;
    });
    this.fetching = fetching;
    return fetching;
  }
}
