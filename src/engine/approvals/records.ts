/**
 * Approval records: a payment above the human's threshold is paid only with an approval
 * bound to that quote and amount, given once by a person — in the host's prompt
 * (elicitation), the console, or `approve` at an interactive terminal, never by the agent's
 * own tool call — expiring with the quote. Declines are recorded like approvals.
 */
import { formatDecimal } from "../../domain/money.js";
import { intentPayee } from "./review.js";
import type { Ctx } from "../context.js";
import { paidError, PaidActionError } from "../errors.js";
import type { Approval, ApprovalAsk, Intent, IntentPatch, PayOptions } from "../model/types.js";

/** What the approval step needs of the call driving the intent. */
export interface ApprovalDriver {
  intent: Intent;
  commit(patch: IntentPatch): Promise<Intent>;
  advance(outcome: "approval_pending" | "approval_used", extra?: IntentPatch): Promise<unknown>;
}

/**
 * The refusal an agent receives when a person must approve: it addresses the person and
 * says where they approve (the console or the terminal), carries the approvalId, and holds
 * no command line — an agent with a shell must not be handed the means to approve itself.
 */
export function approvalRequired(intent: Intent, approvalId: string): PaidActionError {
  const amount = formatDecimal(intent.amount!);
  const expires = new Date(intent.quoteExpiresAt!).toISOString();
  const payee = intentPayee(intent);
  return paidError("approval_required", {
    approvalId,
    intentId: intent.intentId,
    action: intent.action,
    amount,
    currency: "USDC",
    payee,
    quoteId: intent.quoteId,
    expiresAt: expires,
  });
}

async function record(c: Ctx, intent: Intent, status: Approval["status"]): Promise<string> {
  const approvalId = c.d.newId("apr");
  const now = c.now();
  await c.journal.insertApproval({
    approvalId,
    intentId: intent.intentId,
    quoteId: intent.quoteId!,
    action: intent.action,
    amount: intent.amount!,
    payee: intent.payee,
    expiresAt: intent.quoteExpiresAt!,
    status,
    createdAt: now,
    decidedAt: status === "pending" ? null : now,
  });
  return approvalId;
}

/**
 * Makes sure a human approved paying this quote, asking when it can (elicitation), else
 * recording a pending approval and refusing with approval_required. Returns when approved.
 */
export async function ensureApproved(c: Ctx, drive: ApprovalDriver, opts: PayOptions): Promise<void> {
  const intent = drive.intent;
  const amount = intent.amount!;
  const now = c.now();
  if (intent.approvalId) {
    const approval = await c.journal.approval(intent.approvalId);
    if (approval?.status === "used" && approval.amount >= amount && approval.quoteId === intent.quoteId) return;
    if (approval?.status === "approved") {
      if (approval.quoteId !== intent.quoteId || approval.amount < amount) {
        throw paidError("approval_invalid", { approvalId: approval.approvalId, problem: "mismatch" });
      }
      if (approval.expiresAt <= now) {
        throw paidError("approval_invalid", { approvalId: approval.approvalId, problem: "expired" });
      }
      if (!(await c.journal.decideApproval(approval.approvalId, "approved", "used", now))) {
        throw paidError("approval_invalid", { approvalId: approval.approvalId, problem: "used" });
      }
      c.transcript(intent, "approval", { approvalId: approval.approvalId, decision: "approved by a human" });
      await drive.advance("approval_used");
      return;
    }
    if (approval?.status === "declined") {
      throw paidError("approval_declined", { approvalId: approval.approvalId });
    }
    if (approval?.status === "pending" && approval.expiresAt > now && !opts.approve)
      throw approvalRequired(intent, approval.approvalId);
  }
  if (opts.approve) {
    const ask: ApprovalAsk = {
      action: intent.action,
      amount: formatDecimal(amount),
      currency: "USDC",
      payee: intentPayee(intent) ?? "(named in the payment challenge)",
      quoteId: intent.quoteId!,
      expiresAt: new Date(intent.quoteExpiresAt!).toISOString(),
      input: intent.input,
    };
    const answer = await opts.approve(ask).catch(() => "cancel" as const);
    const approvalId = await record(c, intent, answer === "accept" ? "used" : "declined");
    c.transcript(intent, "approval", {
      approvalId,
      decision: answer === "accept" ? "accepted by the human" : `not accepted (${answer})`,
    });
    if (answer !== "accept") {
      throw paidError("approval_declined", { answer, amount: ask.amount, action: intent.action });
    }
    await drive.commit({ approvalId });
    return;
  }
  const approvalId = await record(c, intent, "pending");
  await drive.advance("approval_pending", { approvalId });
  c.transcript(intent, "approval", { approvalId, decision: "approval required: waiting for a human" });
  throw approvalRequired(drive.intent, approvalId);
}

/** Where a person decided: recorded in the transcript of the call that asked. */
export type DecidedIn = "terminal" | "console" | "host";
type DeskCtx = Pick<Ctx, "journal" | "now"> & { transcript?: Ctx["transcript"] };

async function noteDecision(
  c: DeskCtx,
  approval: Approval,
  decision: "approved" | "declined",
  via: DecidedIn | undefined,
): Promise<void> {
  if (!via || !c.transcript) return;
  const intent = await c.journal.intent(approval.intentId);
  if (intent)
    c.transcript(intent, "approval", {
      approvalId: approval.approvalId,
      decision: `${decision} by a person in the ${via}`,
    });
}

/** A person approves a pending approval (the terminal's `approve`, the console, the host's prompt). */
export async function approve(
  c: DeskCtx,
  approvalId: string,
  via?: DecidedIn,
): Promise<{
  approvalId: string;
  intentId: string;
  action: string;
  amount: string;
  expiresAt: string;
  payee: string | null;
}> {
  const approval = await c.journal.approval(approvalId);
  if (!approval) throw paidError("approval_invalid", { approvalId, problem: "missing" });
  if (approval.status !== "pending")
    throw paidError("approval_invalid", { approvalId, problem: "decided", status: approval.status });
  if (approval.expiresAt <= c.now()) {
    const expiresAt = new Date(approval.expiresAt).toISOString();
    throw paidError("approval_invalid", { approvalId, problem: "expired", expiresAt });
  }
  if (!(await c.journal.decideApproval(approvalId, "pending", "approved", c.now()))) {
    throw paidError("approval_invalid", { approvalId, problem: "changed" });
  }
  await noteDecision(c, approval, "approved", via);
  return {
    approvalId,
    intentId: approval.intentId,
    action: approval.action,
    amount: formatDecimal(approval.amount),
    expiresAt: new Date(approval.expiresAt).toISOString(),
    payee: approval.payee,
  };
}

/** A person declines a pending approval: recorded, and nothing is paid for it. */
export async function decline(c: DeskCtx, approvalId: string, via?: DecidedIn): Promise<void> {
  const approval = await c.journal.approval(approvalId);
  if (!approval) throw paidError("approval_invalid", { approvalId, problem: "missing" });
  if (approval.status === "declined") return;
  if (approval.status !== "pending" || !(await c.journal.decideApproval(approvalId, "pending", "declined", c.now()))) {
    const status = (await c.journal.approval(approvalId))?.status ?? approval.status;
    throw paidError("approval_invalid", { approvalId, problem: "decided", status });
  }
  await noteDecision(c, approval, "declined", via);
}

/** A recorded approval, with the input of the purchase it is for. */
export async function approvalWithInput(journal: Ctx["journal"], approvalId: string) {
  const approval = await journal.approval(approvalId);
  if (!approval) return undefined;
  return { ...approval, input: (await journal.intent(approval.intentId))?.input };
}
