/**
 * What an agent may ask paid_fetch to send, read once at the edge: the URL (https, or http
 * to a loopback host), the method, the headers (never an x402 payment header, never a
 * hop-by-hop or connection-level one) and the body. Pure: whether the origin is allowed and
 * where its name resolves are decided elsewhere (origins.ts, http.ts).
 */
import { isLoopback, isLoopbackName, parseIPv4, parseIPv6 } from "../../domain/addresses.js";

export type FetchMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface FetchInput {
  url: unknown;
  method?: unknown;
  headers?: unknown;
  body?: unknown;
}

export interface OutboundRequest {
  /** The normalized href (WHATWG URL), fragment removed, no userinfo. */
  url: string;
  /** e.g. `https://api.example.com` (default port dropped), `http://127.0.0.1:4021`. */
  origin: string;
  method: FetchMethod;
  /** Lower-cased names, as the agent gave them. */
  headers: Record<string, string>;
  /** An object body is JSON.stringify'd, and content-type application/json set if absent. */
  body: string | null;
}

export type FetchInputField = "url" | "method" | "headers" | "body";

export type ReadFetchInput =
  { ok: true; request: OutboundRequest } | { ok: false; field: FetchInputField; message: string };

export const URL_LIMIT = 8 * 1024;
export const HEADER_COUNT_LIMIT = 50;
export const HEADER_VALUE_LIMIT = 8 * 1024;
export const BODY_LIMIT = 1024 * 1024;

const METHODS: readonly FetchMethod[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** RFC 9110 token: what a header name may be made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** x402's own headers: this server sends the payment and reads the answers itself. */
const PAYMENT_HEADERS = new Set([
  "payment-signature",
  "x-payment",
  "payment-required",
  "payment-response",
  "x-payment-response",
]);

/** Headers about the connection, not the request: the transport owns them. */
const CONNECTION_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "expect",
]);

/** Bodies are read as they arrive, never decoded: the transport asks for `identity` itself. */
const TRANSPORT_HEADERS = new Set(["accept-encoding"]);

const refuse = (field: FetchInputField, message: string): ReadFetchInput => ({ ok: false, field, message });

/** Text from the agent, made safe to quote in a message: control characters out, length bounded. */
const quote = (text: string, max = 60) =>
  JSON.stringify(text.replace(/\p{Cc}/gu, "?").slice(0, max) + (text.length > max ? "…" : ""));

const utf8Length = (text: string) => new TextEncoder().encode(text).length;

/**
 * Whether a host is this machine's loopback: 127.0.0.0/8, ::1 (bracketed or not), IPv4
 * loopback inside IPv6, `localhost` and every name under it (any case, a trailing dot
 * allowed). Any spelling URL parsing normalizes (`0x7f.1`, `2130706433`) is read as it would.
 */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[(.*)\]$/, "$1");
  if (parseIPv4(bare) !== undefined || parseIPv6(bare) !== undefined) return isLoopback(bare);
  if (isLoopbackName(bare)) return true;
  let normalized: string;
  try {
    normalized = new URL(`http://${bare}/`).hostname;
  } catch {
    return false;
  }
  const inner = normalized.replace(/^\[(.*)\]$/, "$1");
  return inner === bare ? false : isLoopbackHost(inner);
}

function readUrl(input: unknown): { ok: true; url: URL } | { ok: false; message: string } {
  if (typeof input !== "string") return { ok: false, message: "url must be a string" };
  if (input.length > URL_LIMIT) return { ok: false, message: `url is longer than ${URL_LIMIT} characters` };
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, message: `url ${quote(input)} is not an absolute URL` };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { ok: false, message: `url must be https (the scheme ${quote(url.protocol)} is not)` };
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname))
    return {
      ok: false,
      message: `url must be https: plain http is allowed only to this machine's loopback (not ${quote(url.hostname)})`,
    };
  if (url.username !== "" || url.password !== "")
    return {
      ok: false,
      message: "url must not carry credentials (user:password@): send them in a header such as Authorization",
    };
  url.hash = "";
  if (url.href.length > URL_LIMIT) return { ok: false, message: `url is longer than ${URL_LIMIT} characters` };
  return { ok: true, url };
}

function readMethod(input: unknown): FetchMethod | undefined {
  if (input === undefined || input === null) return "GET";
  if (typeof input !== "string") return undefined;
  return METHODS.find((m) => m === input.toUpperCase());
}

/** Why a header may not be sent as the agent gave it, or undefined when it may. */
function headerRefusal(name: string, value: unknown): string | undefined {
  if (!TOKEN.test(name)) return `the header name ${quote(name)} is not a valid HTTP token`;
  const lower = name.toLowerCase();
  if (PAYMENT_HEADERS.has(lower))
    return `the header ${quote(name)} is an x402 payment header: this server pays and sends the payment itself; leave it out`;
  if (CONNECTION_HEADERS.has(lower))
    return `the header ${quote(name)} is about the connection, which the transport owns; leave it out`;
  if (TRANSPORT_HEADERS.has(lower))
    return `the header ${quote(name)} is set by the transport (bodies are fetched unencoded); leave it out`;
  if (typeof value !== "string") return `the header ${quote(name)} must have a string value`;
  if (/[\r\n\0]/.test(value)) return `the header ${quote(name)} has a line break or NUL in its value`;
  if (utf8Length(value) > HEADER_VALUE_LIMIT)
    return `the header ${quote(name)} has a value longer than ${HEADER_VALUE_LIMIT} bytes`;
  return undefined;
}

function readHeaders(input: unknown): { ok: true; headers: Record<string, string> } | { ok: false; message: string } {
  if (input === undefined || input === null) return { ok: true, headers: {} };
  if (typeof input !== "object" || Array.isArray(input))
    return { ok: false, message: "headers must be an object of header names to string values" };
  const entries = Object.entries(input as Record<string, unknown>);
  if (entries.length > HEADER_COUNT_LIMIT)
    return { ok: false, message: `headers has ${entries.length} entries; at most ${HEADER_COUNT_LIMIT}` };
  const headers: Record<string, string> = {};
  for (const [name, value] of entries) {
    const refusal = headerRefusal(name, value);
    if (refusal) return { ok: false, message: refusal };
    const lower = name.toLowerCase();
    if (Object.hasOwn(headers, lower)) return { ok: false, message: `the header ${quote(name)} is given twice` };
    headers[lower] = value as string;
  }
  return { ok: true, headers };
}

function readBody(
  input: unknown,
  method: FetchMethod,
): { ok: true; body: string | null; json: boolean } | { ok: false; message: string } {
  if (input === undefined || input === null) return { ok: true, body: null, json: false };
  if (method === "GET")
    return {
      ok: false,
      message: "a GET request carries no body (servers ignore or refuse it): send the body with POST, PUT or PATCH",
    };
  let body: string;
  let json = false;
  if (typeof input === "string") body = input;
  else if (typeof input === "object") {
    try {
      body = JSON.stringify(input);
    } catch {
      return { ok: false, message: "body is an object that cannot be written as JSON" };
    }
    json = true;
  } else return { ok: false, message: "body must be a string, or a JSON object or array (sent as JSON)" };
  if (utf8Length(body) > BODY_LIMIT) return { ok: false, message: `body is larger than ${BODY_LIMIT} bytes` };
  return { ok: true, body, json };
}

/** paid_fetch's request, checked and normalized; or the first field refused, with why. */
export function readFetchInput(input: FetchInput): ReadFetchInput {
  const url = readUrl(input.url);
  if (!url.ok) return refuse("url", url.message);
  const method = readMethod(input.method);
  if (!method) return refuse("method", `method must be one of ${METHODS.join(", ")}`);
  const headers = readHeaders(input.headers);
  if (!headers.ok) return refuse("headers", headers.message);
  const body = readBody(input.body, method);
  if (!body.ok) return refuse("body", body.message);
  if (body.json && !Object.hasOwn(headers.headers, "content-type"))
    headers.headers["content-type"] = "application/json";
  return {
    ok: true,
    request: {
      url: url.url.href,
      origin: url.url.origin,
      method,
      headers: headers.headers,
      body: body.body,
    },
  };
}

/**
 * A URL as the journal and transcripts keep it: query values replaced by `…` (their names
 * kept), userinfo dropped, no fragment. Text that is not a URL is not repeated.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(not a URL)";
  }
  parsed.username = "";
  parsed.password = "";
  const query = parsed.search.slice(1);
  const redacted =
    query === ""
      ? ""
      : `?${query
          .split("&")
          .map((part) => (part.includes("=") ? `${part.slice(0, part.indexOf("="))}=…` : part))
          .join("&")}`;
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}${redacted}`;
}
