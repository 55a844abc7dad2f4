/**
 * The tools that are not catalog actions, registered in the order tools/list shows them: the
 * paid ones (paid_fetch, registered like every paid tool: paid-tools.ts) and the free mirror
 * tools.
 */
import type { McpContext } from "../context.js";
import type { PaidTool } from "../paid-tools.js";
import type { Updates } from "../updates.js";
import { registerGetCompanyTool } from "./get-company.js";
import { registerGetExecutionTool } from "./get-execution.js";
import { registerGetSpendingTool } from "./get-spending.js";
import { registerListExecutionsTool } from "./list-executions.js";
import type { MirrorTools } from "./mirror.js";
import { registerPaidFetchTool } from "./paid-fetch.js";
import { registerSearchPaidResourcesTool } from "./search-paid-resources.js";
import { registerQuoteActionTool } from "./quote-action.js";
import { registerSearchAgentServicesTool } from "./search-agent-services.js";
import { registerWaitForExecutionTool } from "./wait-for-execution.js";

export { callMirrorTool, type MirrorTool, type MirrorTools } from "./mirror.js";

export function registerMirrorTools(tools: MirrorTools, ctx: McpContext, updates: Updates): void {
  registerQuoteActionTool(tools, ctx);
  registerGetExecutionTool(tools, ctx);
  registerListExecutionsTool(tools, ctx);
  registerWaitForExecutionTool(tools, ctx, updates.waitFor);
  registerGetSpendingTool(tools, ctx);
  registerSearchAgentServicesTool(tools, ctx);
  registerGetCompanyTool(tools, ctx);
  registerSearchPaidResourcesTool(tools, ctx);
}

/** The paid tools beyond the catalog's actions, by name. */
export function registerPaidTools(paid: Map<string, PaidTool>, ctx: McpContext): void {
  registerPaidFetchTool(paid, ctx);
}
