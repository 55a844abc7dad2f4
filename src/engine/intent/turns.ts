/**
 * Turns per key, within one process: `run(key, fn)` starts `fn` only after every earlier
 * `run` with the same key has finished its own. The engine finds or records an intent, and
 * starts its drive, in one turn per intent key, so that a second call with the key finds
 * the first call's drive instead of starting another.
 */
export class Turns {
  private readonly last = new Map<string, Promise<void>>();

  async run<T>(key: string | undefined, fn: () => Promise<T>): Promise<T> {
    if (key === undefined) return fn();
    const before = this.last.get(key) ?? Promise.resolve();
    let done!: () => void;
    const gate = new Promise<void>((resolve) => (done = resolve));
    const turn = before.then(() => gate);
    this.last.set(key, turn);
    await before;
    try {
      return await fn();
    } finally {
      done();
      if (this.last.get(key) === turn) this.last.delete(key);
    }
  }
}
