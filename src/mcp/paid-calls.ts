/**
 * A call of a paid tool: its arguments parsed (paid-tools.ts), the engine's payment with the
 * call's cancellation signal and progress, and the human's approval (paid-approvals.ts) when
 * the amount needs one — asked, or taken from the call that comes back with the answer.
 * Every refusal is a tool result, written to the call's transcript.
 */
import type { CallToolResult, InputRequiredResult, ProtocolEra, Server } from "@modelcontextprotocol/server";
import { newId } from "../domain/ids.js";
import { isCode, PaidActionError } from "../engine/index.js";
import { approvalStates, stateFor } from "./approvals.js";
import type { McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { answered, ask, type Approving } from "./paid-approvals.js";
import { parsePaidArgs, type PaidTool } from "./paid-tools.js";
import { progressReporter } from "./progress.js";
import { failure, paidResult } from "./results.js";

export type PaidCallResult = CallToolResult | InputRequiredResult;

export interface PaidCalls {
  /**
   * A paid call: returns as soon as the execution has started, or the call was refused, or
   * (when the amount needs a human's approval and the client can ask its user) with the
   * input_required question; the same handler takes the answer when the call comes back.
   */
  call(
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
    on: { server: Server; era: ProtocolEra },
  ): Promise<PaidCallResult>;
  /** The `requestState.verify` hook of every connection's server. */
  verifyState: ReturnType<typeof approvalStates>["verify"];
}

export function createPaidCalls(ctx: McpContext): PaidCalls {
  const { sandbox, scrub } = ctx;
  const approving: Approving = { ctx, states: approvalStates(() => ctx.host.stateKey()) };

  async function call(
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
    on: { server: Server; era: ProtocolEra },
  ): Promise<PaidCallResult> {
    const callId = newId("call");
    let pa: McpPaidActions | undefined;
    let retried = false;
    try {
      pa = await ctx.runtime();
      const state = stateFor(rctx, tool.tool.name, args);
      const { input, budget, intentKey, approvalId } = parsePaidArgs(tool, args);
      retried = state !== undefined;
      if (state) {
        const again = await answered(approving, pa, state, { tool, args, rctx });
        if (again) return again;
      }
      const paid = await pa.engine.pay(
        { action: tool.entry.name, input, budget, intentKey, approvalId: state?.approvalId ?? approvalId },
        { callId, signal: rctx.mcpReq.signal, onProgress: progressReporter(rctx) },
      );
      return paidResult(paid, undefined, sandbox);
    } catch (e) {
      if (pa && !retried && isCode(e, "approval_required")) {
        const asked = await ask(approving, e, { tool, args, rctx }, on).catch(() => undefined);
        if (asked) return asked;
      }
      pa?.transcripts.append(callId, "tool_error", {
        tool: tool.tool.name,
        error: e instanceof PaidActionError ? e.toJSON() : String(e),
      });
      return failure(e, sandbox, scrub);
    }
  }

  return { call, verifyState: approving.states.verify };
}
