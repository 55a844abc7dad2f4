/** get_company: the record of a company formed with companies_create, from the service. */
import { z } from "zod";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

export function registerGetCompanyTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox } = ctx;
  addMirrorTool(tools, ctx, {
    name: "get_company",
    title: "Get a company",
    description:
      "The company record (formation status, provider references, documents) of a company formed with companies_create.",
    schema: z.strictObject({
      companyId: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[A-Za-z0-9_-]+$/),
    }),
    // Asks the service each time: open-world, though it changes nothing.
    openWorld: true,
    run: async (args: { companyId: string }, { pa }) => {
      const company = await pa.engine.company(args.companyId);
      return ok(
        { ...company, ...(sandbox ? { sandbox: true } : {}) },
        `Company ${company.name} is ${company.formationStatus}.`,
      );
    },
  });
}
