/**
 * What one attempt's answer means, and how long to wait before the next
 * (src/engine/service/retry.ts): pure tables, no network.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { backoff, classify, MAX_RETRY_AFTER_MS, retryAfterMs, type Answer } from "../../src/engine/service/retry.js";

const NOW = Date.parse("2030-01-01T00:00:00Z");
const schema = z.looseObject({ quoteId: z.string() });
const response = (
  status: number,
  parsed: unknown,
  o: { headers?: Record<string, string>; text?: string; parseFailed?: boolean } = {},
): Answer => ({
  status,
  headers: o.headers ?? {},
  text: o.text ?? (parsed === undefined ? "" : JSON.stringify(parsed)),
  parsed,
  parseFailed: o.parseFailed ?? false,
});
const verdict = (a: Answer) => classify(a, { what: "POST /quotes", schema, now: NOW });
const errorBody = (code: string) => ({ error: { code, message: `m ${code}`, requestId: "req_1" } });

describe("classify", () => {
  it.each<[string, Answer, string, string?]>([
    [
      "a connection refused",
      { transport: { kind: "connection", message: "connection failed (ECONNREFUSED)" } },
      "retry",
      "connection failed (ECONNREFUSED)",
    ],
    [
      "a timeout",
      { transport: { kind: "timeout", message: "no answer within 10000 ms" } },
      "retry",
      "no answer within 10000 ms",
    ],
    [
      "a body cut short",
      { transport: { kind: "body", message: "response body larger than 1048576 bytes" } },
      "retry",
      "response body larger than 1048576 bytes",
    ],
    ["429", response(429, errorBody("rate_limited")), "retry", "HTTP 429 rate_limited"],
    ["503 without a v1 body", response(503, undefined, { text: "down", parseFailed: true }), "retry", "HTTP 503"],
    ["500", response(500, errorBody("internal_error")), "retry", "HTTP 500 internal_error"],
    [
      "a 2xx that is not JSON",
      response(201, undefined, { text: "<html>", parseFailed: true }),
      "retry",
      "HTTP 201 with a body that is not JSON",
    ],
    ["an empty 2xx", response(201, undefined), "retry", "HTTP 201 with an empty body"],
    ["an empty 4xx", response(404, undefined), "retry", "HTTP 404 with an empty body"],
  ])("%s: %s", (_name, answer, kind, problem) => {
    const v = verdict(answer);
    expect(v.kind).toBe(kind);
    if (v.kind === "retry") expect(v.problem).toBe(problem);
  });

  it("waits what the service asks (Retry-After in seconds or as a date)", () => {
    expect(verdict(response(429, errorBody("rate_limited"), { headers: { "retry-after": "3" } }))).toMatchObject({
      kind: "retry",
      retryAfterMs: 3_000,
    });
    expect(
      verdict(
        response(503, errorBody("unavailable"), { headers: { "retry-after": new Date(NOW + 7_000).toUTCString() } }),
      ),
    ).toMatchObject({ kind: "retry", retryAfterMs: 7_000 });
  });

  it("a valid 2xx is the answer; one that does not validate is a service_error", () => {
    expect(verdict(response(201, { quoteId: "qt_1", extra: true }))).toEqual({
      kind: "done",
      response: { ok: true, status: 201, body: { quoteId: "qt_1", extra: true }, headers: {} },
    });
    const bad = verdict(response(201, { quote: 1 }));
    expect(bad.kind).toBe("fail");
    if (bad.kind === "fail") expect(bad.error).toMatchObject({ code: "service_error", context: { status: 201 } });
    const noContent = verdict(response(204, undefined));
    expect(noContent.kind).toBe("fail");
  });

  it("a redirect is never followed", () => {
    const v = verdict(
      response(302, undefined, { headers: { location: "https://elsewhere.example/v1" }, text: " ", parseFailed: true }),
    );
    expect(v.kind).toBe("fail");
    if (v.kind === "fail")
      expect(v.error.message).toMatch(/with a redirect \(HTTP 302 to https:\/\/elsewhere\.example\/v1\)/);
  });

  it("any other status is the service's answer, its error body kept (message bounded)", () => {
    expect(
      verdict(response(409, { error: { code: "quote_consumed", message: "x".repeat(600), executionId: "exe_1" } })),
    ).toEqual({
      kind: "done",
      response: {
        ok: false,
        status: 409,
        error: { code: "quote_consumed", message: "x".repeat(500), executionId: "exe_1" },
        headers: {},
      },
    });
    expect(verdict(response(418, { teapot: true }))).toMatchObject({
      kind: "done",
      response: { ok: false, error: { code: "http_418", message: "HTTP 418 without a v1 error body" } },
    });
  });
});

describe("retryAfterMs", () => {
  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ["", undefined],
    ["5", 5_000],
    [" 2 ", 2_000],
    [new Date(NOW + 1_500).toUTCString(), 1_000], // HTTP dates have whole seconds
    [new Date(NOW - 60_000).toUTCString(), 0],
    ["soon", undefined],
  ])("%s -> %s", (header, ms) => expect(retryAfterMs(header, NOW)).toBe(ms));
});

describe("backoff", () => {
  it.each<[number, number | undefined, number, number | "stop"]>([
    // Full jitter over 200 ms doubling per attempt, capped at 5 s.
    [1, undefined, 0.5, 100],
    [2, undefined, 0.5, 200],
    [3, undefined, 0.999, 799],
    [10, undefined, 0.5, 2_500],
    [1, undefined, 0, 0],
    // Never sooner than Retry-After...
    [1, 3_000, 0.5, 3_000],
    [10, 1_000, 0.9, 4_500],
    // ...unless that is too long to wait: stop, and say when to retry.
    [1, MAX_RETRY_AFTER_MS + 1, 0.5, "stop"],
    [1, MAX_RETRY_AFTER_MS, 0.5, MAX_RETRY_AFTER_MS],
  ])("attempt %s, Retry-After %s, random %s -> %s", (attempt, retryAfter, r, wait) => {
    expect(backoff(attempt, retryAfter, () => r)).toBe(wait);
  });
});
