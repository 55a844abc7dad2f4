/** What each rail loads on first use (its key, its RPC): kept once loaded, tried again after a failure. */

/** A loader that keeps what it loaded, and tries again on the next call after a failure. */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((e: unknown) => {
      loading = undefined;
      throw e;
    }));
}
