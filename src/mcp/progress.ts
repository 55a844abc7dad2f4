/** Progress notifications for a request that carries a progress token (none for one that does not). */
import type { RequestCtx } from "./context.js";

type Reporter = (message: string) => void;

/** One reporter per request: a call that pays, waits for a person and pays again counts on, never restarts. */
const reporters = new WeakMap<object, Reporter>();

/** Progress notifications for a call that carries a progress token (none otherwise); `progress` strictly increases. */
export function progressReporter(rctx: RequestCtx): Reporter | undefined {
  const token = rctx.mcpReq._meta?.progressToken;
  if (token === undefined) return undefined;
  const known = reporters.get(rctx.mcpReq);
  if (known) return known;
  let progress = 0;
  const report: Reporter = (message) => {
    progress += 1;
    void rctx.mcpReq
      .notify({ method: "notifications/progress", params: { progressToken: token, progress, message } })
      .catch(() => undefined);
  };
  reporters.set(rctx.mcpReq, report);
  return report;
}
