/**
 * The MCP surface, assembled: one tool per catalog action (paid-tools.ts), read-only mirror
 * tools (tools/), executions as resources with subscriptions (resources.ts, updates.ts),
 * approvals by elicitation (approvals.ts), and task-augmented paid calls.
 *
 * Built on the SDK's low-level `Server` so that each paid tool publishes exactly the JSON
 * Schema the service gives, and every refusal — bad input included — is a tool result
 * with `isError: true` and its code in `structuredContent`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { cachedCatalog, loadCatalog, type Catalog } from "./catalog.js";
import type { McpContext, McpPaidActions } from "./context.js";
import { buildPaidTools, cancellableTaskStore, createPaidCalls } from "./paid-tools.js";
import { registerResources } from "./resources.js";
import { callMirrorTool, registerMirrorTools, type MirrorTools } from "./tools/index.js";
import { createUpdates } from "./updates.js";

export type { McpPaidActions } from "./context.js";
export { executionUri } from "./results.js";

export interface McpServerOptions {
  pa: McpPaidActions;
  version: string;
  log: (line: string) => void;
  now?: () => number;
  /** How long an approval question waits for the human (default 120 s). */
  approvalTimeoutMs?: number;
}

/**
 * tools/call as the protocol layer parses it: loosely. The SDK's Server checks every
 * tools/call against CallToolRequestSchema before the handler runs and answers a malformed
 * one (arguments that are not an object, a name that is not a string) with InvalidParams;
 * registered with the strict schema, the protocol layer's own parse would throw first and
 * the client would get InternalError, as if the server had failed.
 */
const ToolsCallRequest = z.object({ method: z.literal("tools/call"), params: z.looseObject({}) });

export interface PaidActionsMcp {
  server: Server;
  catalog: Catalog;
  /** Re-reads the catalog from the service; announces a changed tool list. */
  refreshCatalog(): Promise<void>;
  close(): Promise<void>;
}

export async function createMcpServer(o: McpServerOptions): Promise<PaidActionsMcp> {
  const { pa } = o;
  const now = o.now ?? Date.now;
  const engine = pa.engine;
  const sandbox = pa.config?.mode === "sandbox";
  const sandboxNote = sandbox
    ? " SANDBOX: this server runs against the embedded reference service; payments settle on an emulated Solana devnet ledger with demo USDC — no real money moves."
    : "";

  // A cached catalog answers tools/list at once; the service's copy replaces it in the
  // background (tools/list_changed when it differs). Without a cache, fetch it now.
  const cached = cachedCatalog(pa.journal, engine.service);
  let catalog = cached.entries.length > 0 ? cached : await loadCatalog(pa.client, pa.journal, engine.service, now());
  if (catalog.problem) o.log(`catalog: the service did not answer (${catalog.problem}); using ${catalog.source === "cache" ? "the cached catalog" : "no paid tools yet"}`);

  const tasks = cancellableTaskStore();
  const server = new Server(
    { name: "paid-actions-mcp", version: o.version, title: sandbox ? "Paid actions (sandbox)" : "Paid actions" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      taskStore: tasks.store,
      instructions:
        "Buy real-world actions (servers, companies, domains, storage, agent services) from a payment-gated service. " +
        "Each paid tool quotes, checks the human's limits, pays in USDC (x402 on Solana) and returns an execution id at once; " +
        "follow it with get_execution, wait_for_execution or the resource paid-actions://executions/{executionId}. " +
        "Use quote_action first to see a price without paying. Limits are set by the human and cannot be raised by the agent." +
        sandboxNote,
    },
  );

  let closed = false;
  const ctx: McpContext = {
    server,
    pa,
    engine,
    sandbox,
    sandboxNote,
    now,
    log: o.log,
    scrub: (s) => pa.transcripts.scrub(s),
    isClosed: () => closed,
  };
  const updates = createUpdates(ctx);

  // ---- Tools: the mirror tools first, so that no catalog action can take their names ----

  const mirror: MirrorTools = new Map();
  registerMirrorTools(mirror, ctx, updates);
  const paidCalls = createPaidCalls(ctx, { nextUpdate: updates.nextUpdate, taskCancels: tasks.cancels, approvalTimeoutMs: o.approvalTimeoutMs ?? 120_000 });
  const paidToolsFor = (c: Catalog) => buildPaidTools(ctx, c.entries, (name) => mirror.has(name));
  let paidTools = paidToolsFor(catalog);
  engine.useCatalog(catalog.entries.map((e) => e.name));

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    if (revalidate) setImmediate(() => revalidate?.());
    return { tools: [...[...paidTools.values()].map((t) => t.tool), ...[...mirror.values()].map((m) => m.tool)] };
  });

  server.setRequestHandler(ToolsCallRequest, async (loose, extra) => {
    // The SDK's Server has validated it against CallToolRequestSchema before this runs.
    const request = loose as unknown as CallToolRequest;
    const name = request.params.name;
    const paid = paidTools.get(name);
    if (paid) {
      if (request.params.task) return paidCalls.startTask(paid, request.params.arguments, request.params.task.ttl, extra);
      return paidCalls.call(paid, request.params.arguments, extra);
    }
    const m = mirror.get(name);
    if (!m) {
      if (catalog.source === "none" && pa.client) void refreshCatalog();
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name.slice(0, 80)}`);
    }
    return callMirrorTool(ctx, m, request.params.arguments, extra);
  });

  registerResources(ctx, updates.subscriptions);

  // ---- Catalog refresh -----------------------------------------------------------------

  let refreshing: Promise<void> | undefined;
  function refreshCatalog(): Promise<void> {
    refreshing ??= (async () => {
      const fresh = await loadCatalog(pa.client, pa.journal, engine.service, now());
      if (fresh.source !== "service") return;
      const before = JSON.stringify([...paidTools.values()].map((t) => t.tool));
      catalog = fresh;
      paidTools = paidToolsFor(fresh);
      engine.useCatalog(fresh.entries.map((e) => e.name));
      if (JSON.stringify([...paidTools.values()].map((t) => t.tool)) !== before) await server.sendToolListChanged().catch(() => undefined);
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  }
  // Revalidate a cached catalog once the host has its tool list (or after 2 s at most).
  let revalidate: (() => void) | undefined;
  if (catalog.source === "cache" && pa.client) {
    const timer = setTimeout(() => revalidate?.(), 2_000);
    timer.unref();
    revalidate = () => {
      revalidate = undefined;
      clearTimeout(timer);
      setImmediate(() => void refreshCatalog().catch(() => undefined));
    };
  }
  let retryTimer: NodeJS.Timeout | undefined;
  if (catalog.source !== "service" && pa.client) {
    retryTimer = setInterval(() => {
      if (catalog.source === "service") {
        clearInterval(retryTimer);
        return;
      }
      void refreshCatalog();
    }, 15_000);
    retryTimer.unref();
  }

  return {
    server,
    get catalog() {
      return catalog;
    },
    refreshCatalog,
    async close() {
      closed = true;
      if (retryTimer) clearInterval(retryTimer);
      updates.close();
      tasks.store.cleanup();
      await server.close().catch(() => undefined);
    },
  };
}
