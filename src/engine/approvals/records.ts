/**
 * Approval records: a payment above the human's threshold is paid only with an approval
 * bound to that quote and amount, given once by a person — in the host's prompt
 * (elicitation), the console, or `approve` at an interactive terminal, never by the agent's
 * own tool call — expiring with the quote. Declines are recorded like approvals.
 */
import { formatDecimal } from "../../domain/money.js";
import { intentPayee } from "./review.js";
import type { Ctx } from "../context.js";
import { paidError, type PaidActionError } from "../errors.js";
import type { Approval, ApprovalAsk, IntentIn, PayOptions } from "../model/types.js";
import { refusal, type Move, type Wait } from "../intent/moves.js";
import type { AssertionParts } from "../evidence/webauthn.js";
import { approveWithPasskey, passkeyAtUse, registeredPasskeys } from "./passkeys.js";

/** An intent a person may be asked to approve: priced, not yet reserved. */
type Asking = IntentIn<"quoted" | "awaiting_approval">;

/**
 * The refusal an agent receives when a person must approve: it addresses the person and
 * says where they approve (the console or the terminal), carries the approvalId, and holds
 * no command line — an agent with a shell must not be handed the means to approve itself.
 */
export function approvalRequired(intent: Asking, approvalId: string): PaidActionError {
  const amount = formatDecimal(intent.amount);
  const expires = new Date(intent.quoteExpiresAt).toISOString();
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

async function record(c: Ctx, intent: Asking, status: Approval["status"]): Promise<string> {
  const approvalId = c.d.newId("apr");
  const now = c.now();
  await c.journal.insertApproval({
    approvalId,
    intentId: intent.intentId,
    quoteId: intent.quoteId,
    action: intent.action,
    amount: intent.amount,
    payee: intent.payee,
    expiresAt: intent.quoteExpiresAt,
    status,
    createdAt: now,
    decidedAt: status === "pending" ? null : now,
  });
  return approvalId;
}

/**
 * Whether a person approved paying this quote: undefined when an approval of it was used
 * already (go on); else the move a person's answer makes — used (recorded with the intent,
 * and the decision runs again with it), pending (recorded; the call is answered
 * approval_required), or refused — asking the person when the host can (elicitation); or a
 * wait while a recorded approval is still pending.
 */
export async function ensureApproved(c: Ctx, intent: Asking, opts: PayOptions): Promise<Move | Wait | undefined> {
  const amount = intent.amount;
  const now = c.now();
  // The host's prompt cannot carry a passkey assertion: with one registered, the person decides in the console.
  const host = opts.approve && (await registeredPasskeys(c.journal)).length === 0 ? opts.approve : undefined;
  if (intent.approvalId) {
    const approval = await c.journal.approval(intent.approvalId);
    if (approval?.status === "used" && approval.amount >= amount && approval.quoteId === intent.quoteId) return;
    if (approval?.status === "approved") {
      const invalid = (problem: "mismatch" | "expired" | "used") =>
        refusal(intent.state, paidError("approval_invalid", { approvalId: approval.approvalId, problem }));
      if (approval.quoteId !== intent.quoteId || approval.amount < amount) return invalid("mismatch");
      if (approval.expiresAt <= now) return invalid("expired");
      // With a passkey registered, only an approval its assertion proves counts (fail closed).
      const unproven = await passkeyAtUse(c.journal, intent, approval.approvalId);
      if (unproven)
        return refusal(intent.state, paidError("approval_invalid", { approvalId: approval.approvalId, ...unproven }));
      if (!(await c.journal.decideApproval(approval.approvalId, "approved", "used", now))) return invalid("used");
      c.transcript(intent, "approval", { approvalId: approval.approvalId, decision: "approved by a human" });
      return { outcome: "approval_used", note: null };
    }
    if (approval?.status === "declined") {
      return refusal(intent.state, paidError("approval_declined", { approvalId: approval.approvalId }));
    }
    if (approval?.status === "pending" && approval.expiresAt > now && !host)
      return { wait: approvalRequired(intent, approval.approvalId) };
  }
  if (host) return ask(c, intent, host);
  const approvalId = await record(c, intent, "pending");
  // Recorded, then this step runs again from awaiting_approval and answers approval_required.
  return {
    outcome: "approval_pending",
    patch: { approvalId },
    note: { step: "approval", data: { approvalId, decision: "approval required: waiting for a human" } },
  };
}

/** Asks the person in the host's prompt, and records the answer (used, or declined). */
async function ask(c: Ctx, intent: Asking, approve: NonNullable<PayOptions["approve"]>): Promise<Move> {
  const question: ApprovalAsk = {
    action: intent.action,
    amount: formatDecimal(intent.amount),
    currency: "USDC",
    payee: intentPayee(intent) ?? "(named in the payment challenge)",
    quoteId: intent.quoteId,
    expiresAt: new Date(intent.quoteExpiresAt).toISOString(),
    input: intent.input,
  };
  const answer = await approve(question).catch(() => "cancel" as const);
  const approvalId = await record(c, intent, answer === "accept" ? "used" : "declined");
  c.transcript(intent, "approval", {
    approvalId,
    decision: answer === "accept" ? "accepted by the human" : `not accepted (${answer})`,
  });
  if (answer !== "accept")
    return refusal(
      intent.state,
      paidError("approval_declined", { answer, amount: question.amount, action: intent.action }),
    );
  return { outcome: "approval_used", patch: { approvalId }, note: null };
}

/** Where a person decided: recorded in the transcript of the call that asked. */
export type DecidedIn = "terminal" | "console" | "host";
type DeskCtx = Pick<Ctx, "journal" | "now"> & { transcript?: Ctx["transcript"] };

async function noteDecision(
  c: DeskCtx,
  approval: Approval,
  decision: "approved" | "approved with a passkey" | "declined",
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

/** A passkey assertion made on the console for an approval, and the console's origin it was made on. */
export interface PasskeyEvidence {
  assertion: AssertionParts;
  origin: string;
}

/**
 * A person approves a pending approval (the terminal's `approve`, the console, the host's
 * prompt). With a passkey registered, only with `passkey` (the console's ceremony), which is
 * verified and kept with the approval.
 */
export async function approve(
  c: DeskCtx,
  approvalId: string,
  via?: DecidedIn,
  passkey?: PasskeyEvidence,
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
  if (passkey) await approveWithPasskey(c.journal, approval, passkey.assertion, passkey.origin, c.now());
  else if ((await registeredPasskeys(c.journal)).length > 0)
    throw paidError("approval_invalid", { approvalId, problem: "passkey_required" });
  else if (!(await c.journal.decideApproval(approvalId, "pending", "approved", c.now()))) {
    throw paidError("approval_invalid", { approvalId, problem: "changed" });
  }
  await noteDecision(c, approval, passkey ? "approved with a passkey" : "approved", via);
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
