/**
 * The blockhash payments are signed with, fetched ahead from our own RPC and reused while it
 * is young, so that a paid call does not wait for an RPC round trip: when the one held has
 * aged a little, a fresh one is fetched behind it for the next call. Only when none is held,
 * or the one held is too old to sign with, does a call wait for the RPC. A proof that can
 * never land drops the one held (its blockhash may be the reason).
 *
 * Ages are measured from when the fetch began, so a slow answer is counted older, never younger.
 */
import type { Lifetime } from "./chain.js";

export interface LifetimeTiming {
  /** Signed with up to this age; older, a call fetches one itself (default 10 s: a cluster honours ~60 s). */
  maxAgeMs: number;
  /** From this age on, a fresh one is fetched in the background (default 2 s). */
  refreshAfterMs: number;
}

export const DEFAULT_LIFETIME_TIMING: LifetimeTiming = { maxAgeMs: 10_000, refreshAfterMs: 2_000 };

/** What the held blockhash is good for at `age` ms: signing at once (and whether to fetch behind it), or nothing. */
export function lifetimeUse(age: number, t: LifetimeTiming): "use" | "use-and-refresh" | "fetch" {
  if (age < 0 || age >= t.maxAgeMs) return "fetch";
  return age >= t.refreshAfterMs ? "use-and-refresh" : "use";
}

export class Lifetimes {
  private held: { lifetime: Lifetime; at: number } | undefined;
  private fetching: Promise<Lifetime> | undefined;
  /** Moved on by drop(): a fetch begun before it neither serves nor sets what comes after. */
  private generation = 0;

  constructor(
    private readonly latest: () => Promise<Lifetime>,
    private readonly now: () => number,
    private readonly timing: LifetimeTiming = DEFAULT_LIFETIME_TIMING,
  ) {}

  /** A blockhash to sign with now: the one held while it is young enough, else one fetched now. */
  async take(): Promise<Lifetime> {
    const held = this.held;
    const use = held ? lifetimeUse(this.now() - held.at, this.timing) : "fetch";
    if (held && use !== "fetch") {
      if (use === "use-and-refresh") this.prefetch();
      return held.lifetime;
    }
    return this.fetch();
  }

  /** Fetches one ahead unless the one held is fresh: a paid call starts this beside its quote request. */
  warm(): void {
    const held = this.held;
    if (!held || lifetimeUse(this.now() - held.at, this.timing) !== "use") this.prefetch();
  }

  /** Fetches one ahead (a failure is left for the call that needs one to meet). */
  prefetch(): void {
    this.fetch().catch(() => undefined);
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
