/**
 * A paid call's approval on a 2025 connection: the server asks the host itself, with an
 * `elicitation/create` related to the tool call, instead of handing an `input_required`
 * result to the SDK's legacy shim. The shim answers a failed question (the host's handler
 * threw, timed out, the client cannot elicit) with its own text and no `structuredContent`;
 * here every such end is a refusal with its code, the approvalId and "nothing was paid", and
 * the approval stays pending for the retry with that approvalId. The question and the wait
 * after it (for the console's page) both end by the call's deadline (waiting.ts).
 */
import { randomUUID } from "node:crypto";
import { SdkError, SdkErrorCode, type ElicitRequestParams, type Server } from "@modelcontextprotocol/server";
import { paidError, type PaidActionError } from "../engine/index.js";
import {
  answerOf,
  approvalForm,
  approvalLink,
  canElicit,
  canElicitUrl,
  DISMISSED_FORM,
  dismissedForm,
  linkHow,
  type ApprovalAnswer,
} from "./approvals.js";
import type { LinkHow, McpPaidActions } from "./context.js";
import { atTheDesktop } from "./desktop-approvals.js";
import { noDecisionIn, question, type ApprovalCall, type Approving } from "./paid-approvals.js";
import { asWaiting, cancelledWhileWaiting, decisionBy, takeDecision, type Decision } from "./waiting.js";

/**
 * Asks a person about a payment that needs approval, through the host of a 2025 connection:
 * the console's page when the client opens URLs, else the host's own form; a host that
 * declares no elicitation, on the person's desktop when that is on (desktop-approvals.ts).
 * Returns when the payment is approved (the call goes on and pays); throws the refusal
 * otherwise — `e` itself when the person cannot be reached at all.
 */
export async function askInHost(
  a: Approving,
  pa: McpPaidActions,
  e: PaidActionError<"approval_required">,
  call: ApprovalCall,
  server: Server,
): Promise<void> {
  const { ctx } = a;
  const { rctx, deadline } = call;
  const approvalId = e.context.approvalId;
  const how = linkHow("legacy", server, rctx);
  const link = canElicitUrl("legacy", server, rctx)
    ? await ctx.host.approvalPage?.(approvalId, how).catch((err: unknown) => {
        ctx.log(`console: cannot offer the approval page (${(err as Error).message}); asking in the host instead`);
        return undefined;
      })
    : undefined;
  // The host cannot ask: the person may still be reached on their desktop (or the refusal is `e`).
  if (!link && !canElicit("legacy", server, rctx)) return atTheDesktop(a, pa, e, call);
  const q = question(e.context, await call.purchase.subject(pa, approvalId));
  const params: ElicitRequestParams = link
    ? { mode: "url", elicitationId: randomUUID(), ...approvalLink(q, link, ctx.sandbox) }
    : approvalForm(q, ctx.sandbox);
  const started = ctx.now();
  const { outcome, decision } = await asWaiting(ctx, pa, approvalId, rctx, async () => {
    const result = await server.request(
      { method: "elicitation/create", params },
      { relatedRequestId: rctx.mcpReq.id, timeout: Math.max(1, deadline - ctx.now()), signal: rctx.mcpReq.signal },
    );
    const answer = answerOf(result);
    // At the console's page: accepting only says the person went there; the decision is made there.
    if (link && (answer.kind === "approved" || (answer.kind === "refused" && answer.how === "not checked")))
      await decisionBy(ctx, pa, approvalId, rctx, deadline);
    return answer;
  });
  if (params.mode === "url" && (decision === "approved" || decision === "declined"))
    await pageDecided(server, params.elicitationId, rctx.mcpReq.id);
  if (rctx.mcpReq.signal.aborted) throw cancelledWhileWaiting();
  const waited = ctx.now() - started;
  if (outcome.status === "rejected")
    return takeDecision(ctx, pa, approvalId, decision, unanswered(outcome.reason, waited), link ? how : false);
  if (link) return atThePage(a, pa, approvalId, outcome.value, decision, waited, how);
  return inTheForm(a, pa, approvalId, outcome.value, decision);
}

/**
 * Tells the host that the interaction its link started is over (the person decided on the
 * page), so it can close what it showed: `notifications/elicitation/complete`. Best effort: a
 * host gone meanwhile changes nothing about the decision.
 */
async function pageDecided(server: Server, elicitationId: string, relatedRequestId: string | number): Promise<void> {
  try {
    await server.createElicitationCompletionNotifier(elicitationId, { relatedRequestId })();
  } catch {
    // The host closed the connection or never declared URL mode: nothing to tell.
  }
}

/** Why the host's question brought no answer: it failed, or the deadline came first. */
function unanswered(reason: unknown, waited: number): string {
  if (reason instanceof SdkError && reason.code === SdkErrorCode.RequestTimeout) return noDecisionIn(waited);
  const message = reason instanceof Error ? reason.message : String(reason);
  return `the host could not ask the person (${message.slice(0, 200)})`;
}

/**
 * The host's form answered: an explicit approval pays; a dismissed form (cancel) decides
 * nothing — the approval stays pending, as when a link is dismissed; any other answer (decline,
 * the box left unchecked) is recorded as a decline.
 */
async function inTheForm(
  a: Approving,
  pa: McpPaidActions,
  approvalId: string,
  answer: ApprovalAnswer,
  decision: Decision,
) {
  if (answer.kind === "approved") {
    // Approved elsewhere meanwhile (the console): nothing more to record.
    if (decision !== "approved") await pa.engine.approve(approvalId, "host");
    return;
  }
  if (dismissedForm(answer)) return takeDecision(a.ctx, pa, approvalId, decision, DISMISSED_FORM, false);
  const how = answer.kind === "refused" ? answer.how : "no answer";
  await pa.engine.decline(approvalId, "host");
  throw paidError("approval_declined", { approvalId, answer: how });
}

/** The host answered the link: a decline is recorded; otherwise the decision made at the page, or none yet. */
async function atThePage(
  a: Approving,
  pa: McpPaidActions,
  approvalId: string,
  answer: ApprovalAnswer,
  decision: Decision,
  waited: number,
  how: LinkHow,
): Promise<void> {
  if (answer.kind === "refused" && answer.how === "decline" && decision === "pending") {
    await pa.engine.decline(approvalId, "host");
    throw paidError("approval_declined", { approvalId, answer: "decline" });
  }
  const why =
    answer.kind === "refused" && answer.how === "cancel"
      ? "the host dismissed the link to the console's page"
      : noDecisionIn(waited);
  return takeDecision(a.ctx, pa, approvalId, decision, why, how);
}
