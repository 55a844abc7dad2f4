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
import { paidError } from "../errors.js";
import { backoff, classify, type Answer } from "./retry.js";

const MAX_RESPONSE_BYTES = 1024 * 1024;
const SECRET_REQUEST_HEADERS = new Set(["x-payment-proof", "payment-signature", "x-payment"]);

function bodySecrets(body: unknown): string[] {
  const proof = (body as { paymentProof?: unknown } | undefined)?.paymentProof;
  return typeof proof === "string" ? [proof] : [];
}

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
  | {
      ok: false;
      status: number;
      error: { code: string; message: string; [k: string]: unknown };
      headers: Record<string, string>;
    };

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

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
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
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    out[scrubDeep(k, secrets, depth + 1) as string] = scrubDeep(v, secrets, depth + 1);
  return out;
}

const cancelledError = () => paidError("cancelled", { stage: "waiting_for_service" });

export type ServiceClient = ReturnType<typeof createServiceClient>;

/** What every request of one client shares: its options, its clock and randomness, where the service is now. */
interface Client {
  o: ServiceClientOptions;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  now: () => number;
  base(): string;
  key(): string;
}

export function createServiceClient(o: ServiceClientOptions) {
  const { baseUrl, apiKey } = o;
  const c: Client = {
    o,
    sleep: o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))),
    random: o.random ?? Math.random,
    now: o.now ?? Date.now,
    base: () => (typeof baseUrl === "string" ? baseUrl : baseUrl()).replace(/\/+$/, ""),
    key: () => (typeof apiKey === "string" ? apiKey : apiKey()),
  };
  return {
    call: <T>(method: string, path: string, opts: RequestOptions<T>): Promise<ServiceResponse<T>> =>
      call(c, method, path, opts),
    /** Where the service is now. */
    get baseUrl() {
      return c.base();
    },
  };
}

/** One HTTP exchange, bounded in time and size; transport failures as TransportError. */
async function send(
  c: Client,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal | undefined,
) {
  const { timeoutMs, dispatcher } = c.o;
  const { request } = await loadUndici();
  const timeout = AbortSignal.timeout(timeoutMs * 2);
  const res = await request(`${c.base()}${path}`, {
    method: method as Dispatcher.HttpMethod,
    headers,
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
    dispatcher,
  }).catch((e: unknown) => {
    if (signal?.aborted) throw cancelledError();
    const err = e as { code?: string; name?: string; message?: string };
    if (
      err.code === "UND_ERR_HEADERS_TIMEOUT" ||
      err.code === "UND_ERR_BODY_TIMEOUT" ||
      err.name === "TimeoutError" ||
      err.name === "AbortError"
    ) {
      throw new TransportError(`no answer within ${timeoutMs} ms`, "timeout");
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
      throw new TransportError(`the response did not finish within ${timeoutMs} ms`, "timeout");
    }
    throw new TransportError(
      `connection lost while reading the response (${err.code ?? err.name ?? "error"})`,
      "connection",
    );
  }
  return { status: res.statusCode, headers: flatHeaders(res.headers), text };
}

/** The request as it goes out on every attempt, and the secrets that must never come back out of it. */
interface Outgoing {
  headers: Record<string, string>;
  body: string | undefined;
  apiKey: string;
  secrets: string[];
}

function outgoing<T>(c: Client, opts: RequestOptions<T>): Outgoing {
  const apiKey = c.key();
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
  // The key, the proof it carries, and every other known secret.
  const carried = Object.entries(headers)
    .filter(([k]) => SECRET_REQUEST_HEADERS.has(k))
    .map(([, v]) => v);
  const secrets = [apiKey, ...carried, ...bodySecrets(opts.body), ...(c.o.secrets?.() ?? [])].filter(
    (x) => x.length >= 8,
  );
  return { headers, body, apiKey, secrets };
}

/** One attempt: sent, its body parsed and scrubbed of every secret before anything reads it, and traced. */
async function attemptOnce<T>(
  c: Client,
  attempt: number,
  method: string,
  path: string,
  out: Outgoing,
  opts: RequestOptions<T>,
): Promise<{ answer: Answer; noResponse: boolean }> {
  if (c.key() !== out.apiKey) {
    // The service moved and answers to another key (see onUnreachable).
    out.apiKey = c.key();
    out.headers.authorization = `Bearer ${out.apiKey}`;
    out.secrets.push(out.apiKey);
  }
  const started = c.now();
  if (opts.signal?.aborted) throw cancelledError();
  let result: { status: number; headers: Record<string, string>; text: string } | undefined;
  let transport: TransportError | undefined;
  try {
    result = await send(c, method, path, out.headers, out.body, opts.signal);
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    transport = e;
  }
  let parsed: unknown;
  let parseFailed = false;
  if (result && result.text.length > 0) {
    try {
      parsed = scrubDeep(JSON.parse(result.text), out.secrets);
    } catch {
      parseFailed = true;
    }
  }
  const exchange: Exchange = {
    attempt,
    method,
    path,
    requestHeaders: out.headers,
    requestBody: opts.body,
    status: result?.status,
    responseHeaders: result?.headers,
    responseBody: parseFailed ? `[non-JSON body, ${result?.text.length} chars]` : parsed,
    error: transport?.message,
    durationMs: c.now() - started,
  };
  c.o.onExchange?.(exchange);
  opts.trace?.(exchange);
  return {
    answer: transport ? { transport } : { ...result!, parsed, parseFailed },
    noResponse: transport?.noResponse ?? false,
  };
}

/** A request with its retries (retry.ts decides each), always with the same Idempotency-Key. */
async function call<T>(c: Client, method: string, path: string, opts: RequestOptions<T>): Promise<ServiceResponse<T>> {
  const out = outgoing(c, opts);
  let lastProblem = "";
  let lastRetryAfter: number | undefined;
  let maxAttempts = c.o.maxAttempts;
  let askedToRecover = false;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const { answer, noResponse } = await attemptOnce(c, attempt, method, path, out, opts);
    if (noResponse && c.o.onUnreachable && !askedToRecover && !opts.signal?.aborted) {
      askedToRecover = true;
      if (await c.o.onUnreachable().catch(() => false)) {
        maxAttempts = Math.max(maxAttempts, attempt + 1);
        if ("transport" in answer) lastProblem = answer.transport.message;
        continue;
      }
    }
    const verdict = classify(answer, { what: `${method} ${path}`, schema: opts.schema, now: c.now() });
    if (verdict.kind === "done") return verdict.response;
    if (verdict.kind === "fail") throw verdict.error;
    lastProblem = verdict.problem;
    lastRetryAfter = verdict.retryAfterMs;
    if (attempt === maxAttempts) break;
    const wait = backoff(attempt, lastRetryAfter, c.random);
    if (wait === "stop") break;
    await c.sleep(wait);
    if (opts.signal?.aborted) throw cancelledError();
    lastRetryAfter = undefined;
  }
  throw paidError("service_unavailable", {
    problem: "no_answer",
    request: `${method} ${path}`,
    attempts: maxAttempts,
    lastProblem,
    ...(lastRetryAfter !== undefined ? { retryAfterSeconds: Math.ceil(lastRetryAfter / 1000) } : {}),
  });
}
