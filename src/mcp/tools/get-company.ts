/** get_company: the record of a company formed with companies_create, from the service. */
import { z } from "zod";
import { PaidActionError, serviceApi } from "../../engine/index.js";
import type { McpContext } from "../context.js";
import { ok } from "../results.js";
import { addMirrorTool, requireClient, type MirrorTools } from "./mirror.js";

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
    run: async (args: { companyId: string }, { pa }) => {
      const client = requireClient(pa);
      const res = await serviceApi(client).getCompany(args.companyId);
      if (!res.ok) {
        throw new PaidActionError(
          res.status === 404 ? "not_found" : "service_error",
          `company ${args.companyId}: HTTP ${res.status} ${res.error.code}: ${res.error.message}`,
        );
      }
      return ok(
        { ...res.body, ...(sandbox ? { sandbox: true } : {}) },
        `Company ${res.body.name} is ${res.body.formationStatus}.`,
      );
    },
  });
}
