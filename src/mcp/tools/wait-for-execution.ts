/** wait_for_execution: waits (bounded) for a final status, with progress notifications. */
import { z } from "zod";
import { FINAL_STATUSES, type ExecutionStatus } from "../../domain/wire.js";
import type { McpContext } from "../context.js";
import { executionUri, ok } from "../results.js";
import type { Updates } from "../updates.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

const MAX_WAIT_SECONDS = 100;

export function registerWaitForExecutionTool(tools: MirrorTools, ctx: McpContext, waitFor: Updates["waitFor"]): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "wait_for_execution",
    title: "Wait for an execution",
    description: `Waits (at most ${MAX_WAIT_SECONDS} s) until an execution reaches a final status, sending progress notifications, and returns its record.`,
    schema: z.strictObject({
      executionId: z.string().min(1).max(128),
      timeoutSeconds: z.number().min(0).max(MAX_WAIT_SECONDS).default(60),
    }),
    // Refreshed from the service while it waits: open-world.
    openWorld: true,
    run: async (args: { executionId: string; timeoutSeconds: number }, { pa, rctx }) => {
      const view = await waitFor(pa, args.executionId, args.timeoutSeconds * 1000, rctx);
      const final = FINAL_STATUSES.has(view.status as ExecutionStatus);
      return ok(
        {
          ...view,
          final,
          timedOut: !final,
          resourceUri: executionUri(args.executionId),
          ...(sandbox ? { sandbox: true } : {}),
        },
        final
          ? `Execution ${args.executionId} is ${view.status}.`
          : `Execution ${args.executionId} is still ${view.status} after ${args.timeoutSeconds} s; wait again or subscribe to ${executionUri(args.executionId)}.`,
      );
    },
  });
}
