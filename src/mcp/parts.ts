/**
 * The MCP surface's working parts — the tool list and its catalog, the paid calls and their
 * approvals, the mirror tools, execution updates — built once per process. server.ts loads
 * this module right after the first answer has gone out (or when a request needs it), so
 * that `initialize` and `server/discover` wait for nothing but the SDK.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { paidError } from "../engine/index.js";
import type { McpContext, RequestCtx } from "./context.js";
import { droppedKeys } from "./guards.js";
import { createPaidCalls } from "./paid-calls.js";
import { createToolList } from "./tool-list.js";
import type { PaidTool } from "./paid-tools.js";
import { callMirrorTool, registerMirrorTools, registerPaidTools, type MirrorTools } from "./tools/index.js";
import { failure } from "./results.js";
import { createUpdates } from "./updates.js";

export function buildParts(ctx: McpContext) {
  const updates = createUpdates(ctx);
  // The tools beyond the catalog are registered first, so that no catalog action can take their names.
  const fixed = new Map<string, PaidTool>();
  registerPaidTools(fixed, ctx);
  const mirror: MirrorTools = new Map();
  registerMirrorTools(mirror, ctx, updates);
  const toolList = createToolList(ctx, fixed, mirror);
  const paidCalls = createPaidCalls(ctx);
  /** A refusal for a call whose arguments carried keys the SDK dropped (guards.ts); nothing is paid. */
  const refuseDroppedKeys = (rctx: RequestCtx): CallToolResult | undefined => {
    const keys = droppedKeys(rctx);
    if (!keys) return undefined;
    return failure(
      paidError("invalid_input", {
        problem: "proto_key",
        issues: keys.map((path) => ({ path, message: "not accepted" })),
      }),
      ctx.sandbox,
      ctx.scrub,
    );
  };
  return { updates, toolList, paidCalls, callMirrorTool, refuseDroppedKeys };
}

export type Parts = ReturnType<typeof buildParts>;
