/**
 * Who paid_fetch may pay (src/engine/x402-http/origins.ts) as tables: allowOrigins read,
 * origins normalized, and where an origin stands — listed exactly, allowed by `*` at public
 * addresses only, or refused. Nothing is allowed by default. Pure.
 */
import { describe, expect, it } from "vitest";
import {
  normalizeOrigin,
  originStanding,
  parseAllowOrigins,
  type OriginRule,
} from "../../src/engine/x402-http/origins.js";

const rule = (entries: string[]): OriginRule => {
  const r = parseAllowOrigins(entries);
  if (!r.ok) throw new Error(r.message);
  return r.rule;
};

describe("normalizeOrigin", () => {
  it.each([
    ["HTTPS://Api.Example.com:443/", "https://api.example.com"],
    ["https://api.example.com", "https://api.example.com"],
    ["https://api.example.com:8443", "https://api.example.com:8443"],
    ["http://127.0.0.1:4021", "http://127.0.0.1:4021"],
    ["http://LOCALHOST:80/", "http://localhost"],
    ["http://[::1]:3000", "http://[::1]:3000"],
    ["https://bücher.example", "https://xn--bcher-kva.example"],
    ["https://api.example.com/path", undefined],
    ["https://api.example.com/?", undefined],
    ["https://api.example.com?q=1", undefined],
    ["https://api.example.com#x", undefined],
    ["https://user:pw@api.example.com", undefined],
    ["ftp://api.example.com", undefined],
    ["api.example.com", undefined],
    ["*", undefined],
    ["https://*.example.com", undefined],
    ["", undefined],
  ])("%s -> %s", (text, expected) => {
    expect(normalizeOrigin(text)).toBe(expected);
  });
});

describe("parseAllowOrigins", () => {
  it("reads exact origins, normalized, and `*`; blanks are skipped", () => {
    expect(rule([" https://API.example.com/ ", "http://127.0.0.1:4021", ""])).toEqual({
      any: false,
      exact: new Set(["https://api.example.com", "http://127.0.0.1:4021"]),
    });
    expect(rule(["*"])).toEqual({ any: true, exact: new Set() });
    expect(rule([])).toEqual({ any: false, exact: new Set() });
  });

  it.each([
    ["https://api.example.com/v1", /is not an origin.*scheme, host and port only/],
    ["api.example.com", /is not an origin/],
    ["https://*.example.com", /is not an origin/],
    ["https://api.*", /is not an origin/],
    [
      "http://api.example.com",
      /plain http is allowed only to this machine's loopback; write https:\/\/api.example.com/,
    ],
    ["http://10.0.0.1:8080", /plain http is allowed only/],
  ])("refuses %s", (entry, message) => {
    const r = parseAllowOrigins(["https://ok.example", entry]);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(message);
  });
});

describe("originStanding", () => {
  it.each<[string[], string, "exact" | "public" | "refused"]>([
    [[], "https://api.example.com", "refused"],
    [["https://api.example.com"], "https://api.example.com", "exact"],
    [["https://api.example.com"], "HTTPS://API.EXAMPLE.COM:443", "exact"],
    [["https://api.example.com"], "https://api.example.com:8443", "refused"],
    [["https://api.example.com"], "https://other.example.com", "refused"],
    [["https://api.example.com"], "http://api.example.com", "refused"],
    [["*"], "https://anything.example", "public"],
    [["*"], "https://127.0.0.1", "public"],
    [["*"], "http://127.0.0.1:4021", "refused"],
    [["*", "http://127.0.0.1:4021"], "http://127.0.0.1:4021", "exact"],
    [["*", "https://api.example.com"], "https://api.example.com", "exact"],
    [["http://localhost:3000"], "http://127.0.0.1:3000", "refused"],
    [["*"], "not an origin", "refused"],
  ])("allow %j: %s is %s", (entries, origin, standing) => {
    expect(originStanding(rule(entries), origin)).toBe(standing);
  });
});
