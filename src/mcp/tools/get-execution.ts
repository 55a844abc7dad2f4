/** get_execution: one execution from the journal, refreshed from the service. */
import { z } from "zod";
import { paidError } from "../../engine/index.js";
import type { McpContext } from "../context.js";
import { executionUri, ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerGetExecutionTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "get_execution",
    title: "Get an execution",
    description:
      "An execution this server paid for, from its journal, refreshed from the service: status, output, refund. A purchase the service has created no execution for yet is found by its intentId.",
    schema: z.strictObject({ executionId: z.string().min(1).max(128) }),
    // Refreshed from the service: open-world.
    openWorld: true,
    run: async (args: { executionId: string }, { pa }) => {
      const view = await pa.engine.getExecution(args.executionId, true);
      if (!view) throw paidError("not_found", { executionId: args.executionId });
      return ok(
        { ...view, resourceUri: executionUri(args.executionId), ...(sandbox ? { sandbox: true } : {}) },
        `Execution ${args.executionId} (${view.action}) is ${view.status}.`,
      );
    },
  });
}
