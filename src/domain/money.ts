/**
 * Money: integer atomic units inside (bigint), decimal strings on the wire.
 * USDC has 6 decimals. Nothing here ever touches a float.
 */

export const USDC_DECIMALS = 6;

const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const ATOMIC = /^(0|[1-9][0-9]*)$/;
/** The largest value a u64 token amount can hold. */
export const U64_MAX = (1n << 64n) - 1n;

/**
 * Parses a non-negative decimal string ("12.5", "0.000001") into atomic units.
 * Returns undefined for anything that is not a plain decimal (signs, exponents,
 * spaces, more fractional digits than the currency has, values beyond u64).
 */
export function parseDecimal(text: string, decimals = USDC_DECIMALS): bigint | undefined {
  if (typeof text !== "string" || text.length > 40 || !DECIMAL.test(text)) return undefined;
  const [whole = "0", fraction = ""] = text.split(".");
  const digits = fraction.replace(/0+$/, "");
  if (digits.length > decimals) return undefined;
  const value = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(digits.padEnd(decimals, "0") || "0");
  return value > U64_MAX ? undefined : value;
}

/** Parses an x402 atomic-unit amount ("12500000"). Undefined unless a plain u64 integer. */
export function parseAtomic(text: unknown): bigint | undefined {
  if (typeof text !== "string" || text.length > 20 || !ATOMIC.test(text)) return undefined;
  const value = BigInt(text);
  return value > U64_MAX ? undefined : value;
}

/**
 * Formats atomic units as a decimal string with at least two fractional digits
 * and no trailing zeros beyond them: 12500000n -> "12.50", 12345n -> "0.012345".
 */
export function formatDecimal(atomic: bigint, decimals = USDC_DECIMALS): string {
  const negative = atomic < 0n;
  const abs = negative ? -atomic : atomic;
  const scale = 10n ** BigInt(decimals);
  const whole = abs / scale;
  let fraction = (abs % scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}
