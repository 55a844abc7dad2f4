/**
 * The HTTP client for a v1 service (undici): short per-request timeouts, retries on
 * connection errors, timeouts, 429 and 5xx with exponential backoff and full jitter that
 * honour `Retry-After` — always with the same Idempotency-Key — bounded response sizes,
 * no redirects, and zod validation of every response (unknown fields kept). The base URL
 * and key are read per request, so a service that moves (the embedded sandbox taken over on
 * another port) is followed by the same client.
 */
import type { Dispatcher } from "undici";

/** undici loads with the first request: a server answering from its cached catalog starts faster. */
let undici: Promise<typeof import("undici")> | undefined;
const loadUndici = () => (undici ??= import("undici"));
import type { z } from "zod";
import { ErrorBody } from "../../domain/wire.js";
import { PaidActionError } from "../errors.js";

const MAX_RESPONSE_BYTES = 1024 * 1024;
const SECRET_REQUEST_HEADERS = new Set(["x-payment-proof", "payment-signature", "x-payment"]);

function bodySecrets(body: unknown): string[] {
  const proof = (body as { paymentProof?: unknown } | undefined)?.paymentProof;
  return typeof proof === "string" ? [proof] : [];
}
const MAX_RETRY_AFTER_MS = 30_000;

export interface Exchange {
  attempt: number;
  method: string;
  path: string;
  requestHeaders: Record<string, string>;
  requestBody?: unknown;
  status?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: unknown;
  error?: string;
  durationMs: number;
}

export interface ServiceClientOptions {
  /** A function when the service may move: read at every attempt. */
  baseUrl: string | (() => string);
  apiKey: string | (() => string);
  timeoutMs: number;
  maxAttempts: number;
  dispatcher?: Dispatcher;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
  /** Sees every attempt, for transcripts. Headers here still hold secrets: redact before storing. */
  onExchange?: (e: Exchange) => void;
  /**
   * Secrets known elsewhere (e.g. proofs of other intents) to scrub from every response
   * before anything reads or cuts it. The API key and the secrets of the request itself
   * (its proof) are always scrubbed.
   */
  secrets?: () => Iterable<string>;
  /**
   * Called when an attempt got no response at all (the connection was refused or reset):
   * a chance to find the service again, e.g. to take over an embedded sandbox whose owner
   * is gone. Resolving true grants the request one extra attempt, at once (the same
   * Idempotency-Key, like every retry). Concurrent calls should share one recovery.
   */
  onUnreachable?: () => Promise<boolean>;
}

export interface RequestOptions<T> {
  body?: unknown;
  headers?: Record<string, string>;
  idempotencyKey?: string;
  /** Validates a 2xx body. */
  schema: z.ZodType<T>;
  /** Sees every attempt of this request (for the call's transcript). */
  trace?: (e: Exchange) => void;
  /** The caller gave up: stop at once (PaidActionError "cancelled"), no retry. */
  signal?: AbortSignal;
}

export type ServiceResponse<T> =
  | { ok: true; status: number; body: T; headers: Record<string, string> }
  | { ok: false; status: number; error: { code: string; message: string; [k: string]: unknown }; headers: Record<string, string> };

class TransportError extends Error {
  constructor(
    message: string,
    readonly kind: "timeout" | "connection" | "body",
    /** The request failed before any response began. */
    readonly noResponse = false,
  ) {
    super(message);
  }
}

function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

async function readBounded(body: Dispatcher.ResponseData["body"]): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw new TransportError(`response body larger than ${MAX_RESPONSE_BYTES} bytes`, "body");
    }
    chunks.push(chunk);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new TransportError("response body is not valid UTF-8", "body");
  }
}

/**
 * Replaces every occurrence of a secret in every string (and key) of a parsed body. Runs
 * before anything reads or truncates the body: a cut can never leave part of a secret.
 */
export function scrubDeep(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === "string") {
    let out = value;
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join("[redacted]");
    return out;
  }
  if (depth > 64 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[scrubDeep(k, secrets, depth + 1) as string] = scrubDeep(v, secrets, depth + 1);
  return out;
}

const cancelledError = () => new PaidActionError("cancelled", "the call was cancelled while waiting for the service; nothing was paid");

export type ServiceClient = ReturnType<typeof createServiceClient>;

export function createServiceClient(o: ServiceClientOptions) {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = o.random ?? Math.random;
  const now = o.now ?? Date.now;
  const baseUrl = o.baseUrl;
  const apiKey = o.apiKey;
  const base = () => (typeof baseUrl === "string" ? baseUrl : baseUrl()).replace(/\/+$/, "");
  const key = () => (typeof apiKey === "string" ? apiKey : apiKey());

  async function once(method: string, path: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal | undefined) {
    const { request } = await loadUndici();
    const timeout = AbortSignal.timeout(o.timeoutMs * 2);
    const res = await request(`${base()}${path}`, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      dispatcher: o.dispatcher,
    }).catch((e: unknown) => {
      if (signal?.aborted) throw cancelledError();
      const err = e as { code?: string; name?: string; message?: string };
      if (err.code === "UND_ERR_HEADERS_TIMEOUT" || err.code === "UND_ERR_BODY_TIMEOUT" || err.name === "TimeoutError" || err.name === "AbortError") {
        throw new TransportError(`no answer within ${o.timeoutMs} ms`, "timeout");
      }
      throw new TransportError(`connection failed (${err.code ?? err.name ?? "error"})`, "connection", true);
    });
    let text: string;
    try {
      text = await readBounded(res.body);
    } catch (e) {
      if (e instanceof TransportError) throw e;
      if (signal?.aborted) throw cancelledError();
      const err = e as { code?: string; name?: string };
      if (err.code === "UND_ERR_BODY_TIMEOUT" || err.name === "TimeoutError" || err.name === "AbortError") {
        throw new TransportError(`the response did not finish within ${o.timeoutMs} ms`, "timeout");
      }
      throw new TransportError(`connection lost while reading the response (${err.code ?? err.name ?? "error"})`, "connection");
    }
    return { status: res.statusCode, headers: flatHeaders(res.headers), text };
  }

  async function call<T>(method: string, path: string, opts: RequestOptions<T>): Promise<ServiceResponse<T>> {
    let apiKey = key();
    const headers: Record<string, string> = {
      authorization: `Bearer ${apiKey}`,
      accept: "application/json",
      "user-agent": "paid-actions-mcp",
      ...(opts.headers ?? {}),
    };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    if (opts.idempotencyKey) headers["idempotency-key"] = opts.idempotencyKey;
    // What must never come back out of this call: the key, the proof it carries, and every other known secret.
    const secrets = [apiKey, ...Object.entries(headers).filter(([k]) => SECRET_REQUEST_HEADERS.has(k)).map(([, v]) => v), ...bodySecrets(opts.body), ...(o.secrets?.() ?? [])].filter((x) => x.length >= 8);

    let lastProblem = "";
    let lastRetryAfter: number | undefined;
    let maxAttempts = o.maxAttempts;
    let askedToRecover = false;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (key() !== apiKey) {
        // The service moved and answers to another key (see onUnreachable).
        apiKey = key();
        headers.authorization = `Bearer ${apiKey}`;
        secrets.push(apiKey);
      }
      const started = now();
      let result: { status: number; headers: Record<string, string>; text: string } | undefined;
      let transport: TransportError | undefined;
      if (opts.signal?.aborted) throw cancelledError();
      try {
        result = await once(method, path, headers, body, opts.signal);
      } catch (e) {
        if (!(e instanceof TransportError)) throw e;
        transport = e;
      }
      let parsed: unknown;
      let parseFailed = false;
      if (result && result.text.length > 0) {
        try {
          parsed = scrubDeep(JSON.parse(result.text), secrets);
        } catch {
          parseFailed = true;
        }
      }
      const exchange: Exchange = {
        attempt,
        method,
        path,
        requestHeaders: headers,
        requestBody: opts.body,
        status: result?.status,
        responseHeaders: result?.headers,
        responseBody: parseFailed ? `[non-JSON body, ${result?.text.length} chars]` : parsed,
        error: transport?.message,
        durationMs: now() - started,
      };
      o.onExchange?.(exchange);
      opts.trace?.(exchange);

      let retryable = false;
      if (transport) {
        retryable = transport.kind !== "body" || attempt < maxAttempts;
        lastProblem = transport.message;
        if (transport.noResponse && o.onUnreachable && !askedToRecover && !opts.signal?.aborted) {
          askedToRecover = true;
          if (await o.onUnreachable().catch(() => false)) {
            maxAttempts = Math.max(maxAttempts, attempt + 1);
            continue;
          }
        }
      } else if (result) {
        const { status } = result;
        if (status === 429 || status >= 500) {
          retryable = true;
          lastRetryAfter = retryAfterMs(result.headers["retry-after"], now());
          lastProblem = `HTTP ${status}${parsed && ErrorBody.safeParse(parsed).success ? ` ${(parsed as ErrorBody).error.code}` : ""}`;
        } else if (status >= 300 && status < 400) {
          throw new PaidActionError("service_error", `the service answered ${method} ${path} with a redirect (HTTP ${status}${result.headers.location ? ` to ${result.headers.location.slice(0, 200)}` : ""}); redirects are not followed`, {
            status,
          });
        } else if (parseFailed || (result.text.length === 0 && status !== 204)) {
          // A truncated or garbled body on a state-changing call: the same key makes a retry safe.
          retryable = true;
          lastProblem = `HTTP ${status} with ${parseFailed ? "a body that is not JSON" : "an empty body"}`;
        } else if (status >= 200 && status < 300) {
          const valid = opts.schema.safeParse(parsed);
          if (!valid.success) {
            const first = valid.error.issues[0];
            throw new PaidActionError("service_error", `the service's answer to ${method} ${path} does not match the v1 interface: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "invalid"}`, {
              status,
            });
          }
          return { ok: true, status, body: valid.data, headers: result.headers };
        } else {
          const err = ErrorBody.safeParse(parsed);
          const error = err.success
            ? (err.data.error as { code: string; message: string })
            : { code: `http_${status}`, message: `HTTP ${status} without a v1 error body` };
          return { ok: false, status, error: { ...error, message: String(error.message).slice(0, 500) }, headers: result.headers };
        }
      }
      if (!retryable || attempt === maxAttempts) break;
      const backoff = Math.min(5_000, 200 * 2 ** (attempt - 1));
      let wait = Math.floor(random() * backoff);
      if (lastRetryAfter !== undefined) {
        if (lastRetryAfter > MAX_RETRY_AFTER_MS) break;
        wait = Math.max(wait, lastRetryAfter);
      }
      await sleep(wait);
      if (opts.signal?.aborted) throw cancelledError();
      lastRetryAfter = undefined;
    }
    throw new PaidActionError(
      "service_unavailable",
      `the service did not answer ${method} ${path} usefully after ${maxAttempts} attempts (${lastProblem}); it is safe to retry later with the same intent`,
      { lastProblem, ...(lastRetryAfter !== undefined ? { retryAfterSeconds: Math.ceil(lastRetryAfter / 1000) } : {}) },
      true,
    );
  }

  return {
    call,
    /** Where the service is now. */
    get baseUrl() {
      return base();
    },
  };
}
