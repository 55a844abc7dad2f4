/**
 * What one attempt's answer means for a request, and how long to wait before the next:
 * pure rules, table-tested. A connection error, a timeout, 429, 5xx or a garbled body are
 * retried (always with the same Idempotency-Key); a redirect and a 2xx body that does not
 * validate are errors; any other status is the service's answer, returned as it is.
 */
import type { z } from "zod";
import { ErrorBody } from "../../domain/wire.js";
import { paidError, PaidActionError } from "../errors.js";

/** A Retry-After above this is not waited for: the request gives up and says when to retry. */
export const MAX_RETRY_AFTER_MS = 30_000;
/** The exponential backoff's cap, before jitter. */
const MAX_BACKOFF_MS = 5_000;
const FIRST_BACKOFF_MS = 200;

/** What an attempt got: a transport failure, or a response (its body parsed when it was JSON). */
export type Answer =
  | { transport: { kind: "timeout" | "connection" | "body"; message: string } }
  | { status: number; headers: Record<string, string>; text: string; parsed: unknown; parseFailed: boolean };

export type Verdict<T> =
  | {
      kind: "done";
      response:
        | { ok: true; status: number; body: T; headers: Record<string, string> }
        | {
            ok: false;
            status: number;
            error: { code: string; message: string; [k: string]: unknown };
            headers: Record<string, string>;
          };
    }
  | { kind: "retry"; problem: string; retryAfterMs?: number }
  | { kind: "fail"; error: PaidActionError };

/** Seconds or an HTTP date, as milliseconds from `now`. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** What the attempt's answer means (`what` names the request in messages: "POST /quotes"). */
export function classify<T>(a: Answer, o: { what: string; schema: z.ZodType<T>; now: number }): Verdict<T> {
  if ("transport" in a) return { kind: "retry", problem: a.transport.message };
  const { status, headers } = a;
  if (status === 429 || status >= 500) {
    const code =
      a.parsed !== undefined && ErrorBody.safeParse(a.parsed).success ? ` ${(a.parsed as ErrorBody).error.code}` : "";
    return {
      kind: "retry",
      problem: `HTTP ${status}${code}`,
      retryAfterMs: retryAfterMs(headers["retry-after"], o.now),
    };
  }
  if (status >= 300 && status < 400) {
    const location = headers.location?.slice(0, 200);
    return {
      kind: "fail",
      error: paidError("service_error", {
        problem: "redirect",
        request: o.what,
        status,
        ...(location ? { location } : {}),
      }),
    };
  }
  // A truncated or garbled body on a state-changing call: the same key makes a retry safe.
  if (a.parseFailed || (a.text.length === 0 && status !== 204))
    return {
      kind: "retry",
      problem: `HTTP ${status} with ${a.parseFailed ? "a body that is not JSON" : "an empty body"}`,
    };
  if (status >= 200 && status < 300) {
    const valid = o.schema.safeParse(a.parsed);
    if (valid.success) return { kind: "done", response: { ok: true, status, body: valid.data, headers } };
    const first = valid.error.issues[0];
    const where = first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "invalid";
    return {
      kind: "fail",
      error: paidError("service_error", { problem: "off_interface", request: o.what, status, detail: where }),
    };
  }
  const err = ErrorBody.safeParse(a.parsed);
  const error = err.success
    ? (err.data.error as { code: string; message: string })
    : { code: `http_${status}`, message: `HTTP ${status} without a v1 error body` };
  return {
    kind: "done",
    response: { ok: false, status, error: { ...error, message: String(error.message).slice(0, 500) }, headers },
  };
}

/**
 * How long to wait before attempt `attempt + 1`: full jitter over an exponential backoff,
 * never less than the service's Retry-After; "stop" when that is more than it is worth waiting.
 */
export function backoff(attempt: number, retryAfter: number | undefined, random: () => number): number | "stop" {
  if (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS) return "stop";
  const wait = Math.floor(random() * Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)));
  return retryAfter === undefined ? wait : Math.max(wait, retryAfter);
}
