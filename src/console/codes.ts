/**
 * One-time codes: how a person signs in to the console from a host that opens links inside
 * itself. VS Code opens a `file://` link in an editor tab, where the sign-in page shows its
 * source, token included; such a host is handed `http://127.0.0.1:<port>/approve` instead,
 * which holds no secret, and the person is shown a short code (in the host's question, or in
 * the refusal the agent relays) to type on that page (code-page.ts).
 *
 * A code is single use, lives 5 minutes and names the console page it opens. It is kept only
 * as a SHA-256 digest and compared in constant time against every live one. A code is short
 * enough to type, so guessing is what the rate limit stops: after 5 wrong codes in a minute
 * the console takes none, right or wrong, until the minute has passed.
 */
import { randomInt, timingSafeEqual } from "node:crypto";
import { digest } from "./security.js";

/** No 0/O, 1/I/L: nothing a person can misread. 31 symbols, 8 of them: about 40 bits. */
const ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const LENGTH = 8;
/** How long a code works. */
export const CODE_TTL_MS = 5 * 60_000;
/** Wrong codes allowed per window, for the whole console. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 60_000;
/** Bound on what callers can make the console hold. */
const MAX_CODES = 100;

/** What typing a code gave: the page it opens, or why it opened nothing. */
export type Redeemed = { ok: true; next: string } | { ok: false; why: "wrong" | "limited"; retryAfterMs?: number };

/** A code as a person may type it (any case, spaces or a dash between the halves), or undefined when it cannot be one. */
function normalize(input: string): string | undefined {
  const code = input.replace(/[\s-]/g, "").toUpperCase();
  if (code.length !== LENGTH) return undefined;
  for (const c of code) if (!ALPHABET.includes(c)) return undefined;
  return code;
}

/** A fresh code, as shown: two groups of four (`K7QF-2M9D`). */
function freshCode(): string {
  let code = "";
  for (let i = 0; i < LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

export class OneTimeCodes {
  /** digest(normalized code) -> the page it opens and when it stops working */
  private readonly codes = new Map<string, { next: string; expires: number }>();
  /** When each recent wrong code was typed. */
  private failures: number[] = [];

  constructor(private readonly now: () => number) {}

  /** A new code that signs a browser in once, within 5 minutes, and lands on `next` (a path of the console). */
  mint(next: string): string {
    this.prune();
    if (this.codes.size >= MAX_CODES) this.codes.delete(this.codes.keys().next().value!);
    const code = freshCode();
    this.codes.set(digest(normalize(code)!), { next, expires: this.now() + CODE_TTL_MS });
    return code;
  }

  /** Uses a typed code up: the page it opens, once; a wrong, used or expired one counts against the limit. */
  redeem(input: string | null | undefined): Redeemed {
    const now = this.now();
    this.failures = this.failures.filter((t) => now - t < FAILURE_WINDOW_MS);
    if (this.failures.length >= MAX_FAILURES)
      return { ok: false, why: "limited", retryAfterMs: this.failures[0]! + FAILURE_WINDOW_MS - now };
    const code = input && input.length <= 64 ? normalize(input) : undefined;
    const found = code === undefined ? undefined : this.find(digest(code));
    const entry = found === undefined ? undefined : this.codes.get(found);
    if (found !== undefined) this.codes.delete(found);
    if (!entry || entry.expires <= now) {
      this.failures.push(now);
      return { ok: false, why: "wrong" };
    }
    return { ok: true, next: entry.next };
  }

  /** The stored digest equal to `d`, compared with every live one in constant time (no early exit). */
  private find(d: string): string | undefined {
    const wanted = Buffer.from(d);
    let found: string | undefined;
    for (const key of this.codes.keys()) {
      const candidate = Buffer.from(key);
      if (candidate.length === wanted.length && timingSafeEqual(candidate, wanted)) found = key;
    }
    return found;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, v] of this.codes) if (v.expires <= now) this.codes.delete(k);
  }
}
