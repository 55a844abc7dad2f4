/**
 * paid_fetch's request rules (src/engine/x402-http/request.ts) as tables: what an agent may
 * ask to send, every refusal with its field, the URL as the journal keeps it, and which
 * hosts are this machine's loopback however they are spelled. Pure: no network.
 */
import { describe, expect, it } from "vitest";
import {
  BODY_LIMIT,
  HEADER_VALUE_LIMIT,
  isLoopbackHost,
  readFetchInput,
  redactUrl,
  URL_LIMIT,
  type FetchInput,
} from "../../src/engine/x402-http/request.js";

const ok = (input: FetchInput) => {
  const r = readFetchInput(input);
  if (!r.ok) throw new Error(`refused ${r.field}: ${r.message}`);
  return r.request;
};

describe("readFetchInput: what is sent", () => {
  it("normalizes the URL: fragment and default port dropped, host lower-cased, origin named", () => {
    const r = ok({ url: "HTTPS://API.Example.com:443/a/../b?q=1#frag" });
    expect(r).toEqual({
      url: "https://api.example.com/b?q=1",
      origin: "https://api.example.com",
      method: "GET",
      headers: {},
      body: null,
    });
  });

  it.each([
    ["http://127.0.0.1:4021/x", "http://127.0.0.1:4021"],
    ["http://[::1]:8080/", "http://[::1]:8080"],
    ["http://localhost:3000/", "http://localhost:3000"],
    ["http://shop.localhost/", "http://shop.localhost"],
    ["http://0x7f.1/", "http://127.0.0.1"],
    ["https://api.example.com:8443/", "https://api.example.com:8443"],
  ])("allows %s (origin %s)", (url, origin) => {
    expect(ok({ url }).origin).toBe(origin);
  });

  it.each([
    ["get", "GET"],
    ["Post", "POST"],
    ["PUT", "PUT"],
    ["patch", "PATCH"],
    ["delete", "DELETE"],
    [undefined, "GET"],
  ])("reads the method %s as %s", (method, expected) => {
    expect(ok({ url: "https://a.example/", method }).method).toBe(expected);
  });

  it("lower-cases header names and keeps the values as given", () => {
    const r = ok({ url: "https://a.example/", headers: { Authorization: "Bearer t", "X-Trace": " a b " } });
    expect(r.headers).toEqual({ authorization: "Bearer t", "x-trace": " a b " });
  });

  it("sends an object or array body as JSON, with content-type application/json unless one is given", () => {
    expect(ok({ url: "https://a.example/", method: "POST", body: { a: 1 } })).toMatchObject({
      body: '{"a":1}',
      headers: { "content-type": "application/json" },
    });
    expect(ok({ url: "https://a.example/", method: "PUT", body: [1, "x"] }).body).toBe('[1,"x"]');
    expect(
      ok({
        url: "https://a.example/",
        method: "POST",
        headers: { "Content-Type": "application/vnd.api+json" },
        body: { a: 1 },
      }).headers,
    ).toEqual({ "content-type": "application/vnd.api+json" });
  });

  it("sends a string body as it is, with no content-type added", () => {
    expect(ok({ url: "https://a.example/", method: "POST", body: "a=1&b=2" })).toMatchObject({
      body: "a=1&b=2",
      headers: {},
    });
  });

  it("allows a body on DELETE, and up to the limits", () => {
    expect(ok({ url: "https://a.example/", method: "DELETE", body: "x" }).body).toBe("x");
    expect(ok({ url: "https://a.example/", method: "POST", body: "x".repeat(BODY_LIMIT) }).body).toHaveLength(
      BODY_LIMIT,
    );
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`x-h${i}`, "v"]));
    expect(Object.keys(ok({ url: "https://a.example/", headers: fifty }).headers)).toHaveLength(50);
  });
});

describe("readFetchInput: what is refused", () => {
  const base = { url: "https://a.example/" };
  it.each<[string, FetchInput, "url" | "method" | "headers" | "body", RegExp]>([
    ["a URL that is not a string", { url: 42 }, "url", /must be a string/],
    ["a relative URL", { url: "/x" }, "url", /not an absolute URL/],
    ["a URL past 8 KiB", { url: `https://a.example/${"x".repeat(URL_LIMIT)}` }, "url", /longer than/],
    ["ftp", { url: "ftp://a.example/" }, "url", /must be https/],
    ["file", { url: "file:///etc/passwd" }, "url", /must be https/],
    ["javascript", { url: "javascript:alert(1)" }, "url", /must be https/],
    ["plain http to a public host", { url: "http://api.example.com/" }, "url", /only to this machine's loopback/],
    ["plain http to a private address", { url: "http://10.0.0.1/" }, "url", /only to this machine's loopback/],
    ["plain http to 0.0.0.0", { url: "http://0.0.0.0:80/" }, "url", /only to this machine's loopback/],
    ["user and password", { url: "https://user:pass@a.example/" }, "url", /credentials.*Authorization/],
    ["a user alone", { url: "https://user@a.example/" }, "url", /credentials/],
    ["an unknown method", { ...base, method: "TRACE" }, "method", /one of GET, POST, PUT, PATCH, DELETE/],
    ["HEAD", { ...base, method: "HEAD" }, "method", /one of/],
    ["a method that is not a string", { ...base, method: 1 }, "method", /one of/],
    ["headers as an array", { ...base, headers: [["a", "b"]] }, "headers", /must be an object/],
    ["headers as a string", { ...base, headers: "a: b" }, "headers", /must be an object/],
    ["51 headers", { ...base, headers: manyHeaders(51) }, "headers", /at most 50/],
    ["a header name with a space", { ...base, headers: { "x a": "1" } }, "headers", /not a valid HTTP token/],
    ["a header name with a colon", { ...base, headers: { "x:a": "1" } }, "headers", /not a valid HTTP token/],
    ["a number value", { ...base, headers: { "x-a": 1 } }, "headers", /string value/],
    ["a CR LF in a value", { ...base, headers: { "x-a": "1\r\nx-b: 2" } }, "headers", /line break/],
    ["a LF in a value", { ...base, headers: { "x-a": "1\nb" } }, "headers", /line break/],
    ["a NUL in a value", { ...base, headers: { "x-a": "1\0" } }, "headers", /NUL/],
    [
      "a value past 8 KiB",
      { ...base, headers: { "x-a": "v".repeat(HEADER_VALUE_LIMIT + 1) } },
      "headers",
      /longer than 8192 bytes/,
    ],
    ["one name twice", { ...base, headers: { Accept: "a", accept: "b" } }, "headers", /given twice/],
    ["a body on GET", { ...base, body: "x" }, "body", /GET request carries no body.*POST/],
    ["an object body on GET", { ...base, method: "get", body: {} }, "body", /GET request carries no body/],
    ["a number body", { ...base, method: "POST", body: 3 }, "body", /string, or a JSON object/],
    ["a boolean body", { ...base, method: "POST", body: true }, "body", /string, or a JSON object/],
    [
      "a body past 1 MiB",
      { ...base, method: "POST", body: "é".repeat(BODY_LIMIT / 2 + 1) },
      "body",
      /larger than 1048576 bytes/,
    ],
    [
      "an object body past 1 MiB",
      { ...base, method: "POST", body: { a: "x".repeat(BODY_LIMIT) } },
      "body",
      /larger than/,
    ],
    ["a body that is not JSON", { ...base, method: "POST", body: { n: 10n } }, "body", /cannot be written as JSON/],
  ])("refuses %s", (_what, input, field, message) => {
    const r = readFetchInput(input);
    expect(r).toMatchObject({ ok: false, field });
    if (!r.ok) expect(r.message).toMatch(message);
  });

  it.each([
    "PAYMENT-SIGNATURE",
    "payment-signature",
    "Payment-Signature",
    "X-PAYMENT",
    "x-payment",
    "X-Payment",
    "PAYMENT-REQUIRED",
    "Payment-Response",
    "X-PAYMENT-RESPONSE",
    "x-Payment-Response",
  ])("refuses the x402 payment header %s, without quoting its value", (name) => {
    const r = readFetchInput({ ...base, headers: { [name]: "c2VjcmV0LXByb29m" } });
    expect(r).toMatchObject({ ok: false, field: "headers" });
    if (r.ok) return;
    expect(r.message).toMatch(/x402 payment header.*leave it out/);
    expect(r.message).toContain(name);
    expect(r.message).not.toContain("c2VjcmV0LXByb29m");
  });

  it.each([
    "Connection",
    "keep-alive",
    "Proxy-Authenticate",
    "proxy-authorization",
    "Proxy-Connection",
    "TE",
    "trailer",
    "Transfer-Encoding",
    "upgrade",
    "Host",
    "content-length",
    "Expect",
  ])("refuses the connection-level header %s", (name) => {
    const r = readFetchInput({ ...base, headers: { [name]: "x" } });
    expect(r).toMatchObject({ ok: false, field: "headers" });
    if (!r.ok) expect(r.message).toMatch(/about the connection/);
  });

  it("refuses accept-encoding: bodies are fetched unencoded", () => {
    const r = readFetchInput({ ...base, headers: { "Accept-Encoding": "gzip" } });
    expect(r).toMatchObject({ ok: false, field: "headers" });
  });

  it("quotes what the agent gave in a bounded, printable form", () => {
    const r = readFetchInput({ url: `ftp://a.example/${"x".repeat(200)}` });
    if (r.ok) throw new Error("expected a refusal");
    expect(r.message.length).toBeLessThan(200);
    const s = readFetchInput({ ...base, headers: { ["x\u0007y"]: "1" } });
    if (s.ok) throw new Error("expected a refusal");
    expect(s.message).not.toContain("\u0007");
  });
});

function manyHeaders(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
}

describe("redactUrl: query values out, names kept, no userinfo nor fragment", () => {
  it.each([
    ["https://api.example.com/v1/data?key=SECRET&city=Paris", "https://api.example.com/v1/data?key=…&city=…"],
    ["https://u:p@api.example.com/x#frag", "https://api.example.com/x"],
    ["https://api.example.com/x?flag&a=", "https://api.example.com/x?flag&a=…"],
    ["https://api.example.com/x?a=1=2", "https://api.example.com/x?a=…"],
    ["https://api.example.com/x?", "https://api.example.com/x"],
    ["http://127.0.0.1:4021/x402/weather?city=Oslo", "http://127.0.0.1:4021/x402/weather?city=…"],
    ["https://API.example.com:443/a%20b?t=x%20y", "https://api.example.com/a%20b?t=…"],
    ["not a url", "(not a URL)"],
  ])("%s -> %s", (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });
});

describe("isLoopbackHost: this machine, however spelled", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.0.0.2", true],
    ["127.255.255.254", true],
    ["localhost", true],
    ["LOCALHOST.", true],
    ["LocalHost", true],
    ["shop.localhost", true],
    ["a.b.localhost.", true],
    ["::1", true],
    ["[::1]", true],
    ["[0:0:0:0:0:0:0:1]", true],
    [new URL("http://0x7f.1/").hostname, true],
    ["0x7f.1", true],
    [new URL("http://2130706433/").hostname, true],
    ["2130706433", true],
    [new URL("http://[::ffff:127.0.0.1]/").hostname, true],
    ["[::ffff:7f00:1]", true],
    ["0.0.0.0", false],
    ["[::]", false],
    ["10.0.0.1", false],
    ["128.0.0.1", false],
    ["localhost.example.com", false],
    ["notlocalhost", false],
    ["example.com", false],
    ["[::2]", false],
    ["", false],
  ])("%s -> %s", (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
