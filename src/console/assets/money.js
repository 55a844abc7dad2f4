// @ts-check
// Money in the browser: the API sends decimal strings ("0.288", "25.00"); comparisons and sums
// are made on BigInt atomic units (USDC has 6 decimals), never on floats. A Number appears
// only where a pixel width is computed from a ratio. The engine's rules (src/domain/money.ts,
// parseDecimal and formatDecimal) are the reference: what it refuses is not money here either,
// and test/unit/console-money.test.ts holds the two to each other.

/**
 * A decimal string as the API sends it ("0.288"), or nothing: every reader here takes either.
 * @typedef {string | null | undefined} DecimalText
 */

/**
 * How close spend is to a cap (`level`); each names a class in the stylesheets (blocks.css, approvals-charts.css).
 * @typedef {"ok" | "warn" | "over"} Level
 */

export const DECIMALS = 6;
const SCALE = 10n ** BigInt(DECIMALS);
const DECIMAL = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;
/** The largest amount a u64 token amount holds (the engine's U64_MAX). */
export const U64_MAX = (1n << 64n) - 1n;

/**
 * "12.5" -> 12500000n; null for anything the engine's parseDecimal refuses: anything but a plain
 * non-negative decimal (signs, exponents, spaces around it), more decimals than 6, more than a
 * u64 holds, more than 40 characters.
 * @param {DecimalText} text
 * @returns {bigint | null}
 */
export function atomic(text) {
  if (typeof text !== "string" || text.length > 40) return null;
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const [, whole = "0", digits = ""] = m;
  const fraction = digits.replace(/0+$/, "");
  if (fraction.length > DECIMALS) return null;
  const units = BigInt(whole) * SCALE + BigInt(fraction.padEnd(DECIMALS, "0") || "0");
  return units > U64_MAX ? null : units;
}

/**
 * 12500000n -> "12.50": at least two fractional digits, no trailing zeros beyond them.
 * @param {bigint} units
 * @returns {string}
 */
export function decimal(units) {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  let fraction = (abs % SCALE).toString().padStart(DECIMALS, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  return `${negative ? "-" : ""}${abs / SCALE}.${fraction}`;
}

/**
 * The sum of decimal strings as one, exact on atomic units; one that is not a decimal counts
 * as 0, as the pages draw a missing figure.
 * @param {...DecimalText} texts
 * @returns {string}
 */
export function sum(...texts) {
  let units = 0n;
  for (const t of texts) units += atomic(t) ?? 0n;
  return decimal(units);
}

/**
 * a - b as a decimal string, floored at zero; one that is not a decimal counts as 0.
 * @param {DecimalText} a
 * @param {DecimalText} b
 * @returns {string}
 */
export function minus(a, b) {
  const x = atomic(a) ?? 0n;
  const y = atomic(b) ?? 0n;
  return decimal(x > y ? x - y : 0n);
}

/**
 * The same money as a display string: "0.288 USDC".
 * @param {DecimalText} text
 * @returns {string}
 */
export function usdc(text) {
  const units = atomic(text ?? "");
  return units === null ? "—" : `${decimal(units)} USDC`;
}

/**
 * a - b, floored at zero, as a decimal string; null when either is not a decimal.
 * @param {DecimalText} cap
 * @param {DecimalText} spent
 * @returns {string | null}
 */
export function remaining(cap, spent) {
  const c = atomic(cap);
  const s = atomic(spent);
  if (c === null || s === null) return null;
  return decimal(c > s ? c - s : 0n);
}

/**
 * part / whole as a Number for drawing only (0 when whole is 0 and part is 0).
 * @param {bigint | DecimalText} part
 * @param {bigint | DecimalText} whole
 * @returns {number}
 */
export function ratio(part, whole) {
  const p = typeof part === "bigint" ? part : (atomic(part) ?? 0n);
  const w = typeof whole === "bigint" ? whole : (atomic(whole) ?? 0n);
  if (w === 0n) return p === 0n ? 0 : Infinity;
  // Four decimal places of precision is far finer than a pixel.
  return Number((p * 10000n) / w) / 10000;
}

/**
 * How close spend is to a cap: "over" at or above it, "warn" past 80 %, else "ok". Exact:
 * spent*100 > cap*80 on integers.
 * @param {DecimalText} spent
 * @param {DecimalText} cap
 * @returns {Level}
 */
export function level(spent, cap) {
  const s = atomic(spent);
  const c = atomic(cap);
  if (s === null || c === null) return "ok";
  if (s >= c) return "over";
  if (s * 100n > c * 80n) return "warn";
  return "ok";
}

/**
 * The larger of decimal strings, as atomic units (0n when none is a decimal).
 * @param {...DecimalText} texts
 * @returns {bigint}
 */
export function maxUnits(...texts) {
  let m = 0n;
  for (const t of texts) {
    const u = atomic(t ?? "");
    if (u !== null && u > m) m = u;
  }
  return m;
}

/**
 * Percent of a cap as a label, floored to a tenth: "12 %", "80.6 %", "<0.1 %".
 * @param {DecimalText} spent
 * @param {DecimalText} cap
 * @returns {string}
 */
export function percent(spent, cap) {
  const s = atomic(spent);
  const c = atomic(cap);
  if (s === null || c === null || c === 0n) return "";
  const tenths = (s * 1000n) / c;
  if (tenths === 0n && s > 0n) return "<0.1 %";
  return tenths % 10n === 0n ? `${tenths / 10n} %` : `${tenths / 10n}.${tenths % 10n} %`;
}
