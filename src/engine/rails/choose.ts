/**
 * Which way to pay, when a challenge offers several (`accepts`): ours to choose, by the
 * networks we pay on in our order of preference (Config.networks) — for the first of them
 * the challenge offers, its first entry there that we can pay. The seller's order among
 * its entries decides only between entries on one network. Pure; table-tested
 * (rails-choose.test.ts).
 */

/** The least an entry of `accepts` says: where it is paid. */
interface OnNetwork {
  network: string;
}

/**
 * The entry to pay: for each of `networks` in order, the first entry on it that `payable`
 * lets through (scheme, asset, the shape the rail needs); undefined when there is none.
 */
export function chooseRequirement<R extends OnNetwork>(
  accepts: readonly R[],
  networks: readonly string[],
  payable: (r: R) => boolean,
): R | undefined {
  for (const network of networks) {
    const found = accepts.find((r) => r.network === network && payable(r));
    if (found) return found;
  }
  return undefined;
}

/**
 * The network whose rail checks a service's challenge against its quote: the first of ours
 * on which the challenge offers scheme `exact`; without one, our first (its rail then
 * reports what the challenge offers instead). Its checks say what else is wrong: an entry
 * that is `exact` on our network but in another asset is a drift to report, not a reason
 * to look elsewhere.
 */
export function challengeNetwork(
  accepts: readonly (OnNetwork & { scheme: string })[],
  networks: readonly string[],
): string | undefined {
  return chooseRequirement(accepts, networks, (r) => r.scheme === "exact")?.network ?? networks[0];
}

/**
 * The payee a service's quote names for us: its entry on the first of our networks that it
 * offers `exact` on (the one we would pay), else its first entry's. A quote lists one payee
 * per way to pay, and the payee checked against the challenge must be the one of the way we pay.
 */
export function quotedPayee(
  accepts: readonly (OnNetwork & { scheme: string; payTo: string })[] | undefined,
  networks: readonly string[],
): string | undefined {
  if (!accepts) return undefined;
  return (chooseRequirement(accepts, networks, (r) => r.scheme === "exact") ?? accepts[0])?.payTo;
}
