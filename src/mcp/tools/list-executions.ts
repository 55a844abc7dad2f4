/** list_executions: what this server paid for, newest first, filtered and paged. */
import { z } from "zod";
import { ExecutionStatus } from "../../domain/wire.js";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerListExecutionsTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "list_executions",
    title: "List executions",
    description:
      "Executions this server paid for, newest first, from its journal. Filter by status or action; page with cursor.",
    schema: z.strictObject({
      status: ExecutionStatus.optional(),
      action: z.string().max(100).optional(),
      limit: z.int().min(1).max(100).optional(),
      cursor: z.string().max(200).optional(),
    }),
    run: async (args: { status?: string; action?: string; limit?: number; cursor?: string }, { pa }) => {
      const page = await pa.engine.listExecutions(args);
      return ok(
        { ...page, ...(sandbox ? { sandbox: true } : {}) },
        `${page.items.length} execution(s)${page.nextCursor ? "; more with nextCursor" : ""}.`,
      );
    },
  });
}
