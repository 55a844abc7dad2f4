/**
 * The console's money.js (src/console/assets/money.js, the browser's own decimal parser, which
 * the pages sum, compare and draw with) against the engine's money rules (src/domain/money.ts):
 * the same strings accepted and refused, the same atomic units, the same formatting, and sums
 * and differences exact on bigint — as tables, then as fast-check properties. Amounts run up to
 * u64, where a float has long lost the last digits, so a Number anywhere in the arithmetic fails.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  atomic,
  DECIMALS,
  decimal,
  level,
  maxUnits,
  minus,
  percent,
  ratio,
  remaining,
  sum,
  U64_MAX as CONSOLE_U64_MAX,
  usdc,
} from "../../src/console/assets/money.js";
import { formatDecimal, parseDecimal, U64_MAX, USDC_DECIMALS } from "../../src/domain/money.js";

/** The engine's answer in money.js's terms: null where parseDecimal has undefined. */
const engine = (text: string): bigint | null => parseDecimal(text) ?? null;

/** Engine-parsed units of a string the test knows to be accepted. */
const units = (text: string): bigint => {
  const u = parseDecimal(text);
  if (u === undefined) throw new Error(`the engine refuses ${JSON.stringify(text)}`);
  return u;
};

const U64_TEXT = "18446744073709.551615";

describe("money.js parses as the engine's parseDecimal", () => {
  it("has the engine's number of decimals and u64 bound", () => {
    expect(DECIMALS).toBe(USDC_DECIMALS);
    expect(CONSOLE_U64_MAX).toBe(U64_MAX);
  });

  it.each([
    ["0", 0n],
    ["0.0", 0n],
    ["1", 1_000_000n],
    ["12.50", 12_500_000n],
    ["0.1", 100_000n],
    ["0.000001", 1n],
    ["0.0000010", 1n],
    ["999999.999999", 999_999_999_999n],
    ["9007199254.740993", 9_007_199_254_740_993n],
    [U64_TEXT, U64_MAX],
    ["18446744073709.5516150", U64_MAX],
    [`1.${"0".repeat(38)}`, 1_000_000n],
  ])("accepts %j as %s units", (text, expected) => {
    expect(atomic(text)).toBe(expected);
    expect(engine(text)).toBe(expected);
  });

  it.each([
    ["the empty string", ""],
    ["a sign", "-1"],
    ["a plus sign", "+1"],
    ["minus zero", "-0"],
    ["an exponent", "1e3"],
    ["a capital exponent", "1E3"],
    ["a negative exponent", "1e-6"],
    ["a bare point", "1."],
    ["no whole part", ".5"],
    ["a leading zero", "01"],
    ["two zeros", "00.1"],
    ["a seventh decimal", "0.0000001"],
    ["a seventh decimal after a whole", "1.0000001"],
    ["NaN", "NaN"],
    ["Infinity", "Infinity"],
    ["hex", "0x10"],
    ["a digit separator", "1_000"],
    ["a decimal comma", "1,5"],
    ["two points", "1.5.0"],
    ["a non-ASCII digit", "١"],
    ["a leading space", " 1"],
    ["a trailing space", "1 "],
    ["a tab", "\t1"],
    ["a newline", "1\n"],
    ["a no-break space", "\u00a01"],
    ["one unit above u64", "18446744073709.551616"],
    ["far above u64", "99999999999999999999999999"],
    ["41 characters of a small amount", `1.${"0".repeat(39)}`],
    ["41 digits", "1".repeat(41)],
  ])("refuses %s (%j)", (_what, text) => {
    expect(engine(text)).toBeNull();
    expect(atomic(text)).toBeNull();
  });

  it("refuses what is not a string, as the engine does", () => {
    for (const value of [null, undefined, 5, 5n, {}, ["1"]]) {
      expect(parseDecimal(value as never)).toBeUndefined();
      expect(atomic(value as never)).toBeNull();
    }
  });

  it("shows a refused amount as a dash, an accepted one in the engine's format", () => {
    expect(usdc("0.288")).toBe("0.288 USDC");
    expect(usdc("25")).toBe("25.00 USDC");
    expect(usdc(" 25")).toBe("—");
    expect(usdc("18446744073709.551616")).toBe("—");
    expect(usdc(undefined)).toBe("—");
  });
});

describe("money.js formats as the engine's formatDecimal", () => {
  it.each([
    [0n, "0.00"],
    [1n, "0.000001"],
    [10n, "0.00001"],
    [288_000n, "0.288"],
    [12_500_000n, "12.50"],
    [1_000_000_000n, "1000.00"],
    [-1n, "-0.000001"],
    [-5_000_000n, "-5.00"],
    [U64_MAX, U64_TEXT],
    [U64_MAX + 1n, "18446744073709.551616"],
  ])("formats %s units as %s", (value, text) => {
    expect(decimal(value)).toBe(text);
    expect(formatDecimal(value)).toBe(text);
  });
});

describe("money.js adds and subtracts exactly", () => {
  it.each([
    [["0.1", "0.2"], "0.30"],
    [["0.7", "0.1"], "0.80"],
    [["0.000001", "0.000002"], "0.000003"],
    [["1.005", "2.005"], "3.01"],
    [["9007199254.740992", "0.000001"], "9007199254.740993"],
    [["18446744073709.551614", "0.000001"], U64_TEXT],
    [[U64_TEXT, U64_TEXT], "36893488147419.10323"],
    [[], "0.00"],
    [["1", "not money", null, undefined, "2"], "3.00"],
  ])("sum(%j) is %s", (texts, expected) => {
    expect(sum(...texts)).toBe(expected);
  });

  it.each([
    ["0.3", "0.1", "0.20"],
    ["1", "2", "0.00"],
    [U64_TEXT, "0.000001", "18446744073709.551614"],
    ["4.00", "3.224", "0.776"],
  ])("%s minus %s is %s, floored at zero", (a, b, expected) => {
    expect(minus(a, b)).toBe(expected);
    expect(remaining(a, b)).toBe(expected);
  });

  it("remaining() has no answer when either side is not money; minus() counts it as zero", () => {
    expect(remaining("4.00", " 1")).toBeNull();
    expect(remaining("1e3", "1")).toBeNull();
    expect(minus("4.00", " 1")).toBe("4.00");
  });

  it("takes the larger amount on atomic units", () => {
    expect(maxUnits("9007199254.740993", "9007199254.740992")).toBe(9_007_199_254_740_993n);
    expect(maxUnits()).toBe(0n);
    expect(maxUnits("-5", "1e9", null)).toBe(0n);
  });
});

describe("money.js compares with a cap on integers", () => {
  it.each([
    ["3.20", "4.00", "ok"],
    ["3.200001", "4.00", "warn"],
    ["4.00", "4.00", "over"],
    ["5", "4.00", "over"],
    ["0", "0", "over"],
    ["1", " 4.00", "ok"],
    ["14757395258967.641292", U64_TEXT, "ok"],
    ["14757395258967.641293", U64_TEXT, "warn"],
    ["18446744073709.551614", U64_TEXT, "warn"],
  ])("spending %s of %s is %s", (spent, cap, expected) => {
    expect(level(spent, cap)).toBe(expected);
  });

  it.each([
    ["3.224", "4.00", "80.6 %"],
    ["1", "3", "33.3 %"],
    ["2", "3", "66.6 %"],
    ["4", "4", "100 %"],
    ["0", "4", "0 %"],
    ["0.000001", "1000", "<0.1 %"],
    ["1", "0", ""],
    ["1", "1e3", ""],
  ])("%s of %s is %s (floored to a tenth)", (spent, cap, expected) => {
    expect(percent(spent, cap)).toBe(expected);
  });

  it("draws a ratio as a Number, and only that", () => {
    expect(ratio("1", "4")).toBe(0.25);
    expect(ratio(1n, 3n)).toBe(0.3333);
    expect(ratio("0", "0")).toBe(0);
    expect(ratio("1", "0")).toBe(Infinity);
  });
});

// ---- Properties ----------------------------------------------------------------------------

/** Amounts a u64 holds, with fast-check's bias to the edges (0, 1, U64_MAX and near them). */
const amount = fc.bigInt({ min: 0n, max: U64_MAX });
/** Amounts a person pays: up to a million USDC, often with few decimals (0.1, 2.35). */
const price = fc.oneof(
  fc.bigInt({ min: 0n, max: 10n ** 12n }),
  fc.bigInt({ min: 0n, max: 10n ** 7n }).map((n) => n * 10_000n),
);
const canonical = fc.oneof(amount, price).map(formatDecimal);

/** Strings shaped like decimals: any whole part, 0 to 9 decimals, so beyond u64 and past 6 decimals too. */
const wholePart = fc.oneof(fc.constant("0"), fc.stringMatching(/^[1-9][0-9]{0,21}$/));
const decimalLike = fc
  .tuple(wholePart, fc.option(fc.stringMatching(/^[0-9]{1,9}$/)))
  .map(([whole, fraction]) => (fraction === null ? whole : `${whole}.${fraction}`));

/** A decimal with trailing zeros, around the engine's 40-character bound. */
const padded = fc
  .tuple(canonical, fc.integer({ min: 30, max: 44 }))
  .map(([text, length]) => (text.length < length ? text.padEnd(length, "0") : text));

/** A decimal with something the engine refuses around or inside it. */
const EDITS = [" ", "\t", "\n", "\u00a0", "-", "+", "0", ".", "e3", "E-2", ",", "_"];
const edited = fc
  .tuple(
    fc.oneof(canonical, decimalLike),
    fc.constantFrom(...EDITS),
    fc.nat(),
    fc.constantFrom("before", "after", "inside"),
  )
  .map(([text, edit, at, where]) => {
    if (where === "before") return edit + text;
    if (where === "after") return text + edit;
    const i = at % (text.length + 1);
    return text.slice(0, i) + edit + text.slice(i);
  });

/** Anything made of the characters a number is written with. */
const junk = fc.string({ unit: fc.constantFrom(..."0123456789.-+eE \t_,x"), maxLength: 45 });

const anyText = fc.oneof(canonical, decimalLike, padded, edited, junk);

const RUNS = { numRuns: 2_000 };

describe("money.js against the engine, on generated amounts", () => {
  it("accepts and refuses every string as the engine does, with the same units", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(atomic(text)).toBe(engine(text));
      }),
      RUNS,
    );
  });

  it("formats every amount, negatives too, as the engine does, and reads it back", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -U64_MAX, max: U64_MAX }), (value) => {
        expect(decimal(value)).toBe(formatDecimal(value));
        if (value >= 0n) expect(atomic(decimal(value))).toBe(value);
      }),
      RUNS,
    );
  });

  it("sums decimal strings exactly as bigint atomic units add", () => {
    fc.assert(
      fc.property(fc.array(canonical, { maxLength: 6 }), (texts) => {
        expect(sum(...texts)).toBe(formatDecimal(texts.reduce((total, t) => total + units(t), 0n)));
      }),
      RUNS,
    );
  });

  it("subtracts exactly, floored at zero", () => {
    fc.assert(
      fc.property(canonical, canonical, (a, b) => {
        const difference = units(a) - units(b);
        const expected = formatDecimal(difference > 0n ? difference : 0n);
        expect(minus(a, b)).toBe(expected);
        expect(remaining(a, b)).toBe(expected);
      }),
      RUNS,
    );
  });

  it("puts the 80 % line and the cap between adjacent atomic units", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 10n, max: U64_MAX }), (cap) => {
        const at80 = (cap * 4n) / 5n;
        const c = formatDecimal(cap);
        expect(level(formatDecimal(at80), c)).toBe("ok");
        expect(level(formatDecimal(at80 + 1n), c)).toBe("warn");
        expect(level(formatDecimal(cap - 1n), c)).toBe("warn");
        expect(level(c, c)).toBe("over");
      }),
      RUNS,
    );
  });
});
