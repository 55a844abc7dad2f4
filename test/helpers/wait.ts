/**
 * Waiting in tests: for a condition in another process, on a socket or in a file, by polling
 * the condition itself with a bound, never by sleeping a fixed time and hoping it happened.
 * Every helper under test/helpers that polls goes through `pollUntil`/`waitFor`.
 */

export interface WaitOptions {
  /** How long to keep looking before giving up (default 10 s). */
  timeoutMs?: number;
  /** The pause between two looks (default 25 ms); it only spaces the checks out. */
  intervalMs?: number;
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Reads `read()` until `done(value)` holds or the deadline passes, and returns the last value
 * read either way: the caller asserts on it (or `waitFor` throws). An error thrown by `read`
 * is a fault and ends the wait.
 */
export async function pollUntil<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  opts: WaitOptions = {},
): Promise<{ value: T; done: boolean }> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    const value = await read();
    if (done(value)) return { value, done: true };
    if (Date.now() > deadline) return { value, done: false };
    await pause(opts.intervalMs ?? 25);
  }
}

/**
 * Waits until `check()` gives something other than `undefined`, `null` or `false`, and returns
 * it; throws after `timeoutMs` naming `what` (a function of the last value, to say how far it got).
 */
export async function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: WaitOptions & { what: string | ((last: T | undefined | null | false) => string) },
): Promise<T> {
  const found = await pollUntil(check, (v) => v !== undefined && v !== null && v !== false, opts);
  if (!found.done) {
    const what = typeof opts.what === "string" ? opts.what : opts.what(found.value);
    throw new Error(`timed out after ${opts.timeoutMs ?? 10_000} ms waiting for ${what}`);
  }
  return found.value as T;
}

/**
 * A fixed wait, for the two honest uses only: a negative check ("nothing happens within N ms",
 * each caller saying why it cannot wait for an event instead) and a wait a peer dictates
 * (a 429's Retry-After on a server in another process). Never to let something happen.
 */
export const elapse = (ms: number): Promise<void> => pause(ms);
