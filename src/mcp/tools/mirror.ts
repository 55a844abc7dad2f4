/**
 * The free tools that mirror what the server and the service know (quotes, executions,
 * spending, the marketplace, companies): each is registered into a map by its own module's
 * register…Tool, validated with its zod schema, and answers a refusal as a tool result.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import type { z } from "zod";
import { paidError } from "../../engine/index.js";
import type { McpContext, McpPaidActions, RequestCtx } from "../context.js";
import { failure, jsonSchema } from "../results.js";

/** What a mirror tool's run gets besides its arguments: the started runtime and the request. */
export interface MirrorCall {
  pa: McpPaidActions;
  rctx: RequestCtx;
}

/** The arguments of a tools/call checked against a tool's schema: its run on them, or why they do not fit. */
export type MirrorArgs =
  { ok: true; run: (call: MirrorCall) => Promise<CallToolResult> } | { ok: false; issues: z.core.$ZodIssue[] };

export interface MirrorTool {
  tool: Tool;
  /** Checks the arguments against the tool's schema (nothing runs yet). */
  accept(args: unknown): MirrorArgs;
}

/** The mirror tools by name, in the order tools/list shows them. */
export type MirrorTools = Map<string, MirrorTool>;

export interface MirrorToolSpec<S extends z.ZodType> {
  name: string;
  title: string;
  description: string;
  schema: S;
  /** Runs on the arguments as the schema parsed them. */
  run: (args: z.output<S>, call: MirrorCall) => Promise<CallToolResult>;
  /** Default true. */
  readOnly?: boolean;
  /**
   * MCP's openWorldHint, said by every tool (no default could be right for all): true when
   * it asks the service or the network — read-only or not — false when this server's own
   * journal answers it.
   */
  openWorld: boolean;
  /** Whether calling it twice does what calling it once does; default true. */
  idempotent?: boolean;
}

export function addMirrorTool<S extends z.ZodType>(tools: MirrorTools, ctx: McpContext, spec: MirrorToolSpec<S>): void {
  const { name, title, description, schema, run, readOnly = true } = spec;
  // The JSON Schema is built on the first tools/list, not before the first answer.
  let tool: Tool | undefined;
  tools.set(name, {
    accept(args) {
      const parsed = schema.safeParse(args);
      return parsed.success
        ? { ok: true, run: (call) => run(parsed.data, call) }
        : { ok: false, issues: parsed.error.issues };
    },
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
          idempotentHint: spec.idempotent ?? true,
          openWorldHint: spec.openWorld,
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
  const parsed = m.accept(args ?? {});
  if (!parsed.ok) {
    const issues = parsed.issues
      .slice(0, 10)
      .map((x) => ({ path: x.path.join(".") || "(arguments)", message: x.message.slice(0, 200) }));
    return failure(paidError("invalid_input", { problem: "arguments", tool: name, issues }), ctx.sandbox, ctx.scrub);
  }
  try {
    return await parsed.run({ pa: await ctx.runtime(), rctx });
  } catch (e) {
    return failure(e, ctx.sandbox, ctx.scrub);
  }
}
