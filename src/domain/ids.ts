/** Record identifiers: `<prefix>_<random base62>`, e.g. qt_…, exe_…, pay_…. */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function newId(prefix: string, length = 20): string {
  // 248 = 4 x 62: rejecting bytes above it keeps every character equally likely.
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return `${prefix}_${out}`;
}
