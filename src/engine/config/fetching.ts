/**
 * The configuration of paid_fetch: which origins may be paid (`PAID_ACTIONS_ALLOW_ORIGINS` /
 * `allowOrigins`: exact origins, or `*` for any public one; none by default), each origin's
 * per-call cap (`limits.perOrigin`), and the facilitator whose discovery list
 * search_paid_resources reads (`PAID_ACTIONS_FACILITATOR_URL` / `facilitatorUrl`).
 */
import { parseDecimal } from "../../domain/money.js";
import { normalizeOrigin, parseAllowOrigins } from "../x402-http/origins.js";
import type { ConfigIssue } from "./config.js";
import type { FileConfig } from "./file.js";
import { checkSecureUrl } from "./urls.js";

export const FETCH_ENV = {
  allowOrigins: "PAID_ACTIONS_ALLOW_ORIGINS",
  facilitatorUrl: "PAID_ACTIONS_FACILITATOR_URL",
} as const;

/** What config.ts's reader offers this phase. */
export interface FetchReader {
  file: FileConfig;
  issues: ConfigIssue[];
  fileKey(path: string): string;
  pick(envName: string, fileValue: string | undefined, filePath: string): [string | undefined, string];
}

export function fetchingOf(r: FetchReader): {
  allowOrigins: string[];
  perOrigin: Record<string, bigint>;
  facilitatorUrl?: string;
} {
  const raw = r.file.allowOrigins;
  const [allowRaw, allowKey] = r.pick(FETCH_ENV.allowOrigins, Array.isArray(raw) ? raw.join(",") : raw, "allowOrigins");
  const entries = (allowRaw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  let allowOrigins: string[] = [];
  const parsed = parseAllowOrigins(entries);
  if (parsed.ok) allowOrigins = [...(parsed.rule.any ? ["*"] : []), ...[...parsed.rule.exact].sort()];
  else r.issues.push({ key: allowKey, message: parsed.message });
  const [facilitatorRaw, facilitatorKey] = r.pick(FETCH_ENV.facilitatorUrl, r.file.facilitatorUrl, "facilitatorUrl");
  let facilitatorUrl: string | undefined;
  if (facilitatorRaw !== undefined) {
    const url = checkSecureUrl(facilitatorRaw, facilitatorKey, r.issues);
    if (url) facilitatorUrl = url.toString().replace(/\/+$/, "");
  }
  return {
    allowOrigins,
    perOrigin: perOriginOf(r, r.file.limits?.perOrigin ?? {}),
    ...(facilitatorUrl ? { facilitatorUrl } : {}),
  };
}

function perOriginOf(r: FetchReader, entries: Record<string, string>): Record<string, bigint> {
  const perOrigin: Record<string, bigint> = {};
  for (const [name, value] of Object.entries(entries)) {
    const key = r.fileKey(`limits.perOrigin.${name}`);
    const origin = normalizeOrigin(name);
    if (origin === undefined) {
      r.issues.push({ key, message: "is not an origin such as https://api.example.com (a scheme, a host, a port)" });
      continue;
    }
    const v = parseDecimal(value.trim());
    if (v === undefined)
      r.issues.push({
        key,
        message: `${JSON.stringify(value)} is not a USDC amount (a decimal such as "5" or "0.25", at most 6 decimals)`,
      });
    else perOrigin[origin] = v;
  }
  return perOrigin;
}
