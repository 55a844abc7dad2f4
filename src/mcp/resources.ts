/**
 * Resources: the recent executions, spending and limits, each execution, each tool call's
 * transcript; templates for the last two; subscriptions to executions and spending (the
 * notifications themselves are sent by updates.ts).
 */
import {
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { McpContext } from "./context.js";
import { executionUri } from "./results.js";

const SUBSCRIBABLE = /^paid-actions:\/\/(executions(\/[A-Za-z0-9_-]{1,128})?|spending)$/;

const json = (uri: string, value: unknown) => ({ contents: [{ uri, mimeType: "application/json", text: JSON.stringify(value, null, 2) }] });

/** Registers the resource handlers; `subscriptions` is where subscribed URIs are kept. */
export function registerResources(ctx: McpContext, subscriptions: Set<string>): void {
  const { server, engine, pa, sandbox } = ctx;

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const recent = engine.listExecutions({ limit: 50 });
    return {
      resources: [
        { uri: "paid-actions://executions", name: "executions", title: "Recent executions", mimeType: "application/json", description: "The 50 most recent executions this server paid for." },
        { uri: "paid-actions://spending", name: "spending", title: "Spending and limits", mimeType: "application/json" },
        ...recent.items
          .filter((i) => i.executionId)
          .map((i) => ({ uri: executionUri(i.executionId!), name: i.executionId!, title: `${i.action} — ${i.status}`, mimeType: "application/json" })),
        ...pa.transcripts.list(20).map((t) => ({ uri: `paid-actions://transcripts/${t.callId}`, name: t.callId, title: `Transcript ${t.callId}`, mimeType: "application/json" })),
      ],
    };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: "paid-actions://executions/{executionId}", name: "execution", title: "An execution", mimeType: "application/json", description: "Status, output and refund of one execution; subscribe for updates." },
      { uriTemplate: "paid-actions://transcripts/{callId}", name: "transcript", title: "A tool call's transcript", mimeType: "application/json", description: "The redacted record of each step of one tool call." },
    ],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri === "paid-actions://executions") return json(uri, { ...engine.listExecutions({ limit: 50 }), ...(sandbox ? { sandbox: true } : {}) });
    if (uri === "paid-actions://spending") return json(uri, { ...engine.spending(), ...(sandbox ? { sandbox: true } : {}) });
    let m = /^paid-actions:\/\/executions\/([A-Za-z0-9_-]{1,128})$/.exec(uri);
    if (m) {
      const view = await engine.getExecution(m[1]!, true);
      if (!view) throw new McpError(ErrorCode.InvalidParams, `no execution ${m[1]} in this server's journal`);
      return json(uri, { ...view, ...(sandbox ? { sandbox: true } : {}) });
    }
    m = /^paid-actions:\/\/transcripts\/(call_[A-Za-z0-9]{1,40})$/.exec(uri);
    if (m) {
      const entries = pa.transcripts.read(m[1]!);
      if (!entries) throw new McpError(ErrorCode.InvalidParams, `no transcript ${m[1]}`);
      return json(uri, { callId: m[1], path: pa.transcripts.pathOf(m[1]!), entries });
    }
    throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri.slice(0, 200)}`);
  });

  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    if (!SUBSCRIBABLE.test(request.params.uri)) throw new McpError(ErrorCode.InvalidParams, `cannot subscribe to ${request.params.uri.slice(0, 200)}`);
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });
}
