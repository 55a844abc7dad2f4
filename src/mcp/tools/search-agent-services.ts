/** search_agent_services: the service's marketplace of agent services, searched for free. */
import { z } from "zod";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerSearchAgentServicesTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "search_agent_services",
    title: "Search agent services",
    description:
      "Searches the service's marketplace of agent services by task type, price band and guarantees (free). Hire one with agent_services_purchase.",
    schema: z.strictObject({
      taskType: z.string().max(64).optional(),
      query: z.string().max(200).optional(),
      priceBand: z.strictObject({ min: z.string().max(40).optional(), max: z.string().max(40).optional() }).optional(),
      guarantees: z
        .strictObject({ refundOnFailure: z.boolean().optional(), maxDeliverySeconds: z.int().min(1).optional() })
        .optional(),
      limit: z.int().min(1).max(50).optional(),
    }),
    openWorld: true,
    run: async (args: Record<string, unknown>, { pa }) => {
      const found = await pa.engine.searchAgentServices(args);
      return ok({ ...found, ...(sandbox ? { sandbox: true } : {}) }, `${found.items.length} agent service(s) found.`);
    },
  });
}
