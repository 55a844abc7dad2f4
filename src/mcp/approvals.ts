/**
 * Asking the human to approve one payment above the approval threshold: by form
 * elicitation when the client can show one. When it cannot, the engine refuses with
 * approval_required and an approvalId the human approves in a terminal (the fallback).
 */
import type { ApprovalAnswer, ApprovalAsk } from "../engine/types.js";
import type { McpContext } from "./context.js";

export type Approver = (ask: ApprovalAsk) => Promise<ApprovalAnswer>;

/**
 * The approver for a paid call now, or undefined when the connected client does not declare
 * elicitation. `timeoutMs` bounds how long the question waits for the human.
 */
export function approverFor(ctx: McpContext, timeoutMs: number): Approver | undefined {
  const canElicit = Boolean(ctx.server.getClientCapabilities()?.elicitation);
  return canElicit ? (ask) => elicitApproval(ctx, timeoutMs, ask) : undefined;
}

async function elicitApproval(ctx: McpContext, timeoutMs: number, ask: ApprovalAsk): Promise<ApprovalAnswer> {
  const { server, sandbox } = ctx;
  const result = await server.elicitInput(
    {
      mode: "form",
      message:
        `Approve a payment${sandbox ? " (SANDBOX, demo USDC)" : ""}: ${ask.amount} ${ask.currency} for ${ask.action} to ${ask.payee}. ` +
        `Quote ${ask.quoteId} expires at ${ask.expiresAt}. Input: ${JSON.stringify(ask.input).slice(0, 500)}`,
      requestedSchema: {
        type: "object",
        properties: {
          approve: { type: "boolean", title: `Pay ${ask.amount} ${ask.currency}`, description: "Check to approve this one payment." },
        },
        required: ["approve"],
      },
    },
    { timeout: timeoutMs },
  );
  if (result.action !== "accept") return result.action;
  return result.content?.approve === true ? "accept" : "decline";
}
