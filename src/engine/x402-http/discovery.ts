/**
 * search_paid_resources: a facilitator's discovery list (Bazaar: `GET {facilitator}/discovery/resources`)
 * read and described for an agent — each resource's URL, method, price in USDC (when it asks
 * for a payment this server can make), payee, description, input hints, and whether its
 * origin is one the human allowed. The list is the facilitator's word: nothing here is paid
 * or trusted, and paid_fetch checks everything again against the resource's own 402.
 */
import { request } from "undici";
import { z } from "zod";
import { formatDecimal } from "../../domain/money.js";
import { paidError } from "../errors.js";
import { normalizeOrigin } from "./origins.js";

const Accept = z.looseObject({
  scheme: z.string(),
  network: z.string(),
  amount: z.string().optional(),
  maxAmountRequired: z.string().optional(),
  asset: z.string().optional(),
  payTo: z.string().optional(),
});
const Item = z.looseObject({
  resource: z.string(),
  type: z.string().optional(),
  accepts: z.array(z.unknown()).default([]),
  lastUpdated: z.string().optional(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
  serviceName: z.string().optional(),
  tags: z.array(z.string()).optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
const Listing = z.looseObject({ items: z.array(z.unknown()) });

export interface DiscoveredResource {
  url: string;
  origin: string | null;
  method: string | null;
  /** Decimal USDC, when one of its requirements is scheme exact on one of our networks, in its USDC. */
  price: string | null;
  payTo: string | null;
  /** Whether this server could pay it (exact, one of our networks, its USDC). */
  payable: boolean;
  /** Whether the human's allowOrigins allows its origin. */
  originAllowed: boolean;
  description: string | null;
  serviceName: string | null;
  tags: string[];
  /** What the resource declares about its input (Bazaar `info.input` and `schema`), as given. */
  inputHints: unknown;
  lastUpdated: string | null;
}

/** What this server pays (each network paid on and its USDC) and which origins it may pay. */
export interface Want {
  pays: ReadonlyArray<{ network: string; asset: string }>;
  allowed: (origin: string) => boolean;
}

/** One asset, however written: an EVM address whatever its letters' case, a Solana mint exactly. */
const sameAsset = (a: string | undefined, b: string) =>
  a === b || (a !== undefined && /^0x[0-9a-fA-F]{40}$/.test(a) && a.toLowerCase() === b.toLowerCase());

/** Pure: a discovery answer's items described for an agent, filtered by `query` (case-insensitive words). */
export function describeDiscovery(body: unknown, want: Want, query?: string): DiscoveredResource[] {
  const listing = Listing.safeParse(body);
  if (!listing.success) return [];
  const words = (query ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  const out: DiscoveredResource[] = [];
  for (const raw of listing.data.items) {
    const item = Item.safeParse(raw);
    if (!item.success) continue;
    const d = describeOne(item.data, want);
    const text = [d.url, d.description, d.serviceName, ...d.tags].join(" ").toLowerCase();
    if (words.every((w) => text.includes(w))) out.push(d);
  }
  return out;
}

function describeOne(item: z.infer<typeof Item>, want: Want): DiscoveredResource {
  const accepts = item.accepts.flatMap((a) => {
    const p = Accept.safeParse(a);
    return p.success ? [p.data] : [];
  });
  // The first of our networks it offers, in our order of preference (as paid_fetch chooses).
  const payable = (a: (typeof accepts)[number], w: Want["pays"][number]) =>
    a.scheme === "exact" && a.network === w.network && sameAsset(a.asset, w.asset) && /^\d{1,20}$/.test(a.amount ?? "");
  const ours = want.pays.map((w) => accepts.find((a) => payable(a, w))).find((a) => a !== undefined);
  const bazaar = (item.extensions?.bazaar ?? {}) as { info?: { input?: Record<string, unknown> }; schema?: unknown };
  const input = bazaar.info?.input;
  let origin: string | null = null;
  try {
    origin = normalizeOrigin(new URL(item.resource).origin) ?? null;
  } catch {
    origin = null;
  }
  return {
    url: item.resource.slice(0, 2048),
    origin,
    method: typeof input?.method === "string" ? input.method.toUpperCase() : null,
    price: ours ? formatDecimal(BigInt(ours.amount!)) : null,
    payTo: ours?.payTo ?? accepts[0]?.payTo ?? null,
    payable: ours !== undefined,
    originAllowed: origin !== null && want.allowed(origin),
    description: item.description?.slice(0, 500) ?? null,
    serviceName: item.serviceName?.slice(0, 100) ?? null,
    tags: (item.tags ?? []).slice(0, 10),
    inputHints:
      input || bazaar.schema
        ? { ...(input ? { input } : {}), ...(bazaar.schema ? { schema: bazaar.schema } : {}) }
        : null,
    lastUpdated: item.lastUpdated ?? null,
  };
}

/** How much of a discovery answer is read, at most. */
const MAX_BYTES = 4 * 1024 * 1024;

/** Reads a facilitator's discovery list (HTTP resources), bounded in time and size. */
export async function fetchDiscovery(
  facilitatorUrl: string,
  o: { limit: number; offset?: number; timeoutMs?: number },
): Promise<unknown> {
  const url = new URL(`${facilitatorUrl.replace(/\/+$/, "")}/discovery/resources`);
  url.searchParams.set("type", "http");
  url.searchParams.set("limit", String(o.limit));
  if (o.offset) url.searchParams.set("offset", String(o.offset));
  const where = `${url.origin}${url.pathname}`;
  let res;
  try {
    res = await request(url, {
      method: "GET",
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
    });
  } catch (e) {
    throw paidError("service_unavailable", {
      problem: "discovery",
      url: where,
      detail: (e as Error).message.slice(0, 200),
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).byteLength;
    if (size > MAX_BYTES) {
      res.body.destroy();
      throw paidError("service_error", { problem: "discovery_size", url: where });
    }
    chunks.push(chunk as Buffer);
  }
  if (res.statusCode !== 200)
    throw paidError("service_error", { problem: "discovery_status", url: where, status: res.statusCode });
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw paidError("service_error", { problem: "discovery_json", url: where });
  }
}
