/**
 * A call waiting for a person, bounded by what clients wait. A tool call that waits for a
 * decision (the host's question, then the console's page) answers within `approvalWaitMs`
 * of its arrival — 45 s by default, inside the 60 s a client SDK waits by default, which
 * progress resets only when the client asks for that. While it waits, the call is recorded
 * as waiting in this process (the console of this process tells the person whether a call
 * takes the decision now or the agent will use it when it calls again), progress goes out
 * every 5 s when the call carries a token, and the journal is read every 500 ms: the decision
 * may come from another process (a console, a terminal). With no decision in time, the call
 * answers `approval_required` with the approvalId and a fresh link to the console's page;
 * the approval stays pending, and the retry with that approvalId takes the decision.
 */
import { paidError, type PaidActionError } from "../engine/index.js";
import type { LinkHow, McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { progressReporter } from "./progress.js";

/** Where a pending approval stands, as the journal tells it ("gone": expired, or unknown). */
export type Decision = "approved" | "declined" | "gone" | "pending";

type ReadApproval = (approvalId: string) => Promise<{ status: string; expiresAt: number } | undefined>;

function decisionOf(a: { status: string; expiresAt: number } | undefined, now: number): Decision {
  if (!a) return "gone";
  if (a.status === "approved" || a.status === "used") return "approved";
  if (a.status === "declined") return "declined";
  return a.expiresAt <= now ? "gone" : "pending";
}

/** The approval's standing now. */
export async function decisionNow(ctx: McpContext, pa: McpPaidActions, approvalId: string): Promise<Decision> {
  return decisionOf(await pa.engine.approval(approvalId), ctx.now());
}

/**
 * Reads the journal every `stepMs` (it may be shared with other processes) until a decision,
 * the approval's expiry, the deadline or the call's cancellation; "pending" when none came.
 */
export async function waitForDecision(
  read: ReadApproval,
  approvalId: string,
  o: { now: () => number; deadline: number; signal: AbortSignal; stepMs?: number },
): Promise<Decision> {
  for (;;) {
    const now = o.now();
    const d = decisionOf(await read(approvalId), now);
    if (d !== "pending" || now >= o.deadline || o.signal.aborted) return d;
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, Math.min(o.stepMs ?? 500, Math.max(1, o.deadline - now)));
      function done() {
        clearTimeout(t);
        o.signal.removeEventListener("abort", done);
        resolve();
      }
      o.signal.addEventListener("abort", done, { once: true });
    });
  }
}

/** Progress every 5 s while a call waits for a person (nothing when it carries no token); returns the stop. */
function progressWhileWaiting(ctx: McpContext, rctx: RequestCtx, approvalId: string): () => void {
  const progress = progressReporter(rctx);
  if (!progress) return () => {};
  const started = ctx.now();
  const timer = setInterval(() => {
    const s = Math.round((ctx.now() - started) / 1000);
    progress(`waiting for a person to decide on approval ${approvalId} (${s} s)`);
  }, 5_000);
  return () => clearInterval(timer);
}

/**
 * Runs `work` (a question to the host, a wait on the journal) as a wait for this approval:
 * recorded as waiting in this process, with progress. Then, no longer recorded, reads the
 * approval once more: a decision made while the record was up is never lost, because the
 * console checks the record only after its decision is written.
 */
export async function asWaiting<T>(
  ctx: McpContext,
  pa: McpPaidActions,
  approvalId: string,
  rctx: RequestCtx,
  work: () => Promise<T>,
): Promise<{ outcome: PromiseSettledResult<T>; decision: Decision }> {
  const release = ctx.waits.begin(approvalId);
  const stop = progressWhileWaiting(ctx, rctx, approvalId);
  let outcome: PromiseSettledResult<T>;
  try {
    outcome = { status: "fulfilled", value: await work() };
  } catch (reason) {
    outcome = { status: "rejected", reason };
  } finally {
    stop();
    release();
  }
  return { outcome, decision: await decisionNow(ctx, pa, approvalId) };
}

/** Waits on the journal for the person's decision, until the call's deadline. */
export function decisionBy(
  ctx: McpContext,
  pa: McpPaidActions,
  approvalId: string,
  rctx: RequestCtx,
  deadline: number,
) {
  return waitForDecision(async (id) => pa.engine.approval(id), approvalId, {
    now: ctx.now,
    deadline,
    signal: rctx.mcpReq.signal,
  });
}

/**
 * The refusal of a call that could not get a decision (`why`): the approval stays pending,
 * and the retry with its approvalId takes whatever the person decides. With `link`, a fresh
 * way in to the console's page for that payment: a one-time sign-in page (valid 10 minutes),
 * or for a host that opens links inside itself the /approve page and a one-time code (5 minutes).
 */
export async function notDecided(
  ctx: McpContext,
  pa: McpPaidActions,
  approvalId: string,
  why: string,
  link: LinkHow | false,
): Promise<PaidActionError> {
  const r = await pa.engine.approvalReview(approvalId);
  if (!r) return paidError("approval_invalid", { approvalId, problem: "gone" });
  // A server that is stopping offers no new page (and says nothing about not offering one).
  const page =
    link && !ctx.isClosed()
      ? await ctx.host.approvalPage?.(approvalId, link).catch((e: unknown) => {
          if (!ctx.isClosed()) ctx.log(`console: cannot offer the approval page (${(e as Error).message})`);
          return undefined;
        })
      : undefined;
  return paidError("approval_required", {
    approvalId,
    intentId: r.intentId,
    action: r.action,
    amount: r.amount,
    currency: "USDC",
    payee: r.payee,
    quoteId: r.quoteId,
    expiresAt: r.expiresAt,
    detail: why,
    ...(page ? { consoleUrl: page.url } : {}),
    ...(page?.code ? { consoleCode: page.code } : {}),
  });
}

/** What a decision other than "pending" means for the call: go on and pay, or this refusal. */
export function settled(decision: Exclude<Decision, "pending">, approvalId: string): PaidActionError | undefined {
  if (decision === "approved") return undefined;
  if (decision === "declined") return paidError("approval_declined", { approvalId, answer: "decline" });
  return paidError("approval_invalid", { approvalId, problem: "gone" });
}

/**
 * Acts on where the approval stands once the call has waited: returns when it was approved
 * (the call goes on and pays), throws the refusal otherwise — `notDecided(why)` while it is
 * still pending.
 */
export async function takeDecision(
  ctx: McpContext,
  pa: McpPaidActions,
  approvalId: string,
  decision: Decision,
  why: string,
  link: LinkHow | false,
): Promise<void> {
  if (decision === "pending") throw await notDecided(ctx, pa, approvalId, why, link);
  const refusal = settled(decision, approvalId);
  if (refusal) throw refusal;
}

/** The refusal of a call its client cancelled while it waited (no one reads it; the transcript keeps it). */
export function cancelledWhileWaiting(): PaidActionError {
  return paidError("cancelled", { stage: "waiting_for_person" });
}
