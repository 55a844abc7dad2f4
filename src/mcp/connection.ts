/**
 * The SDK `Server` for one connection, in either protocol era: its capabilities and
 * instructions, the tools/list and tools/call handlers over the surface's working parts,
 * the resources, and the changes it forwards to its client (resource updates, a changed
 * tool list) until it closes. The surface that lives for the process is server.ts.
 */
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ProtocolEra,
} from "@modelcontextprotocol/server";
import type { McpContext } from "./context.js";
import type { Parts } from "./parts.js";
import { registerResources } from "./resources.js";

/** What every connection's server is handed by the surface that lives for the process. */
export interface Connections {
  ctx: McpContext;
  version: string;
  log: (line: string) => void;
  /** The working parts, loaded once (see parts.ts). */
  parts(): Promise<Parts>;
  /** Starts the runtime in the background (a request that needs it awaits it itself). */
  kick(): void;
}

const INSTRUCTIONS =
  "Buy real-world actions (servers, companies, domains, storage, agent services) from a payment-gated service. " +
  "Each paid tool quotes, checks the human's limits, pays in USDC (x402 on Solana) and returns an execution id at once; " +
  "follow it with get_execution, wait_for_execution or the resource paid-actions://executions/{executionId}. " +
  "Use quote_action first to see a price without paying. Limits are set by the human and cannot be raised by the agent. " +
  "A payment above the human's approval threshold needs a person's approval: the host asks its user when it can (its own prompt, or a link to the paid-actions console), and a host that cannot ask may have the payment's page opened on the person's desktop while the call waits; " +
  "otherwise, or when no decision has come within about 45 s, the call is refused with an approvalId: a person decides in the paid-actions console or terminal, and you call again with the same input and that approvalId once they have. Only a person can approve.";

/** How long after a 2025 handshake the runtime starts, when no request has started it sooner. */
const START_AFTER_HANDSHAKE_MS = 100;

/** Cache hints for 2026-07-28 clients (2025 responses never carry them). */
const CACHE_HINTS = {
  "server/discover": { ttlMs: 3_600_000, cacheScope: "private" },
  // Private: the descriptions carry this human's limits. Changes are announced (list_changed).
  "tools/list": { ttlMs: 300_000, cacheScope: "private" },
  "resources/templates/list": { ttlMs: 3_600_000, cacheScope: "public" },
  "resources/list": { ttlMs: 0, cacheScope: "private" },
  "resources/read": { ttlMs: 0, cacheScope: "private" },
} as const;

/** The server for one connection (what the surface's `factory` returns). */
export function connectionServer(c: Connections, era: ProtocolEra): Server {
  const { ctx, parts } = c;
  const server = new Server(
    {
      name: "paid-actions-mcp",
      version: c.version,
      title: ctx.sandbox ? "Paid actions (sandbox)" : "Paid actions",
    },
    {
      capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
      instructions: INSTRUCTIONS + ctx.sandboxNote,
      cacheHints: CACHE_HINTS,
      // A 2025 connection is asked by elicitation from the handler itself (legacy-approvals.ts):
      // the SDK's shim would answer a failed question without the refusal's structured shape.
      inputRequired: { legacyShim: false },
      requestState: { verify: async (state, rctx) => (await parts()).paidCalls.verifyState(state, rctx) },
    },
  );
  // The parts load once this connection's first answer has gone out.
  setImmediate(
    () => void parts().catch((e: unknown) => c.log(`loading the MCP surface failed: ${(e as Error).message}`)),
  );
  // A 2025 client has finished its handshake: this is no probe, start what calls will need —
  // a moment later, so that the tools/list that usually follows is answered first.
  server.oninitialized = () => setTimeout(c.kick, START_AFTER_HANDSHAKE_MS).unref();
  handleTools(c, server, era);
  forwardChanges(c, server, era);
  return server;
}

/** tools/list and tools/call: the paid tools (the catalog's actions and paid_fetch), then the mirror tools. */
function handleTools(c: Connections, server: Server, era: ProtocolEra): void {
  const { ctx, parts, kick } = c;
  server.setRequestHandler("tools/list", async () => {
    const tools = await (await parts()).toolList.list();
    setImmediate(kick); // after this answer has been written
    return { tools };
  });

  server.setRequestHandler("tools/call", async (request, rctx) => {
    kick();
    const { toolList, paidCalls, callMirrorTool, refuseDroppedKeys } = await parts();
    const name = request.params.name;
    // A tool beyond the catalog (paid_fetch, the mirror tools) does not wait for the catalog.
    if (toolList.catalog.source === "none" && !toolList.paid(name) && !toolList.mirror(name)) await toolList.load();
    const paid = toolList.paid(name);
    const dropped = paid || toolList.mirror(name) ? refuseDroppedKeys(rctx) : undefined;
    if (dropped) return server.projectCallToolResult(dropped, (paid ?? toolList.mirror(name))?.tool.outputSchema);
    if (paid) {
      const result = await paidCalls.call(paid, request.params.arguments, rctx, { server, era });
      return isInputRequiredResult(result) ? result : server.projectCallToolResult(result, paid.tool.outputSchema);
    }
    const m = toolList.mirror(name);
    if (!m) {
      if (toolList.catalog.source !== "service") void toolList.refresh();
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool ${name.slice(0, 80)}`);
    }
    return server.projectCallToolResult(
      await callMirrorTool(ctx, m, request.params.arguments, rctx),
      m.tool.outputSchema,
    );
  });
}

/**
 * The resources, and the changes this connection's client hears of until it closes: resource
 * updates — on a 2025 connection for the URIs its client subscribed to; on a 2026 one for
 * every changed URI, which the SDK routes to the client's listen streams — and a changed tool list.
 */
function forwardChanges(c: Connections, server: Server, era: ProtocolEra): void {
  const subscriptions = new Set<string>();
  registerResources(server, c.ctx, subscriptions);
  let connected = true;
  let off = () => {};
  void c
    .parts()
    .then((p) => {
      if (!connected) return;
      const offUpdates = p.updates.onChange((uris) => {
        for (const uri of uris) {
          if (era === "modern" || subscriptions.has(uri))
            void server.sendResourceUpdated({ uri }).catch(() => undefined);
        }
      });
      const offTools = p.toolList.onChange(() => void server.sendToolListChanged().catch(() => undefined));
      off = () => {
        offUpdates();
        offTools();
      };
    })
    .catch(() => undefined);
  server.onclose = () => {
    connected = false;
    off();
  };
}
