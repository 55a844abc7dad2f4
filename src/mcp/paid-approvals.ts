/**
 * A paid call's approval on a 2026-07-28 connection: asking the person about a payment that
 * needs one (the console's page when the client opens URLs, else the host's own form) with
 * an `input_required` result, and the answer the retried call comes back with — approved,
 * declined, no answer, or a decision still to wait for on the console's page (waiting.ts:
 * bounded, and a pending approval stays usable by the retry with its approvalId). The
 * questions and sealed states themselves are approvals.ts; 2025 connections are asked by
 * legacy-approvals.ts.
 */
import type { InputRequiredResult, ProtocolEra, RequestStateCodec, Server } from "@modelcontextprotocol/server";
import { paidError, type ErrorContext, type PaidActionError } from "../engine/index.js";
import {
  approvalAnswer,
  askApproval,
  askApprovalAtUrl,
  canElicit,
  canElicitUrl,
  DISMISSED_FORM,
  linkHow,
  dismissedForm,
  type ApprovalAnswer,
  type ApprovalQuestion,
  type ApprovalState,
} from "./approvals.js";
import type { McpContext, McpPaidActions, RequestCtx } from "./context.js";
import type { ApprovalSubject, PaidTool, Purchase } from "./paid-tools.js";
import { asWaiting, cancelledWhileWaiting, decisionBy, decisionNow, takeDecision } from "./waiting.js";

/** What every approval step is handed: the surface's context and the codec that seals the states. */
export interface Approving {
  ctx: McpContext;
  states: RequestStateCodec<ApprovalState>;
}

/**
 * The call an approval is about: its tool, the purchase its arguments asked for, its
 * arguments as sent (the sealed state is bound to them), its request, and when it must answer.
 */
export interface ApprovalCall {
  tool: PaidTool;
  purchase: Purchase;
  args: unknown;
  rctx: RequestCtx;
  /** By when (ctx.now() time) a call that waits for a person answers, decided or not. */
  deadline: number;
  /** The connection's server and era (what the client declared is read through them). */
  on: { server: Server; era: ProtocolEra };
}

/** The question about one payment: what the engine asked approval for, and what the purchase shows of itself. */
export function question(c: ErrorContext<"approval_required">, subject: ApprovalSubject): ApprovalQuestion {
  return {
    approvalId: c.approvalId,
    paidFor: subject.paidFor,
    amount: c.amount,
    currency: "USDC",
    payee: c.payee ?? "(named in the payment challenge)",
    expiresAt: c.expiresAt,
    input: subject.input,
  };
}

/**
 * Asks a person about a payment that needs approval, through the host: the console's page
 * when the client opens URLs, else the host's own form; undefined when it can do neither.
 */
export async function ask(
  a: Approving,
  pa: McpPaidActions,
  e: PaidActionError<"approval_required">,
  { tool, purchase, args, rctx, on }: ApprovalCall,
): Promise<InputRequiredResult | undefined> {
  const { ctx, states } = a;
  const approvalId = e.context.approvalId;
  const url = canElicitUrl(on.era, on.server, rctx)
    ? await ctx.host.approvalPage?.(approvalId, linkHow(on.era, on.server, rctx)).catch((err: unknown) => {
        ctx.log(`console: cannot offer the approval page (${(err as Error).message}); asking in the host instead`);
        return undefined;
      })
    : undefined;
  if (!url && !canElicit(on.era, on.server, rctx)) return undefined;
  const q = question(e.context, await purchase.subject(pa, approvalId));
  return url
    ? askApprovalAtUrl(states, rctx, tool.tool.name, args, q, url, ctx.sandbox)
    : askApproval(states, rctx, tool.tool.name, args, q, ctx.sandbox);
}

/**
 * The approval a call came back with, given (or refused) as the person answered: returns
 * when the call may go on to pay, throws the refusal otherwise.
 */
export async function answered(
  a: Approving,
  pa: McpPaidActions,
  state: ApprovalState,
  call: ApprovalCall,
): Promise<void> {
  const approvalId = state.approvalId;
  const answer = approvalAnswer(call.rctx);
  if (state.via === "url") return answeredAtUrl(a, pa, state, answer, call);
  if (answer.kind === "approved") {
    await pa.engine.approve(approvalId, "host"); // single use: a replayed answer finds it used and is refused
    return;
  }
  // Dismissed (cancel): nothing decided, the approval stays pending for the retry with its approvalId.
  if (dismissedForm(answer))
    return takeDecision(a.ctx, pa, approvalId, await decisionNow(a.ctx, pa, approvalId), DISMISSED_FORM, false);
  if (answer.kind === "refused") {
    await pa.engine.decline(approvalId, "host");
    throw paidError("approval_declined", { approvalId, answer: answer.how });
  }
  // No answer came back with the state (the host could not ask): the approval stays pending.
  await takeDecision(a.ctx, pa, approvalId, await decisionNow(a.ctx, pa, approvalId), NO_ANSWER, false);
}

const NO_ANSWER = "the host returned no answer to the approval question";

/**
 * The person was sent to the console's page: going there is all the answer says. The call
 * waits for the decision made on that page (or in a terminal), read from the journal, until
 * its deadline; then the approval stays pending for the retry with its approvalId.
 */
async function answeredAtUrl(
  a: Approving,
  pa: McpPaidActions,
  state: ApprovalState,
  answer: ApprovalAnswer,
  { rctx, deadline, on }: ApprovalCall,
): Promise<void> {
  const { ctx } = a;
  const approvalId = state.approvalId;
  const how = linkHow(on.era, on.server, rctx);
  if (answer.kind === "refused" && answer.how === "decline") {
    await pa.engine.decline(approvalId, "host");
    throw paidError("approval_declined", { approvalId, answer: "decline" });
  }
  if (answer.kind === "missing" || (answer.kind === "refused" && answer.how === "cancel"))
    return takeDecision(ctx, pa, approvalId, await decisionNow(ctx, pa, approvalId), dismissed(answer), how);
  // Accepted: the person went to the page (an accepted URL question carries no content).
  const started = ctx.now();
  const { decision } = await asWaiting(ctx, pa, approvalId, rctx, () =>
    decisionBy(ctx, pa, approvalId, rctx, deadline),
  );
  if (rctx.mcpReq.signal.aborted) throw cancelledWhileWaiting();
  return takeDecision(ctx, pa, approvalId, decision, noDecisionIn(ctx.now() - started), how);
}

/** Why a link-mode question ended without a decision. */
function dismissed(answer: ApprovalAnswer): string {
  return answer.kind === "missing" ? NO_ANSWER : "the host dismissed the link to the console's page";
}

/** The reason a call gives when it waited for the person in vain. */
export function noDecisionIn(ms: number): string {
  return `no decision yet after ${Math.round(ms / 1000)} s`;
}
