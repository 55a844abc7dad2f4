/**
 * Execution events from the engine, fanned out: to whoever waits for an execution's next
 * status change, and to clients subscribed to its resource (or to the executions list or
 * spending). Also waiting for a final status with progress notifications.
 */
import { FINAL_STATUSES, type ExecutionStatus } from "../domain/wire.js";
import { PaidActionError } from "../engine/errors.js";
import type { ExecutionEvent, ExecutionView } from "../engine/types.js";
import type { Extra, McpContext } from "./context.js";
import { executionUri } from "./results.js";

export interface Updates {
  /** Resource URIs a client subscribed to (resources/subscribe adds, unsubscribe removes). */
  readonly subscriptions: Set<string>;
  /** Resolves on the execution's next status change, after `maxMs`, or when `signal` aborts. */
  nextUpdate(executionId: string, maxMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The execution once it is final, or as it stands after `timeoutMs` or when the request is
   * cancelled; sends a progress notification per status seen when the request has a token.
   * Throws not_found for an execution this server's journal does not hold.
   */
  waitFor(executionId: string, timeoutMs: number, extra: Extra): Promise<ExecutionView>;
  /** Stops listening to the engine. */
  close(): void;
}

export function createUpdates(ctx: McpContext): Updates {
  const { server, engine, now } = ctx;
  const waiters = new Set<(e: ExecutionEvent) => void>();
  const subscriptions = new Set<string>();
  const onExecution = (e: ExecutionEvent) => {
    for (const w of waiters) w(e);
    const uri = executionUri(e.executionId);
    if (subscriptions.has(uri)) void server.sendResourceUpdated({ uri }).catch(() => undefined);
    if (subscriptions.has("paid-actions://executions")) void server.sendResourceUpdated({ uri: "paid-actions://executions" }).catch(() => undefined);
    if (subscriptions.has("paid-actions://spending")) void server.sendResourceUpdated({ uri: "paid-actions://spending" }).catch(() => undefined);
  };
  engine.on("execution", onExecution);

  function nextUpdate(executionId: string, maxMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(listener);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const listener = (e: ExecutionEvent) => {
        if (e.executionId === executionId) done();
      };
      const timer = setTimeout(done, maxMs);
      waiters.add(listener);
      signal?.addEventListener("abort", done);
    });
  }

  async function waitFor(executionId: string, timeoutMs: number, extra: Extra): Promise<ExecutionView> {
    let view = await engine.getExecution(executionId, true);
    if (!view) throw new PaidActionError("not_found", `no execution ${executionId} in this server's journal`, { executionId });
    const token = extra._meta?.progressToken;
    const started = now();
    let progress = 0;
    const report = async (status: string) => {
      if (token === undefined) return;
      progress += 1;
      await extra
        .sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress, message: `${executionId} is ${status} (${Math.round((now() - started) / 1000)} s)` },
        })
        .catch(() => undefined);
    };
    await report(view.status);
    while (!FINAL_STATUSES.has(view.status as ExecutionStatus) && now() - started < timeoutMs && !extra.signal.aborted) {
      await nextUpdate(executionId, Math.min(1_000, timeoutMs - (now() - started)), extra.signal);
      const next = await engine.getExecution(executionId, true);
      if (next) view = next;
      await report(view.status);
    }
    return view;
  }

  return {
    subscriptions,
    nextUpdate,
    waitFor,
    close: () => engine.off("execution", onExecution),
  };
}
