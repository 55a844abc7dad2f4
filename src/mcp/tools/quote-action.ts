/** quote_action: prices an intent without paying, and says whether the limits allow it now. */
import { z } from "zod";
import type { McpContext } from "../context.js";
import { toolNameFor } from "../catalog.js";
import { Budget } from "../paid-tools.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerQuoteActionTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "quote_action",
    title: "Quote an action (free)",
    description:
      "Prices an intent without paying: the service's quote, and whether the human's limits allow paying it now (or need an approval). Pays nothing.",
    schema: z.strictObject({
      action: z.string().min(1).max(100).describe("Service action, e.g. servers.provision"),
      input: z.record(z.string(), z.unknown()),
      budget: Budget.optional(),
    }),
    // The service prices it: open-world, though nothing is paid or recorded.
    openWorld: true,
    run: async (
      args: { action: string; input: Record<string, unknown>; budget?: { amount: string; currency: string } },
      { pa },
    ) => {
      const q = await pa.engine.quote(args);
      return ok(
        { ...q, tool: toolNameFor(args.action), ...(sandbox ? { sandbox: true } : {}) },
        `${args.action} costs ${q.amount} USDC (quote ${q.quoteId}, expires ${q.expiresAt}). ${q.payable ? (q.needsApproval ? "Within limits, but a human must approve it." : "Within limits.") : `Not payable: ${q.refusal?.message}`}`,
      );
    },
  });
}
