/**
 * The rules for the URLs of the configuration: the service and the RPC over https (plain
 * http only to this machine), a PostgreSQL journal with TLS unless it is on loopback, and
 * the secrets a URL may carry, kept out of every message.
 */
import type { ConfigIssue } from "./config.js";

/**
 * Plain http is allowed only to this machine. Hosts are compared after WHATWG URL parsing,
 * which already normalises `127.1` and `0x7f000001` to `127.0.0.1`.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Checks an http(s) URL that must not be reachable by a network attacker: https, or plain
 * http to a loopback host. Issues name the key and the problem, never the URL's secrets.
 */
export function checkSecureUrl(raw: string, key: string, issues: ConfigIssue[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({
      key,
      message: `is not an http(s) URL${raw.includes("://") ? "" : " (it has no scheme such as https://)"}`,
    });
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    issues.push({ key, message: "is not an http(s) URL" });
    return undefined;
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    issues.push({
      key,
      message: "must use https (plain http is allowed only for a loopback host: 127.x.x.x, localhost, [::1])",
    });
  }
  return url;
}

/** TLS modes of a PostgreSQL URL that encrypt the connection. */
const TLS_SSLMODES = new Set(["require", "verify-ca", "verify-full"]);

/**
 * Checks a PostgreSQL journal URL: postgres(ql)://, a host and a database, and TLS
 * (`sslmode=require`, `verify-ca` or `verify-full`) unless the host is loopback. Issues
 * name the key and the problem, never the URL (it may carry a password).
 */
export function checkJournalUrl(raw: string, key: string, issues: ConfigIssue[]): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({
      key,
      message: "is not a PostgreSQL URL such as postgres://user@host:5432/paid_actions?sslmode=verify-full",
    });
    return;
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    issues.push({ key, message: "must be a postgres:// (or postgresql://) URL" });
    return;
  }
  if (!url.hostname) issues.push({ key, message: "names no host" });
  if (url.pathname.replace(/^\//, "") === "")
    issues.push({ key, message: "names no database (postgres://host:5432/<database>)" });
  const sslmode = url.searchParams.get("sslmode");
  if (url.hostname && !isLoopbackHost(url.hostname) && !(sslmode && TLS_SSLMODES.has(sslmode))) {
    issues.push({
      key,
      message: "must use TLS to a host that is not loopback: add sslmode=verify-full (or require) to the URL",
    });
  }
}

/** The password in a URL, if it has one (a secret to keep out of every message). */
export function passwordOf(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  try {
    return decodeURIComponent(new URL(raw).password) || undefined;
  } catch {
    return undefined;
  }
}
