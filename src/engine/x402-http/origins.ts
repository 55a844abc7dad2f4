/**
 * Who paid_fetch may send to and pay: the person's allowOrigins, read once. An exact origin
 * (`https://api.example.com`, or `http://127.0.0.1:4021` for a loopback host) is allowed
 * wherever its name resolves, private and loopback addresses included: the person named it.
 * `*` allows any other https origin, but only at public addresses (http.ts checks them after
 * DNS). Nothing is allowed by default. Pure.
 */
import { isLoopbackHost } from "./request.js";

export interface OriginRule {
  /** `*`: any https origin whose addresses are all public. */
  any: boolean;
  /** Exact origins, normalized (normalizeOrigin). */
  exact: ReadonlySet<string>;
}

export type OriginStanding = "exact" | "public" | "refused";

/**
 * An origin as URL parsing spells it (`HTTPS://Api.Example.com:443/` is
 * `https://api.example.com`), or undefined when the text is not an http(s) origin: a path,
 * a query, a fragment, credentials or a wildcard make it something else.
 */
export function normalizeOrigin(text: string): string | undefined {
  if (/[?#]/.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  if (url.username !== "" || url.password !== "" || url.pathname !== "/") return undefined;
  // A host name (IDN already in punycode) or an address: no wildcard, nothing URL parsing lets through beside.
  if (!/^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)$/.test(url.hostname)) return undefined;
  return url.origin;
}

/** allowOrigins as the person wrote it, read into a rule; or what is wrong with the first entry that is wrong. */
export function parseAllowOrigins(
  entries: readonly string[],
): { ok: true; rule: OriginRule } | { ok: false; message: string } {
  let any = false;
  const exact = new Set<string>();
  for (const entry of entries) {
    const text = entry.trim();
    if (text === "") continue;
    if (text === "*") {
      any = true;
      continue;
    }
    const origin = normalizeOrigin(text);
    if (origin === undefined)
      return {
        ok: false,
        message: `${JSON.stringify(text.slice(0, 100))} is not an origin: write the scheme, host and port only (https://api.example.com), or * for any public https origin`,
      };
    if (origin.startsWith("http:") && !isLoopbackHost(new URL(origin).hostname))
      return {
        ok: false,
        message: `${origin}: plain http is allowed only to this machine's loopback; write https://${origin.slice("http://".length)}`,
      };
    exact.add(origin);
  }
  return { ok: true, rule: { any, exact } };
}

/**
 * Where an origin stands: "exact" when it is listed (then private and loopback addresses are
 * allowed for it), "public" when only `*` allows it (its addresses must be public; https
 * only), "refused" when nothing does.
 */
export function originStanding(rule: OriginRule, origin: string): OriginStanding {
  const normalized = normalizeOrigin(origin);
  if (normalized === undefined) return "refused";
  if (rule.exact.has(normalized)) return "exact";
  return rule.any && normalized.startsWith("https:") ? "public" : "refused";
}
