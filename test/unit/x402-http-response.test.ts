/**
 * A fetched response as the agent reads it back (src/engine/x402-http/response.ts) as
 * tables: JSON parsed, text cut at 64 KiB on a character boundary, binary named by its type,
 * and the few headers shown. Pure.
 */
import { describe, expect, it } from "vitest";
import { JSON_LIMIT, keptHeaders, shapeBody, TEXT_LIMIT } from "../../src/engine/x402-http/response.js";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("shapeBody", () => {
  it.each([
    ["application/json", '{"a":1}', { kind: "json", value: { a: 1 } }],
    ["Application/JSON; charset=utf-8", "[1,2]", { kind: "json", value: [1, 2] }],
    ["application/problem+json", '{"title":"x"}', { kind: "json", value: { title: "x" } }],
    ["application/vnd.api+json", "null", { kind: "json", value: null }],
    ["application/json", "\uFEFF{}", { kind: "json", value: {} }],
    ["application/json", "{not json", { kind: "text", text: "{not json", truncated: false }],
    ["text/plain", "hello", { kind: "text", text: "hello", truncated: false }],
    ["text/html; charset=utf-8", "<p>é</p>", { kind: "text", text: "<p>é</p>", truncated: false }],
    ["application/xml", "<a/>", { kind: "text", text: "<a/>", truncated: false }],
    ["application/atom+xml", "<feed/>", { kind: "text", text: "<feed/>", truncated: false }],
    ["application/javascript", "x()", { kind: "text", text: "x()", truncated: false }],
    ["application/x-www-form-urlencoded", "a=1", { kind: "text", text: "a=1", truncated: false }],
    ["image/png", "\u0089PNG", { kind: "binary", contentType: "image/png" }],
    ["application/octet-stream", "x", { kind: "binary", contentType: "application/octet-stream" }],
    ["application/pdf; x=y", "%PDF", { kind: "binary", contentType: "application/pdf" }],
    [undefined, "hello", { kind: "binary", contentType: "application/octet-stream" }],
    ["application/json", "", { kind: "empty" }],
    [undefined, "", { kind: "empty" }],
  ])("%s %j", (type, body, expected) => {
    expect(shapeBody(type, bytes(body))).toEqual(expected);
  });

  it("parses a JSON body longer than the text limit whole, up to 1 MiB", () => {
    const big = JSON.stringify({ s: "x".repeat(TEXT_LIMIT * 2) });
    expect(shapeBody("application/json", bytes(big))).toEqual({
      kind: "json",
      value: { s: "x".repeat(TEXT_LIMIT * 2) },
    });
  });

  it("shows a JSON body past 1 MiB as text, cut", () => {
    const huge = JSON.stringify({ s: "x".repeat(JSON_LIMIT) });
    const shaped = shapeBody("application/json", bytes(huge));
    expect(shaped).toMatchObject({ kind: "text", truncated: true });
    if (shaped.kind === "text") expect(shaped.text).toHaveLength(TEXT_LIMIT);
  });

  it("cuts text at TEXT_LIMIT bytes", () => {
    expect(shapeBody("text/plain", bytes("a".repeat(TEXT_LIMIT)))).toEqual({
      kind: "text",
      text: "a".repeat(TEXT_LIMIT),
      truncated: false,
    });
    const cut = shapeBody("text/plain", bytes("a".repeat(TEXT_LIMIT + 1)));
    expect(cut).toEqual({ kind: "text", text: "a".repeat(TEXT_LIMIT), truncated: true });
  });

  it.each([
    ["é", 2],
    ["€", 3],
    ["😀", 4],
  ])("never splits a character (%s, %i bytes) at the cut", (char, width) => {
    for (let offset = 0; offset < width; offset++) {
      const text = "a".repeat(TEXT_LIMIT - offset - 1) + char.repeat(4);
      const shaped = shapeBody("text/plain", bytes(text));
      if (shaped.kind !== "text") throw new Error("expected text");
      expect(shaped.truncated).toBe(true);
      expect(shaped.text).not.toContain("\uFFFD");
      expect(bytes(shaped.text).length).toBeLessThanOrEqual(TEXT_LIMIT);
      expect(text.startsWith(shaped.text)).toBe(true);
      expect(bytes(shaped.text).length).toBeGreaterThan(TEXT_LIMIT - width);
    }
  });
});

describe("keptHeaders", () => {
  it("keeps content type and the allow-list, names lower-cased; drops the rest", () => {
    expect(
      keptHeaders({
        "Content-Type": "application/json",
        "content-length": "12",
        "content-language": "en",
        "cache-control": "no-store",
        etag: '"x"',
        "last-modified": "Wed, 21 Oct 2015 07:28:00 GMT",
        expires: "0",
        "retry-after": "5",
        location: "/next",
        link: "</a>; rel=next",
        "X-Request-Id": "r1",
        "set-cookie": "session=secret",
        "payment-response": "e30=",
        server: "nginx",
        authorization: "Bearer t",
      }),
    ).toEqual({
      "content-type": "application/json",
      "content-length": "12",
      "content-language": "en",
      "cache-control": "no-store",
      etag: '"x"',
      "last-modified": "Wed, 21 Oct 2015 07:28:00 GMT",
      expires: "0",
      "retry-after": "5",
      location: "/next",
      link: "</a>; rel=next",
      "x-request-id": "r1",
    });
  });
});
