/**
 * A journal whose reads through one method are counted once they have returned: how a test
 * waits for something that polls the journal (the console's live updates) to have looked,
 * rather than for a while that should be long enough.
 */

export interface CountedReads<J> {
  /** Hand this to the poller: the same journal, the counted method wrapped. */
  journal: J;
  /** How many reads through the method have returned so far. */
  reads(): number;
}

export function countReads<J extends object, M extends keyof J>(journal: J, method: M): CountedReads<J> {
  let reads = 0;
  const counted = new Proxy(journal, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop !== method) return value.bind(target);
      return async (...args: unknown[]) => {
        const out: unknown = await value.apply(target, args);
        reads++;
        return out;
      };
    },
  });
  return { journal: counted, reads: () => reads };
}
