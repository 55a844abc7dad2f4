/** Progress notifications for a request that carries a progress token (none for one that does not). */
import type { RequestCtx } from "./context.js";

/** Progress notifications for a call that carries a progress token (none otherwise). */
export function progressReporter(rctx: RequestCtx): ((message: string) => void) | undefined {
  const token = rctx.mcpReq._meta?.progressToken;
  if (token === undefined) return undefined;
  let progress = 0;
  return (message) => {
    progress += 1;
    void rctx.mcpReq
      .notify({ method: "notifications/progress", params: { progressToken: token, progress, message } })
      .catch(() => undefined);
  };
}
