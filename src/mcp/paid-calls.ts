/**
 * A call of a paid tool — any kind: a catalog action or paid_fetch (paid-tools.ts). Its
 * arguments parsed, a `tool` entry in the call's transcript, the engine's payment with the
 * call's cancellation signal and progress, and the person's approval when the amount needs
 * one — on a 2026-07-28 connection asked with an `input_required` result and taken from the
 * call that comes back with the answer (paid-approvals.ts), on a 2025 one asked of the host
 * within the call (legacy-approvals.ts); when the host cannot ask at all, brought to the
 * person's desktop (desktop-approvals.ts). A call that waits for a person answers by its
 * deadline, decided or not (waiting.ts). Every refusal is a tool result, written to the
 * call's transcript as a `tool_error`.
 */
import type { CallToolResult, InputRequiredResult, ProtocolEra, Server } from "@modelcontextprotocol/server";
import { newId } from "../domain/ids.js";
import { isCode, PaidActionError } from "../engine/index.js";
import { approvalStates, stateFor } from "./approvals.js";
import type { McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { atTheDesktop } from "./desktop-approvals.js";
import { askInHost } from "./legacy-approvals.js";
import { answered, ask, type ApprovalCall, type Approving } from "./paid-approvals.js";
import { parsePaidArgs, type PaidTool } from "./paid-tools.js";
import { progressReporter } from "./progress.js";
import { failure } from "./results.js";

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
    const deadline = ctx.now() + ctx.approvalWaitMs;
    let pa: McpPaidActions | undefined;
    try {
      pa = await ctx.runtime();
      const engine = pa.engine;
      const state = stateFor(rctx, tool.tool.name, args);
      const { purchase, extras } = parsePaidArgs(tool, args);
      pa.transcripts.append(callId, "tool", { tool: tool.tool.name, ...purchase.noted });
      const approval: ApprovalCall = { tool, purchase, args, rctx, deadline, on };
      if (state) await answered(approving, pa, state, approval);
      const opts = { callId, signal: rctx.mcpReq.signal, onProgress: progressReporter(rctx) };
      const pay = (approvalId: string | undefined) => purchase.pay(engine, { ...extras, approvalId }, opts);
      try {
        return await pay(state?.approvalId ?? extras.approvalId);
      } catch (e) {
        // A call that came back with an answer is not asked again: it ends with the engine's word.
        if (state || !isCode(e, "approval_required")) throw e;
        if (on.era === "legacy") {
          await askInHost(approving, pa, e, approval, on.server);
          return await pay(e.context.approvalId);
        }
        const asked = await ask(approving, pa, e, approval).catch(() => undefined);
        if (asked) return asked;
        // The client cannot ask its user: the desktop, when that is on, else the refusal `e`.
        await atTheDesktop(approving, pa, e, approval);
        return await pay(e.context.approvalId);
      }
    } catch (e) {
      pa?.transcripts.append(callId, "tool_error", {
        tool: tool.tool.name,
        error: e instanceof PaidActionError ? e.toJSON() : String(e),
      });
      return failure(e, sandbox, scrub);
    }
  }

  return { call, verifyState: approving.states.verify };
}
