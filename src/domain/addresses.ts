/**
 * IP addresses and where they lead: parsing every textual form of IPv4 and IPv6, the
 * special-purpose ranges that are not globally reachable (IANA registries), IPv4 embedded in
 * IPv6 judged as the IPv4 address it reaches, cloud metadata endpoints, and a `lookup` that
 * answers with an address already checked (no second DNS query between a check and its
 * connection). Pure: shared by the sandbox's webhook guard and the engine's paid fetch, which
 * do their own DNS.
 */
import type { LookupFunction } from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How a host name is resolved: every address it has. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * Why an address is not a public destination: `metadata` is a cloud instance-metadata
 * endpoint (also link-local or private by range); `special` gathers the rest
 * (documentation, benchmarking, multicast, reserved, deprecated forms); `invalid` is text
 * that is not an address.
 */
export type NonPublicKind = "loopback" | "unspecified" | "private" | "link-local" | "metadata" | "special" | "invalid";

/** What an address is as a destination: public, or why not (`reason` is for humans, e.g. `loopback (IPv4 127.0.0.1 mapped into IPv6)`). */
export type AddressClass = { public: true } | { public: false; kind: NonPublicKind; reason: string };

type NonPublic = { kind: NonPublicKind; reason: string };
type Range = readonly [prefix: bigint, bits: number, reason: string, kind: NonPublicKind];

const v4 = (text: string, bits: number, reason: string, kind: NonPublicKind): Range => [
  parseIPv4(text)!,
  bits,
  reason,
  kind,
];
const v6 = (text: string, bits: number, reason: string, kind: NonPublicKind): Range => [
  parseIPv6(text)!,
  bits,
  reason,
  kind,
];

/** IPv4 special-purpose ranges (IANA registry) that are not globally reachable. */
const V4_RANGES: Range[] = [
  v4("0.0.0.0", 8, 'unspecified ("this network")', "unspecified"),
  v4("10.0.0.0", 8, "private", "private"),
  v4("100.64.0.0", 10, "shared (carrier-grade NAT)", "private"),
  v4("127.0.0.0", 8, "loopback", "loopback"),
  v4("169.254.0.0", 16, "link-local", "link-local"),
  v4("172.16.0.0", 12, "private", "private"),
  v4("192.0.0.0", 24, "IETF protocol assignment", "special"),
  v4("192.0.2.0", 24, "documentation", "special"),
  v4("192.88.99.0", 24, "6to4 relay", "special"),
  v4("192.168.0.0", 16, "private", "private"),
  v4("198.18.0.0", 15, "benchmarking", "special"),
  v4("198.51.100.0", 24, "documentation", "special"),
  v4("203.0.113.0", 24, "documentation", "special"),
  v4("224.0.0.0", 4, "multicast", "special"),
  v4("240.0.0.0", 4, "reserved", "special"),
];

/** IPv6 ranges that are not globally reachable, checked in order (the first match wins). */
const V6_RANGES: Range[] = [
  v6("::", 128, "unspecified", "unspecified"),
  v6("::1", 128, "loopback", "loopback"),
  v6("::", 96, "IPv4-compatible (deprecated)", "special"),
  v6("64:ff9b:1::", 48, "local-use NAT64", "private"),
  v6("100::", 64, "discard-only", "special"),
  v6("2001:db8::", 32, "documentation", "special"),
  v6("2001::", 23, "IETF protocol assignment (Teredo and others)", "special"),
  v6("3fff::", 20, "documentation", "special"),
  v6("fc00::", 7, "private (unique local)", "private"),
  v6("fe80::", 10, "link-local", "link-local"),
  v6("fec0::", 10, "site-local (deprecated)", "private"),
  v6("ff00::", 8, "multicast", "special"),
];

/**
 * Cloud instance-metadata endpoints: AWS, GCP, Azure and others (169.254.169.254), AWS ECS
 * task metadata (169.254.170.2), Alibaba Cloud (100.100.100.200), AWS over IPv6
 * (fd00:ec2::254). Each is also in a non-public range; naming them tells a person why.
 */
const METADATA_V4 = new Set(["169.254.169.254", "169.254.170.2", "100.100.100.200"].map((a) => parseIPv4(a)!));
const METADATA_V6 = new Set(["fd00:ec2::254"].map((a) => parseIPv6(a)!));

const inRange = (value: bigint, width: number, [prefix, bits]: Range) =>
  value >> BigInt(width - bits) === prefix >> BigInt(width - bits);

/** A dotted-quad IPv4 address (exactly four decimal parts) as a 32-bit integer. */
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

/** A metadata endpoint named as such, with the range it is in. */
const metadataVerdict = (range: NonPublic | undefined): NonPublic => ({
  kind: "metadata",
  reason: `cloud metadata endpoint (${range?.reason ?? "special"})`,
});

/** The verdict on an address that is not public, or undefined when it is; metadata endpoints named when asked. */
function judge(ip: string, metadata: boolean): NonPublic | undefined {
  const v4value = parseIPv4(ip);
  if (v4value !== undefined) {
    const range = V4_RANGES.find((r) => inRange(v4value, 32, r));
    const verdict: NonPublic | undefined = range && { kind: range[3], reason: range[2] };
    return metadata && METADATA_V4.has(v4value) ? metadataVerdict(verdict) : verdict;
  }
  const v = parseIPv6(ip);
  if (v === undefined) return { kind: "invalid", reason: "unparseable" };
  const embedded = (value: bigint, what: string): NonPublic | undefined => {
    const inner = judge(formatIPv4(value), metadata);
    return inner && { kind: inner.kind, reason: `${inner.reason} (IPv4 ${formatIPv4(value)} ${what})` };
  };
  if (v >> 32n === 0xffffn) return embedded(v & 0xffffffffn, "mapped into IPv6");
  if (v >> 32n === parseIPv6("64:ff9b::")! >> 32n) return embedded(v & 0xffffffffn, "through NAT64");
  if (v >> 112n === 0x2002n) return embedded((v >> 80n) & 0xffffffffn, "through 6to4");
  const special = V6_RANGES.find((r) => inRange(v, 128, r));
  // Only 2000::/3 is global unicast.
  const verdict: NonPublic | undefined = special
    ? { kind: special[3], reason: special[2] }
    : v >> 125n === 1n
      ? undefined
      : { kind: "special", reason: "reserved" };
  return metadata && METADATA_V6.has(v) ? metadataVerdict(verdict) : verdict;
}

/**
 * Why an IP address is not a public destination (loopback, private, link-local, ...), or
 * undefined when it is public. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is judged as
 * the IPv4 address it reaches. Anything that does not parse is refused.
 */
export function nonPublicReason(ip: string): string | undefined {
  return judge(ip, false)?.reason;
}

/**
 * What an IP address is as a destination: `public`, or its kind and the reason. Metadata
 * endpoints are named as such, before their range; IPv4 embedded in IPv6 is judged as the
 * IPv4 address it reaches (`::ffff:127.0.0.1` is loopback).
 */
export function classifyAddress(ip: string): AddressClass {
  const verdict = judge(ip, true);
  return verdict ? { public: false, ...verdict } : { public: true };
}

/** Whether an address reaches this machine's loopback (127.0.0.0/8, ::1, and IPv4 loopback inside IPv6). */
export function isLoopback(ip: string): boolean {
  return judge(ip, true)?.kind === "loopback";
}

/**
 * Whether a host name means this machine whatever DNS says: `localhost` and every name under
 * it (RFC 6761), with or without the trailing dot of a fully qualified name.
 */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

/** A URL's host as an address or a name: brackets of an IPv6 literal removed. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/** A `lookup` for http(s).request and undici that answers with the one address already checked: no second DNS query. */
export function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
