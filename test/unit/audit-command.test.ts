/**
 * The `audit` command's own helpers (src/commands/audit.ts): reading `--since`, and showing
 * an RPC URL without what may be a key in it.
 */
import { describe, expect, it } from "vitest";
import { parseSince, urlOrigin } from "../../src/commands/audit.js";

describe("audit command helpers", () => {
  it.each([
    ["2026-11-01", Date.parse("2026-11-01T00:00:00Z")],
    ["2026-11-01T12:00:00Z", Date.parse("2026-11-01T12:00:00Z")],
    ["2026-11-01T12:00", Date.parse("2026-11-01T12:00:00Z")],
    ["2026-11-01T12:00:00.250+02:00", Date.parse("2026-11-01T10:00:00.250Z")],
    ["2026-02-30", undefined],
    ["2026-11-01T25:00:00Z", undefined],
    ["yesterday", undefined],
    ["1730000000", undefined],
    ["", undefined],
  ])("parseSince(%j)", (text, expected) => {
    expect(parseSince(text)).toBe(expected);
  });

  it("an RPC URL is shown by its origin only (an API key may be in its path or query)", () => {
    expect(urlOrigin("https://user:pw@rpc.example.com:8443/v2/SECRETKEY?api-key=SECRET")).toBe(
      "https://rpc.example.com:8443",
    );
    expect(urlOrigin("not a url")).toBe("(an invalid URL)");
  });
});
