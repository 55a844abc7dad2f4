/**
 * Execution and purchase events from the engine, fanned out: to whoever waits for an
 * execution's next status change, and to every connection, which tells its client the way
 * its era does (resources/subscribe on 2025 connections, subscriptions/listen on 2026 ones).
 * Also waiting for a final status with progress notifications.
 */
import { FINAL_STATUSES, type ExecutionStatus } from "../domain/wire.js";
import { paidError, type ExecutionEvent, type ExecutionView, type PurchaseEvent } from "../engine/index.js";
import type { McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { executionUri, purchaseUri } from "./uris.js";

/** The resource URIs an execution event changes: the execution, the list, the spending. */
export function changedUris(e: ExecutionEvent): string[] {
  return [executionUri(e.executionId), "paid-actions://executions", "paid-actions://spending"];
}

/** The resource URIs a purchase event changes: the purchase, the list, the spending. */
export function purchaseUris(e: PurchaseEvent): string[] {
  return [purchaseUri(e.intentId), "paid-actions://purchases", "paid-actions://spending"];
}

export interface Updates {
  /** Listens to the engine once the runtime has started (idempotent). */
  attach(pa: McpPaidActions): void;
  /** A connection's listener for changed resource URIs; returns the function that removes it. */
  onChange(listener: (uris: string[]) => void): () => void;
  /** Resolves on the execution's next status change, after `maxMs`, or when `signal` aborts. */
  nextUpdate(executionId: string, maxMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The execution once it is final, or as it stands after `timeoutMs` or when the request is
   * cancelled; sends a progress notification per non-final status seen when the request has
   * a token — none for the final one, and never in the same tick as the result, so that a
   * client never receives progress for a request it has already seen answered.
   * Throws not_found for an execution this server's journal does not hold.
   */
  waitFor(pa: McpPaidActions, executionId: string, timeoutMs: number, rctx: RequestCtx): Promise<ExecutionView>;
  /** Stops listening to the engine. */
  close(): void;
}

const isFinal = (status: string) => FINAL_STATUSES.has(status as ExecutionStatus);
const nextTick = () => new Promise<void>((r) => setImmediate(r));

export function createUpdates(ctx: McpContext): Updates {
  const { now } = ctx;
  const waiters = new Set<(e: ExecutionEvent) => void>();
  const listeners = new Set<(uris: string[]) => void>();
  let detach: (() => void) | undefined;

  const onExecution = (e: ExecutionEvent) => {
    for (const w of waiters) w(e);
    const uris = changedUris(e);
    for (const l of listeners) l(uris);
  };
  const onPurchase = (e: PurchaseEvent) => {
    const uris = purchaseUris(e);
    for (const l of listeners) l(uris);
  };

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

  return {
    attach(pa) {
      if (detach) return;
      pa.engine.on("execution", onExecution);
      pa.engine.on("purchase", onPurchase);
      detach = () => {
        pa.engine.off("execution", onExecution);
        pa.engine.off("purchase", onPurchase);
      };
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    nextUpdate,
    waitFor: (pa, executionId, timeoutMs, rctx) => waitForFinal({ now, nextUpdate }, pa, executionId, timeoutMs, rctx),
    close: () => {
      detach?.();
      listeners.clear();
    },
  };
}

/**
 * Progress for a wait: a notification per non-final status, when the request carries a
 * progress token; `reported` says whether one went out.
 */
function statusProgress(rctx: RequestCtx, executionId: string, now: () => number, started: number) {
  const token = rctx.mcpReq._meta?.progressToken;
  let progress = 0;
  let reported = false;
  const report = async (status: string) => {
    if (token === undefined || isFinal(status)) return;
    progress += 1;
    reported = true;
    await rctx.mcpReq
      .notify({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress,
          message: `${executionId} is ${status} (${Math.round((now() - started) / 1000)} s)`,
        },
      })
      .catch(() => undefined);
  };
  return { report, reported: () => reported };
}

/** Updates["waitFor"], over the clock and the next-status-change signal it needs. */
async function waitForFinal(
  o: { now: () => number; nextUpdate: Updates["nextUpdate"] },
  pa: McpPaidActions,
  executionId: string,
  timeoutMs: number,
  rctx: RequestCtx,
): Promise<ExecutionView> {
  const { now, nextUpdate } = o;
  const { engine } = pa;
  let view = await engine.getExecution(executionId, true);
  if (!view) throw paidError("not_found", { executionId });
  const signal = rctx.mcpReq.signal;
  const started = now();
  const { report, reported } = statusProgress(rctx, executionId, now, started);
  await report(view.status);
  while (!isFinal(view.status) && now() - started < timeoutMs && !signal.aborted) {
    await nextUpdate(executionId, Math.min(1_000, timeoutMs - (now() - started)), signal);
    const next = await engine.getExecution(executionId, true);
    if (next) view = next;
    if (!isFinal(view.status) && now() - started < timeoutMs) await report(view.status);
  }
  // The result leaves at least one turn of the event loop after the last progress.
  if (reported()) await nextTick();
  return view;
}
