/** Every mirror tool, registered in the order tools/list shows them. */
import type { McpContext } from "../context.js";
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
  registerPaidFetchTool(tools, ctx);
  registerSearchPaidResourcesTool(tools, ctx);
}
