/**
 * A payment that needs approval, for a host that cannot ask the person at all (it declares no
 * elicitation: Claude Desktop). Rather than leave the person to learn of it from the agent,
 * the server brings it to their desktop itself when that is on (PAID_ACTIONS_OPEN_APPROVALS,
 * a desktop session: the app layer decides, and offers `showApproval` only then): a
 * notification, and the console's page for that payment opened in their browser, once per
 * approval. The call then waits for the decision made there like a URL-mode call
 * (waiting.ts: until its deadline, the journal read every 500 ms), pays when it is approved,
 * and otherwise answers `approval_required` — the approval still pending for the retry with
 * its approvalId, which waits again without opening anything more.
 */
import type { PaidActionError } from "../engine/index.js";
import { approvalNotice, declaresElicitation } from "./approvals.js";
import type { McpPaidActions } from "./context.js";
import { formCounts, noDecisionIn, question, type ApprovalCall, type Approving } from "./paid-approvals.js";
import { asWaiting, cancelledWhileWaiting, decisionBy, takeDecision } from "./waiting.js";

/**
 * Brings the approval `e` asks for to the person's desktop and waits for their decision:
 * returns when it is approved (the call goes on and pays), throws the refusal otherwise —
 * `e` itself when the client declares elicitation, or the desktop is off or cannot be reached.
 */
export async function atTheDesktop(
  a: Approving,
  pa: McpPaidActions,
  e: PaidActionError<"approval_required">,
  call: ApprovalCall,
): Promise<void> {
  const { ctx } = a;
  const { rctx, deadline, on } = call;
  const show = ctx.host.showApproval;
  // Only a host that cannot ask at all: one that declares elicitation asks the person itself —
  // unless all it can show is a form, whose accept counts for nothing with a passkey registered.
  if (!show || (declaresElicitation(on.era, on.server, rctx) && (await formCounts(pa)))) throw e;
  const approvalId = e.context.approvalId;
  const q = question(e.context, await call.purchase.subject(pa, approvalId));
  try {
    await show(approvalId, approvalNotice(q, ctx.sandbox));
  } catch (err) {
    ctx.log(`desktop: cannot open the console's page for approval ${approvalId} (${(err as Error).message})`);
    throw e;
  }
  const started = ctx.now();
  const { outcome, decision } = await asWaiting(ctx, pa, approvalId, rctx, () =>
    decisionBy(ctx, pa, approvalId, rctx, deadline),
  );
  if (rctx.mcpReq.signal.aborted) throw cancelledWhileWaiting();
  // The journal could not be read: that fault, not a refusal about the person.
  if (outcome.status === "rejected") throw outcome.reason;
  const why = `its page was opened in the browser on this computer; ${noDecisionIn(ctx.now() - started)}`;
  return takeDecision(ctx, pa, approvalId, decision, why, false);
}
