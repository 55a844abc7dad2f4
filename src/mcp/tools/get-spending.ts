/** get_spending: the human's limits, what was spent and reserved, and what remains; the spend by network and origin. */
import { z } from "zod";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerGetSpendingTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "get_spending",
    title: "Get spending and limits",
    description:
      "The human's limits, what was spent and reserved in the rolling 24 h window and in total, and what remains; the spend broken down by network paid on (the caps count every network's USDC together) and by paid_fetch origin.",
    schema: z.strictObject({}),
    // Answered from this server's journal and configuration alone.
    openWorld: false,
    run: async (_args: Record<string, never>, { pa }) => {
      const s = await pa.engine.spending();
      return ok(
        { ...s, ...(sandbox ? { sandbox: true } : {}) },
        `Spent ${s.spentLast24h} USDC in the last 24 h (${s.reserved} reserved); ${s.remainingToday ?? "?"} USDC left today.` +
          (s.byNetwork.length > 1
            ? ` By network: ${s.byNetwork.map((n) => `${n.name} ${n.spentTotal} USDC in total`).join(", ")}.`
            : ""),
      );
    },
  });
}
