import { describe, expect, it } from "vitest";
import { formatDecimal, parseAtomic, parseDecimal, U64_MAX } from "../../src/domain/money.js";
import { canonicalJson } from "../../src/domain/wire.js";

describe("parseDecimal", () => {
  it.each([
    ["0", 0n],
    ["1", 1_000_000n],
    ["12.50", 12_500_000n],
    ["0.000001", 1n],
    ["0.0000010", 1n],
    ["18446744073709.551615", U64_MAX],
  ])("parses %s", (text, atomic) => {
    expect(parseDecimal(text)).toBe(atomic);
  });

  it.each([
    "",
    "-1",
    "+1",
    "1e3",
    "1.",
    ".5",
    "01",
    "1.0000001",
    "NaN",
    "Infinity",
    " 1",
    "1 ",
    "0x10",
    "18446744073709.551616",
    "1".repeat(41),
  ])("refuses %j", (text) => {
    expect(parseDecimal(text)).toBeUndefined();
  });
});

describe("parseAtomic", () => {
  it("accepts plain u64 integers only", () => {
    expect(parseAtomic("288000")).toBe(288_000n);
    expect(parseAtomic(U64_MAX.toString())).toBe(U64_MAX);
    for (const bad of ["", "-5", "1.5", "1e6", "18446744073709551616", "00", 5, null, undefined])
      expect(parseAtomic(bad)).toBeUndefined();
  });
});

describe("formatDecimal", () => {
  it.each([
    [0n, "0.00"],
    [1n, "0.000001"],
    [288_000n, "0.288"],
    [12_500_000n, "12.50"],
    [1_000_000_000n, "1000.00"],
    [-5_000_000n, "-5.00"],
  ])("formats %s as %s", (atomic, text) => {
    expect(formatDecimal(atomic)).toBe(text);
  });

  it("round-trips through parseDecimal", () => {
    for (const v of [0n, 1n, 10n, 999_999n, 1_000_001n, 123_456_789n, U64_MAX])
      expect(parseDecimal(formatDecimal(v))).toBe(v);
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops undefined", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ x: 1, y: 2 })).toBe(canonicalJson({ y: 2, x: 1 }));
  });
});
