/** search_paid_resources: the x402 resources a facilitator's discovery list (Bazaar) names, with price and standing. */
import { z } from "zod";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerSearchPaidResourcesTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "search_paid_resources",
    title: "Search paid x402 resources",
    description:
      "Lists the x402 resources the configured facilitator's discovery (Bazaar) knows: URL, method, price in USDC, payee, description, input hints, and whether the human allowed its origin (paid_fetch pays only allowed origins). Pays nothing.",
    schema: z.strictObject({
      query: z.string().max(200).optional().describe("Words that must all appear in the URL, description or tags."),
      limit: z.int().min(1).max(100).optional().describe("At most this many (default 20)."),
    }),
    openWorld: true,
    run: async (args, { pa }) => {
      const found = await pa.engine.searchPaidResources({ query: args.query, limit: args.limit ?? 20 });
      const allowed = found.resources.filter((r) => r.originAllowed).length;
      return ok(
        { ...found, ...(sandbox ? { sandbox: true } : {}) },
        `${found.resources.length} resource(s) from ${found.facilitator}; ${allowed} on an allowed origin.`,
      );
    },
  });
}
