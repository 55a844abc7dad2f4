/**
 * The facilitator's side of the Bazaar discovery extension, ported from @x402/extensions
 * 2.27.0 (dist/esm/chunk-SV2YHMOC.mjs, which bundles its src/bazaar/*.ts) so the sandbox does
 * not carry that package (and the EVM libraries it installs) at run time: the extension's key,
 * and the discovery info of a settled x402 v2 payment, read and validated as the package's
 * `extractDiscoveryInfo(payload, requirements, true)` does. The facilitator refuses every
 * other x402 version before it settles, so the v1 path is not ported.
 *
 * One difference, on purpose: a declaration the schema lets through but whose `info.input` is
 * not an object with a string `type` (and a string `method` / `toolName`) is refused here;
 * the package throws on some of those and returns fields the catalog cannot store for others.
 */
import { domainToASCII } from "node:url";
import type { FacilitatorExtension, PaymentPayload } from "@x402/core/types";
import { hasExternalSchemaReference, matchesSchema } from "./json-schema.js";

/** The extension's key in `extensions` and in `/supported`. Mirrors `BAZAAR` (src/bazaar/types.ts). */
export const BAZAAR: FacilitatorExtension = { key: "bazaar" };

/** A declaration's `info`, as far as the catalog reads it. */
export interface DiscoveryInfo {
  input: { type: string; method?: string; toolName?: string } & Record<string, unknown>;
  output?: unknown;
}

interface DiscoveredBase {
  /** The resource's origin and path (its route template, when declared), without query. */
  resourceUrl: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  x402Version: number;
  discoveryInfo: DiscoveryInfo;
  extensions?: Record<string, unknown>;
}

/** What the package's `DiscoveredResource` holds: an HTTP resource or an MCP tool. */
export type DiscoveredResource =
  (DiscoveredBase & { method?: string; routeTemplate?: string }) | (DiscoveredBase & { toolName: string });

// --- route templates: mirrors isValidRouteTemplate (src/bazaar/facilitator.ts) ---

const ROUTE_TEMPLATE_REGEX = /^\/[a-zA-Z0-9_/:.\-~%]+$/;
const MAX_ROUTE_TEMPLATE_DECODE_PASSES = 5;

function fullyDecodeRouteTemplate(value: string): string | undefined {
  let decoded = value;
  for (let i = 0; i < MAX_ROUTE_TEMPLATE_DECODE_PASSES; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return undefined;
    }
    if (next === decoded) return decoded;
    decoded = next;
  }
  return undefined;
}

function isValidRouteTemplate(value: string | undefined): value is string {
  if (!value || !ROUTE_TEMPLATE_REGEX.test(value)) return false;
  const decoded = fullyDecodeRouteTemplate(value);
  return decoded !== undefined && !decoded.includes("..") && !decoded.includes("://");
}

// --- service metadata: mirrors sanitizeResourceServiceMetadata (src/bazaar/facilitator.ts) ---

const MAX_SERVICE_NAME_LEN = 32;
const MAX_TAG_LEN = 32;
const MAX_TAGS = 5;
const MAX_ICON_URL_LEN = 2048;
// eslint-disable-next-line no-control-regex -- the control characters are what it looks for
const CONTROL_CHAR_REGEX = /[\x00-\x1f\x7f]/;
const PRINTABLE_ASCII_REGEX = /^[\x20-\x7e]+$/;
const LOOPBACK_HOSTNAMES = new Set(["localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"]);
const IPV4_REGEX = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const ALL_DIGITS_REGEX = /^\d+$/;
const HEX_LITERAL_REGEX = /^0x[0-9a-f]+$/i;

/** Printable ASCII, 1-32 characters (which also rules out every Unicode control character). */
const isShortLabel = (value: unknown, max: number): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= max && PRINTABLE_ASCII_REGEX.test(value);

/** Up to five distinct (case-insensitively) short labels; undefined when none is left. */
function sanitizeTags(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: string[] = [];
  const seen = new Set<string>();
  for (const entry of value) {
    if (!isShortLabel(entry, MAX_TAG_LEN) || seen.has(entry.toLowerCase())) continue;
    seen.add(entry.toLowerCase());
    out.push(entry);
    if (out.length === MAX_TAGS) break;
  }
  return out.length > 0 ? out : undefined;
}

/** An http(s) URL without credentials whose host is a name, not an address or a loopback alias. */
function isValidIconUrl(value: unknown): value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_ICON_URL_LEN) return false;
  if (CONTROL_CHAR_REGEX.test(value)) return false;
  let parsed: URL;
  let hostname: string;
  try {
    parsed = new URL(value);
    hostname = decodeURIComponent(parsed.hostname);
  } catch {
    return false;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return false;
  if (parsed.username !== "" || parsed.password !== "" || parsed.host.startsWith("[")) return false;
  hostname = domainToASCII(hostname).toLowerCase();
  if (hostname === "" || LOOPBACK_HOSTNAMES.has(hostname)) return false;
  return ![IPV4_REGEX, ALL_DIGITS_REGEX, HEX_LITERAL_REGEX].some((r) => r.test(hostname));
}

function sanitizeServiceMetadata(resource: PaymentPayload["resource"] | undefined) {
  const r = (resource ?? {}) as { serviceName?: unknown; tags?: unknown; iconUrl?: unknown };
  const tags = sanitizeTags(r.tags);
  return {
    ...(isShortLabel(r.serviceName, MAX_SERVICE_NAME_LEN) ? { serviceName: r.serviceName } : {}),
    ...(tags ? { tags } : {}),
    ...(isValidIconUrl(r.iconUrl) ? { iconUrl: r.iconUrl } : {}),
  };
}

// --- extraction: mirrors validateDiscoveryExtension and extractDiscoveryInfo (src/bazaar/facilitator.ts) ---

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The declaration's `info` if it matches its own schema (which must not reference anything outside itself). */
function validInfo(extension: Record<string, unknown>): DiscoveryInfo | undefined {
  if (hasExternalSchemaReference(extension.schema)) return undefined;
  if (!matchesSchema(extension.schema, extension.info)) return undefined;
  const info = extension.info;
  if (!isRecord(info) || !isRecord(info.input) || typeof info.input.type !== "string") return undefined;
  const { method, toolName } = info.input;
  if (
    info.input.type === "mcp" ? typeof toolName !== "string" : !(method === undefined || typeof method === "string")
  ) {
    return undefined;
  }
  return info as unknown as DiscoveryInfo;
}

/**
 * The discovery info a settled x402 v2 payment declared (`extensions.bazaar`, echoed from the
 * seller's 402), or undefined: no declaration, one that fails its schema, or a resource URL
 * that does not parse.
 */
export function extractDiscoveryInfo(payload: PaymentPayload): DiscoveredResource | undefined {
  if (payload.x402Version !== 2) return undefined;
  const extension = payload.extensions?.[BAZAAR.key];
  if (!isRecord(extension)) return undefined; // the package also passes arrays on, to fail their schema
  const info = validInfo(extension);
  if (!info) return undefined;
  const routeTemplate = typeof extension.routeTemplate === "string" ? extension.routeTemplate : undefined;
  const template = isValidRouteTemplate(routeTemplate) ? routeTemplate : undefined;
  let url: URL;
  try {
    url = new URL(payload.resource?.url ?? "");
  } catch {
    return undefined;
  }
  const base: DiscoveredBase = {
    resourceUrl: template ? `${url.origin}${template}` : `${url.origin}${url.pathname}`,
    description: payload.resource?.description,
    mimeType: payload.resource?.mimeType,
    ...sanitizeServiceMetadata(payload.resource),
    x402Version: payload.x402Version,
    discoveryInfo: info,
    extensions: payload.extensions,
  };
  if (info.input.type === "mcp") return { ...base, toolName: info.input.toolName! };
  return { ...base, routeTemplate: template, method: info.input.method };
}
