/**
 * The reconciler's polling rules, pure: how long an unfinished intent waits before it is
 * looked at again (its own backoff), and whether what one look found changes anything but
 * that wait — a schedule-only write, which the reconciler commits with the rest of its pass
 * rather than on its own.
 */
import type { IntentPatch, IntentRecord } from "./intent.js";

/** The fields of a schedule-only patch: when to look next, and the interval that led there. */
const SCHEDULE = new Set<keyof IntentPatch>(["nextPollAt", "pollIntervalMs"]);

export interface Backoff {
  minMs: number;
  maxMs: number;
}

/**
 * The interval before the next look: doubled from the last one (the minimum when there was
 * none, so twice it), within [min, max] — or the minimum again when the look found news (`reset`).
 */
export function nextInterval(last: number | null, b: Backoff, reset: boolean): number {
  if (reset) return b.minMs;
  return Math.min(b.maxMs, Math.max(b.minMs, (last ?? b.minMs) * 2));
}

/** A value as the journal stores it, compared: JSON values by their text, bigints by value. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  const text = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x));
  return text(a) === text(b);
}

/**
 * The next poll a patch moves `intent` to, when that is all it does — every other field it
 * names already holds that value, and the intent is still followed after it; undefined when
 * the patch changes anything else (a status, an output, a claim, money, the end of following).
 */
export function scheduleOnly(
  intent: IntentRecord,
  patch: IntentPatch,
): { nextPollAt: number; pollIntervalMs: number } | undefined {
  const { nextPollAt, pollIntervalMs } = patch;
  if (typeof nextPollAt !== "number" || typeof pollIntervalMs !== "number") return undefined;
  for (const [key, value] of Object.entries(patch) as [keyof IntentPatch, unknown][]) {
    if (!SCHEDULE.has(key) && !same(value, intent[key])) return undefined;
  }
  return { nextPollAt, pollIntervalMs };
}

/** The last pass: when it began, and whether it took as many rows as a pass takes (more may be due). */
export interface LastPass {
  at: number;
  full: boolean;
}

/**
 * How long the reconciler waits before its next pass: until the earliest due row (at most
 * `maxMs`), and — after a pass that took every row then due — at least `gapMs` from that
 * pass's start, so that rows falling due close together are looked at in one pass. A pass
 * that left rows due is followed at once.
 */
export function nextPassWait(o: {
  nextDue: number;
  now: number;
  maxMs: number;
  gapMs: number;
  last: LastPass;
}): number {
  const untilDue = Math.min(o.nextDue - o.now, o.maxMs);
  const untilGap = o.last.full ? 0 : Math.min(o.last.at + o.gapMs - o.now, o.maxMs);
  return Math.max(0, untilDue, untilGap);
}
