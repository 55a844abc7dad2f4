/**
 * Where the sandbox may send webhooks: only to public addresses. A URL's host is resolved
 * (IP literals as URL parsing normalizes them, names through DNS), every address it
 * resolves to must be public, and the delivery connects to the very address that was
 * checked — no second lookup between the check and the connection (DNS rebinding).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How a webhook host is resolved: every address it has. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** A webhook URL the guard refuses, with the reason for humans. */
export class WebhookTargetRefused extends Error {
  override name = "WebhookTargetRefused";
}

type Range = readonly [prefix: bigint, bits: number, reason: string];

const v4 = (text: string, bits: number, reason: string): Range => [parseIPv4(text)!, bits, reason];
const v6 = (text: string, bits: number, reason: string): Range => [parseIPv6(text)!, bits, reason];

/** IPv4 special-purpose ranges (IANA registry) that are not globally reachable. */
const V4_RANGES: Range[] = [
  v4("0.0.0.0", 8, 'unspecified ("this network")'),
  v4("10.0.0.0", 8, "private"),
  v4("100.64.0.0", 10, "shared (carrier-grade NAT)"),
  v4("127.0.0.0", 8, "loopback"),
  v4("169.254.0.0", 16, "link-local"),
  v4("172.16.0.0", 12, "private"),
  v4("192.0.0.0", 24, "IETF protocol assignment"),
  v4("192.0.2.0", 24, "documentation"),
  v4("192.88.99.0", 24, "6to4 relay"),
  v4("192.168.0.0", 16, "private"),
  v4("198.18.0.0", 15, "benchmarking"),
  v4("198.51.100.0", 24, "documentation"),
  v4("203.0.113.0", 24, "documentation"),
  v4("224.0.0.0", 4, "multicast"),
  v4("240.0.0.0", 4, "reserved"),
];

/** IPv6 ranges that are not globally reachable, checked in order (the first match wins). */
const V6_RANGES: Range[] = [
  v6("::", 128, "unspecified"),
  v6("::1", 128, "loopback"),
  v6("::", 96, "IPv4-compatible (deprecated)"),
  v6("64:ff9b:1::", 48, "local-use NAT64"),
  v6("100::", 64, "discard-only"),
  v6("2001:db8::", 32, "documentation"),
  v6("2001::", 23, "IETF protocol assignment (Teredo and others)"),
  v6("3fff::", 20, "documentation"),
  v6("fc00::", 7, "private (unique local)"),
  v6("fe80::", 10, "link-local"),
  v6("fec0::", 10, "site-local (deprecated)"),
  v6("ff00::", 8, "multicast"),
];

const inRange = (value: bigint, width: number, [prefix, bits]: Range) =>
  value >> BigInt(width - bits) === prefix >> BigInt(width - bits);

export function parseIPv4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
}

/** An IPv6 address (any textual form, a trailing dotted IPv4 and a %zone included) as a 128-bit integer. */
export function parseIPv6(text: string): bigint | undefined {
  let s = text.replace(/%.*$/, "").toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const v = parseIPv4(dotted[1]!);
    if (v === undefined) return undefined;
    s = `${s.slice(0, -dotted[1]!.length)}${(v >> 16n).toString(16)}:${(v & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return all.reduce((acc, g) => (acc << 16n) | BigInt(`0x${g}`), 0n);
}

function formatIPv4(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 0xffn)).join(".");
}

/**
 * Why an IP address is not a public destination (loopback, private, link-local, ...), or
 * undefined when it is public. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is judged as
 * the IPv4 address it reaches. Anything that does not parse is refused.
 */
export function nonPublicReason(ip: string): string | undefined {
  const v4value = parseIPv4(ip);
  if (v4value !== undefined) return V4_RANGES.find((r) => inRange(v4value, 32, r))?.[2];
  const v = parseIPv6(ip);
  if (v === undefined) return "unparseable";
  const embedded = (value: bigint, what: string) => {
    const reason = nonPublicReason(formatIPv4(value));
    return reason ? `${reason} (IPv4 ${formatIPv4(value)} ${what})` : undefined;
  };
  if (v >> 32n === 0xffffn) return embedded(v & 0xffffffffn, "mapped into IPv6");
  if (v >> 32n === parseIPv6("64:ff9b::")! >> 32n) return embedded(v & 0xffffffffn, "through NAT64");
  if (v >> 112n === 0x2002n) return embedded((v >> 80n) & 0xffffffffn, "through 6to4");
  const special = V6_RANGES.find((r) => inRange(v, 128, r));
  if (special) return special[2];
  // Only 2000::/3 is global unicast.
  return v >> 125n === 1n ? undefined : "reserved";
}

/** A URL's host as an address or a name: brackets of an IPv6 literal removed. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
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

/** A `lookup` for http(s).request that answers with the one address already checked: no second DNS query. */
export function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
