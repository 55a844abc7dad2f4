/**
 * The free tools that mirror what the server and the service know (quotes, executions,
 * spending, the marketplace, companies): each is registered into a map by its own module's
 * register…Tool, validated with its zod schema, and answers a refusal as a tool result.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import type { z } from "zod";
import { PaidActionError, type ServiceClient } from "../../engine/index.js";
import type { McpContext, McpPaidActions, RequestCtx } from "../context.js";
import { failure, jsonSchema } from "../results.js";

/** What a mirror tool's run gets besides its arguments: the started runtime and the request. */
export interface MirrorCall {
  pa: McpPaidActions;
  rctx: RequestCtx;
}

export interface MirrorTool {
  tool: Tool;
  schema: z.ZodType;
  run: (args: any, call: MirrorCall) => Promise<CallToolResult>;
}

/** The mirror tools by name, in the order tools/list shows them. */
export type MirrorTools = Map<string, MirrorTool>;

export interface MirrorToolSpec {
  name: string;
  title: string;
  description: string;
  schema: z.ZodType;
  run: MirrorTool["run"];
  /** Default true. */
  readOnly?: boolean;
  /** Whether it reaches beyond this server; default: when it is not read-only. */
  openWorld?: boolean;
}

export function addMirrorTool(tools: MirrorTools, ctx: McpContext, spec: MirrorToolSpec): void {
  const { name, title, description, schema, run, readOnly = true } = spec;
  // The JSON Schema is built on the first tools/list, not before the first answer.
  let tool: Tool | undefined;
  tools.set(name, {
    schema,
    run,
    get tool() {
      return (tool ??= {
        name,
        title,
        description: description + (ctx.sandbox ? " (sandbox)" : ""),
        inputSchema: jsonSchema(schema),
        annotations: {
          title,
          readOnlyHint: readOnly,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: spec.openWorld ?? !readOnly,
        },
      });
    },
  });
}

/**
 * Runs a mirror tool on the arguments of a tools/call, once the runtime has started; bad
 * arguments and failures are refusals.
 */
export async function callMirrorTool(
  ctx: McpContext,
  m: MirrorTool,
  args: unknown,
  rctx: RequestCtx,
): Promise<CallToolResult> {
  const name = m.tool.name;
  const parsed = m.schema.safeParse(args ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 10)
      .map((x) => ({ path: x.path.join(".") || "(arguments)", message: x.message.slice(0, 200) }));
    return failure(
      new PaidActionError(
        "invalid_input",
        `invalid arguments for ${name}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
        { issues },
      ),
      ctx.sandbox,
      ctx.scrub,
    );
  }
  try {
    return await m.run(parsed.data, { pa: await ctx.runtime(), rctx });
  } catch (e) {
    return failure(e, ctx.sandbox, ctx.scrub);
  }
}

/** The service client, or config_invalid when the configuration left the server without one. */
export function requireClient(pa: McpPaidActions): ServiceClient {
  if (!pa.client)
    throw new PaidActionError("config_invalid", "the configuration is invalid; see get_spending's configIssues", {});
  return pa.client;
}
