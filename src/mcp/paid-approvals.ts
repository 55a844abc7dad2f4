/**
 * A paid call's approval, on the MCP side: asking the person about a payment that needs one
 * (the console's page when the client opens URLs, else the host's own form), and the answer
 * a call comes back with — approved, declined, or a decision still to wait for on the
 * console's page. The questions and sealed states themselves are approvals.ts.
 */
import type { InputRequiredResult, ProtocolEra, RequestStateCodec, Server } from "@modelcontextprotocol/server";
import { PaidActionError } from "../engine/index.js";
import {
  approvalAnswer,
  askApproval,
  askApprovalAtUrl,
  canElicit,
  canElicitUrl,
  waitForDecision,
  type ApprovalAnswer,
  type ApprovalQuestion,
  type ApprovalState,
} from "./approvals.js";
import type { McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { withoutExtras, type PaidTool } from "./paid-tools.js";
import { progressReporter } from "./progress.js";

/** What every approval step is handed: the surface's context and the codec that seals the states. */
export interface Approving {
  ctx: McpContext;
  states: RequestStateCodec<ApprovalState>;
}

/** The call an approval is about: its tool, its arguments as sent, its request. */
export interface ApprovalCall {
  tool: PaidTool;
  args: unknown;
  rctx: RequestCtx;
}

function question(
  approvalId: string,
  action: string,
  amount: string,
  payee: string | null | undefined,
  expiresAt: string,
  input: unknown,
): ApprovalQuestion {
  return {
    approvalId,
    action,
    amount,
    currency: "USDC",
    payee: payee ?? "(named in the payment challenge)",
    expiresAt,
    input,
  };
}

/** The question to ask again about a pending approval (as a person reviews it: payee from the challenge too). */
async function pendingQuestion(pa: McpPaidActions, approvalId: string): Promise<ApprovalQuestion> {
  const r = await pa.engine.approvalReview(approvalId);
  if (!r || r.status !== "pending")
    throw new PaidActionError(
      "approval_invalid",
      `approval ${approvalId} is ${r?.status ?? "unknown"}; call again without it for a new quote. Nothing was paid`,
      { approvalId },
    );
  return question(r.approvalId, r.action, r.amount, r.payee, r.expiresAt, r.input);
}

/**
 * Asks a person about a payment that needs approval, through the host: the console's page
 * when the client opens URLs, else the host's own form; undefined when it can do neither.
 */
export async function ask(
  a: Approving,
  e: PaidActionError<"approval_required">,
  { tool, args, rctx }: ApprovalCall,
  on: { server: Server; era: ProtocolEra },
): Promise<InputRequiredResult | undefined> {
  const { ctx, states } = a;
  const c = e.context;
  const input = (args as Record<string, unknown>) ?? {};
  const inputOnly = withoutExtras(input);
  const q = question(c.approvalId, c.action, c.amount, c.payee ?? null, c.expiresAt, inputOnly);
  if (canElicitUrl(on.era, on.server, rctx)) {
    const url = await ctx.host.approvalPage?.(q.approvalId).catch((err: unknown) => {
      ctx.log(`console: cannot offer the approval page (${(err as Error).message}); asking in the host instead`);
      return undefined;
    });
    if (url) return askApprovalAtUrl(states, rctx, tool.tool.name, args, q, url, ctx.sandbox);
  }
  if (canElicit(on.era, on.server, rctx)) return askApproval(states, rctx, tool.tool.name, args, q, ctx.sandbox);
  return undefined;
}

/**
 * The approval a call came back with, given (or refused) as the human answered; undefined
 * when the call may go on to pay, or the question to ask again.
 */
export async function answered(
  a: Approving,
  pa: McpPaidActions,
  state: ApprovalState,
  call: ApprovalCall,
): Promise<InputRequiredResult | undefined> {
  const approvalId = state.approvalId;
  const answer = approvalAnswer(call.rctx);
  if (state.via === "url") return answeredAtUrl(a, pa, state, answer, call);
  if (answer.kind === "approved") {
    await pa.engine.approve(approvalId, "host"); // single use: a replayed answer finds it used and is refused
    return undefined;
  }
  if (answer.kind === "refused") {
    await pa.engine.decline(approvalId, "host");
    throw new PaidActionError(
      "approval_declined",
      `the human did not approve this payment (${answer.how}); nothing was paid`,
      { approvalId, answer: answer.how },
    );
  }
  // No answer came back with the state: ask again, for the same pending approval.
  const q = await pendingQuestion(pa, approvalId);
  return askApproval(a.states, call.rctx, call.tool.tool.name, call.args, q, a.ctx.sandbox);
}

/**
 * The person was sent to the console's page: going there is all the answer says. The call
 * waits for the decision made on that page (or in a terminal), read from the journal.
 */
async function answeredAtUrl(
  a: Approving,
  pa: McpPaidActions,
  state: ApprovalState,
  answer: ApprovalAnswer,
  { tool, args, rctx }: ApprovalCall,
): Promise<InputRequiredResult | undefined> {
  const approvalId = state.approvalId;
  if (answer.kind === "missing") {
    const q = await pendingQuestion(pa, approvalId);
    const url = await a.ctx.host.approvalPage?.(approvalId);
    if (url) return askApprovalAtUrl(a.states, rctx, tool.tool.name, args, q, url, a.ctx.sandbox);
  } else if (answer.kind === "refused" && answer.how === "decline") {
    await pa.engine.decline(approvalId, "host");
    throw new PaidActionError("approval_declined", `the person declined this payment; nothing was paid`, {
      approvalId,
      answer: "decline",
    });
  } else if (answer.kind === "approved" || answer.how === "not checked") {
    // An accepted URL question carries no content: the person went to the page.
    await decidedAtConsole(a.ctx, pa, approvalId, rctx);
  }
  // Dismissed, or no decision in time: the approval stays waiting for a person, and the
  // engine answers the call with it (approval_required and its approvalId, to call again).
  return undefined;
}

/**
 * Waits for the decision made on the console's page, with progress every 5 s when the call
 * carries a token. Returns when it was approved, or when no decision came in time; throws
 * when it was declined, expired or is gone.
 */
async function decidedAtConsole(
  ctx: McpContext,
  pa: McpPaidActions,
  approvalId: string,
  rctx: RequestCtx,
): Promise<void> {
  const progress = progressReporter(rctx);
  let told = -1;
  const decision = await waitForDecision(async (id) => pa.engine.approval(id), approvalId, {
    now: ctx.now,
    deadline: ctx.now() + ctx.approvalWaitMs,
    signal: rctx.mcpReq.signal,
    onWait: (ms) => {
      if (Math.floor(ms / 5_000) === told) return;
      told = Math.floor(ms / 5_000);
      progress?.(
        `waiting for a person to approve approval ${approvalId} in the paid-actions console (${Math.round(ms / 1000)} s)`,
      );
    },
  });
  if (decision === "declined")
    throw new PaidActionError("approval_declined", `a person declined this payment in the console; nothing was paid`, {
      approvalId,
    });
  if (decision === "gone")
    throw new PaidActionError(
      "approval_invalid",
      `approval ${approvalId} expired or is gone; call again without it for a new quote. Nothing was paid`,
      { approvalId },
    );
}
