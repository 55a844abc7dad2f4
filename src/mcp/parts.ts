/**
 * The MCP surface's working parts — the tool list and its catalog, the paid calls and their
 * approvals, the mirror tools, execution updates — built once per process. server.ts loads
 * this module right after the first answer has gone out (or when a request needs it), so
 * that `initialize` and `server/discover` wait for nothing but the SDK.
 */
import type { McpContext } from "./context.js";
import { createPaidCalls } from "./paid-tools.js";
import { createToolList } from "./tool-list.js";
import { callMirrorTool, registerMirrorTools, type MirrorTools } from "./tools/index.js";
import { createUpdates } from "./updates.js";

export function buildParts(ctx: McpContext) {
  const updates = createUpdates(ctx);
  // The mirror tools are registered first, so that no catalog action can take their names.
  const mirror: MirrorTools = new Map();
  registerMirrorTools(mirror, ctx, updates);
  const toolList = createToolList(ctx, mirror);
  const paidCalls = createPaidCalls(ctx);
  return { updates, toolList, paidCalls, callMirrorTool };
}

export type Parts = ReturnType<typeof buildParts>;
