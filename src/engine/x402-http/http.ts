/**
 * The guarded transport of paid_fetch: an outbound HTTP client an agent steers, so every
 * request is checked where it goes, not only what it names. The host is resolved once (IP
 * literals as URL parsing normalized them, names through DNS); for an origin only `*`
 * allows, every address must be public; plain http must land on loopback; and the
 * connection is made to the very address checked (no second lookup: DNS rebinding), with
 * TLS still verifying the host name. Redirects are followed within the origin only; every
 * exchange is bounded in time and size. Messages never carry header values: the payment
 * header is a secret.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { Dispatcher, buildConnector as BuildConnector } from "undici";
import {
  classifyAddress,
  hostOf,
  isLoopback,
  isLoopbackName,
  parseIPv4,
  parseIPv6,
  type ResolvedAddress,
} from "../../domain/addresses.js";
import { paidError, PaidActionError, type ErrorContext, type ErrorFacts } from "../errors.js";
import type { FetchMethod, OutboundRequest } from "./request.js";

export interface GuardedFetchOptions {
  /** From originStanding; "refused" never reaches here. */
  standing: "exact" | "public";
  /** The whole exchange, name resolution and every redirect included. Default 30 s. */
  timeoutMs?: number;
  /** The most body bytes read; past it, fetch_failed (reason "too_large"). Default 10 MiB. */
  maxBytes?: number;
  /** Same-origin redirects followed, at most. Default 5. */
  maxRedirects?: number;
  /** Sent with the request and never logged nor quoted, e.g. PAYMENT-SIGNATURE. */
  extraHeaders?: Record<string, string>;
  signal?: AbortSignal;
  /** How a host name is resolved: every address it has. Default: the system's resolver. */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Certificates to trust instead of the system's (a private CA); the host name is verified all the same. */
  ca?: string | string[];
}

export interface FetchedResponse {
  status: number;
  /** Names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The URL that answered, after same-origin redirects. */
  url: string;
  /** A redirect's Location that was not followed (another origin): the 3xx is what is returned. */
  redirectRefused?: string;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;
/** Response headers, all together: a PAYMENT-REQUIRED header alone may be 64 KiB. */
const MAX_HEADER_BYTES = 128 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers that describe a body, dropped when a redirect turns the request into a GET. */
const BODY_HEADERS = ["content-type", "content-encoding", "content-language", "content-location"];

let undici: Promise<typeof import("undici")> | undefined;
const loadUndici = () => (undici ??= import("undici"));

export const systemResolve = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** One exchange's signals and what has happened so far. */
interface Exchange {
  origin: string;
  signal: AbortSignal;
  timeout: AbortSignal;
  caller: AbortSignal | undefined;
  /** A connection (TCP, and TLS for https) was completed: from then on a request may have reached the server. */
  connected: boolean;
}

const failed = (
  x: Exchange,
  reason: ErrorContext<"fetch_failed">["reason"],
  facts: ErrorFacts["fetch_failed"] = {},
  status?: number,
) =>
  paidError(
    "fetch_failed",
    { origin: x.origin, reason, sent: x.connected, ...(status === undefined ? {} : { status }) },
    facts,
  );

/** An error from anywhere in the exchange, as fetch_failed: the reason from what happened, never from header text. */
function asFailure(x: Exchange, e: unknown): PaidActionError {
  if (e instanceof PaidActionError) return e;
  if (x.caller?.aborted) return failed(x, "cancelled");
  if (x.timeout.aborted) return failed(x, "timeout");
  const code = (e as { code?: unknown }).code;
  return failed(x, "network", typeof code === "string" && /^[A-Z0-9_]{1,64}$/.test(code) ? { errno: code } : {});
}

/** Waits for a promise, unless the exchange is aborted first. */
function bounded<T>(x: Exchange, p: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (x.signal.aborted) return reject(new Error("aborted"));
    const onAbort = () => reject(new Error("aborted"));
    x.signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => x.signal.removeEventListener("abort", onAbort));
  });
}

function notAllowed(
  x: Exchange,
  host: string,
  address: string,
  why: string,
  rule: ErrorContext<"origin_not_allowed">["rule"],
): PaidActionError {
  return paidError("origin_not_allowed", { origin: x.origin, reason: `${host} resolves to ${address}, ${why}`, rule });
}

/** The addresses a URL's host has, each checked against the standing; the one to connect to. */
async function resolveTarget(x: Exchange, url: URL, o: GuardedFetchOptions): Promise<ResolvedAddress> {
  const host = hostOf(url);
  let addresses: ResolvedAddress[];
  if (parseIPv4(host) !== undefined) addresses = [{ address: host, family: 4 }];
  else if (parseIPv6(host) !== undefined) addresses = [{ address: host, family: 6 }];
  else {
    const code = (e: unknown) => String((e as { code?: unknown }).code ?? "lookup failed").slice(0, 40);
    addresses = await bounded(x, (o.resolve ?? systemResolve)(host)).catch((e: unknown) => {
      throw x.signal.aborted ? e : failed(x, "network", { host, errno: code(e) });
    });
    if (addresses.length === 0) throw failed(x, "network", { host });
  }
  for (const { address } of addresses) {
    const verdict = classifyAddress(address);
    if (o.standing === "public" && !verdict.public)
      throw notAllowed(x, host, address, `a ${verdict.reason} address`, "public_only");
    if ((url.protocol === "http:" || isLoopbackName(host)) && !isLoopback(address))
      throw notAllowed(x, host, address, "not this machine's loopback", "loopback_only");
  }
  return addresses[0]!;
}

/**
 * A connector that always connects to the address checked, whatever the URL's host, and
 * notes when a connection is complete. TLS keeps the host name: the server name it sends
 * (SNI) and the certificate check both use it, not the address.
 */
function pinnedConnector(
  x: Exchange,
  url: URL,
  target: ResolvedAddress,
  build: typeof BuildConnector,
  o: { timeoutMs: number; ca: string | string[] | undefined },
): BuildConnector.connector {
  const host = hostOf(url);
  const isAddress = parseIPv4(host) !== undefined || parseIPv6(host) !== undefined;
  const connect = build({
    timeout: o.timeoutMs,
    ...(isAddress ? {} : { servername: host }),
    ...(o.ca === undefined ? {} : { ca: o.ca }),
  });
  return (options, callback) => {
    connect({ ...options, hostname: target.address }, (...args) => {
      if (args[0] === null) x.connected = true;
      callback(...args);
    });
  };
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

/** A body not to be read: destroyed, its abort error swallowed (no reader is left to see it). */
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", () => undefined);
  body.destroy();
}

/** A body read whole, at most maxBytes; past it, the stream is destroyed and too_large thrown. */
async function readBody(x: Exchange, res: Dispatcher.ResponseData, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers["content-length"]);
  const tooLarge = () => failed(x, "too_large", { limit: maxBytes }, res.statusCode);
  if (Number.isFinite(declared) && declared > maxBytes) {
    discard(res.body);
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      discard(res.body);
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

interface Hop {
  url: URL;
  method: FetchMethod;
  headers: Record<string, string>;
  body: string | null;
}

/** The request a redirect leads to: 303, and 301/302 after a POST, become a GET without a body (as browsers do). */
function redirected(hop: Hop, status: number, next: URL): Hop {
  const toGet = status === 303 ? hop.method !== "GET" : (status === 301 || status === 302) && hop.method === "POST";
  if (!toGet) return { ...hop, url: next };
  const headers = { ...hop.headers };
  for (const h of BODY_HEADERS) delete headers[h];
  return { url: next, method: "GET", headers, body: null };
}

/** Where a 3xx points, when it should be followed or refused; undefined when it is an answer to return as is. */
function redirectTarget(status: number, headers: Record<string, string>, base: URL): URL | undefined {
  // A redirect that reports a settlement is the paid answer: following it would lose the PAYMENT-RESPONSE.
  if (!REDIRECTS.has(status) || headers["location"] === undefined || headers["payment-response"] !== undefined)
    return undefined;
  try {
    const next = new URL(headers["location"], base);
    next.hash = "";
    return next;
  } catch {
    return undefined;
  }
}

/**
 * Sends a checked request and returns the response, body read whole. Throws
 * PaidActionError: `origin_not_allowed` when the host resolves where its standing does not
 * allow (nothing sent), `fetch_failed` (reason timeout, too_large, network, redirects or
 * cancelled; `sent` false only when no connection was completed).
 */
export async function guardedFetch(req: OutboundRequest, o: GuardedFetchOptions): Promise<FetchedResponse> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const x: Exchange = {
    origin: req.origin,
    timeout,
    caller: o.signal,
    signal: o.signal ? AbortSignal.any([timeout, o.signal]) : timeout,
    connected: false,
  };
  let client: Dispatcher | undefined;
  try {
    if (o.standing !== "exact" && o.standing !== "public")
      throw paidError("origin_not_allowed", { origin: req.origin });
    const url = new URL(req.url);
    const target = await resolveTarget(x, url, o);
    const { Client, buildConnector } = await loadUndici();
    client = new Client(url.origin, {
      connect: pinnedConnector(x, url, target, buildConnector, { timeoutMs, ca: o.ca }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxHeaderSize: MAX_HEADER_BYTES,
    });
    return await exchange(x, client, { url, method: req.method, headers: req.headers, body: req.body }, o);
  } catch (e) {
    throw asFailure(x, e);
  } finally {
    void client?.destroy().catch(() => undefined);
  }
}

/** The hops of one exchange: a request, then same-origin redirects, up to maxRedirects. */
async function exchange(x: Exchange, client: Dispatcher, first: Hop, o: GuardedFetchOptions) {
  const maxBytes = o.maxBytes ?? DEFAULT_MAX_BYTES;
  const maxRedirects = o.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  let hop = first;
  for (let redirects = 0; ; redirects++) {
    const res = await client.request({
      path: `${hop.url.pathname}${hop.url.search}`,
      method: hop.method,
      headers: { ...hop.headers, ...o.extraHeaders, "accept-encoding": "identity" },
      body: hop.body,
      signal: x.signal,
    });
    const headers = flatHeaders(res.headers);
    const next = redirectTarget(res.statusCode, headers, hop.url);
    if (next === undefined || next.origin !== x.origin) {
      const body = await readBody(x, res, maxBytes);
      const answer: FetchedResponse = { status: res.statusCode, headers, body, url: hop.url.href };
      return next === undefined ? answer : { ...answer, redirectRefused: next.href };
    }
    await res.body.dump();
    if (redirects >= maxRedirects) throw failed(x, "redirects", { limit: maxRedirects }, res.statusCode);
    hop = redirected(hop, res.statusCode, next);
  }
}
