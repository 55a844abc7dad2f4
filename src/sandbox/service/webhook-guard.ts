/**
 * Where the sandbox may send webhooks: only to public addresses (the address rules live in
 * domain/addresses.ts). A URL's host is resolved (IP literals as URL parsing normalizes them,
 * names through DNS), every address it resolves to must be public, and the delivery connects
 * to the very address that was checked — no second lookup between the check and the
 * connection (DNS rebinding).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { hostOf, nonPublicReason, type ResolvedAddress, type Resolver } from "../../domain/addresses.js";

export { nonPublicReason, pinnedLookup, type ResolvedAddress, type Resolver } from "../../domain/addresses.js";

/** How a webhook host is resolved: every address it has, through the system's resolver. */
export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** A webhook URL the guard refuses, with the reason for humans. */
export class WebhookTargetRefused extends Error {
  override name = "WebhookTargetRefused";
}

/**
 * Resolves a webhook URL's host and checks every address it resolves to. Returns the
 * addresses (connect to one of these, and only these). With `allowPrivate`, nothing is
 * refused for where it points. Throws WebhookTargetRefused.
 */
export async function resolveWebhookTarget(
  url: URL,
  o: { allowPrivate: boolean; resolve: Resolver },
): Promise<ResolvedAddress[]> {
  const host = hostOf(url);
  let addresses: ResolvedAddress[];
  const family = isIP(host);
  if (family !== 0) {
    addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await o.resolve(host);
    } catch (e) {
      throw new WebhookTargetRefused(
        `the host ${host} does not resolve (${(e as NodeJS.ErrnoException).code ?? "lookup failed"})`,
      );
    }
    if (addresses.length === 0) throw new WebhookTargetRefused(`the host ${host} resolves to no address`);
  }
  if (o.allowPrivate) return addresses;
  for (const a of addresses) {
    const reason = nonPublicReason(a.address);
    if (reason) {
      throw new WebhookTargetRefused(
        `the host ${host} resolves to ${a.address}, a ${reason} address; webhooks are delivered to public addresses only ` +
          "(start the sandbox with --allow-private-webhooks to deliver to local receivers)",
      );
    }
  }
  return addresses;
}
