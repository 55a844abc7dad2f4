/**
 * The MCP surface, assembled: one tool per catalog action (paid-tools.ts), read-only mirror
 * tools (tools/), executions as resources (resources.ts) with their updates (updates.ts),
 * approvals (approvals.ts). It lives for the process; `factory` builds the SDK `Server`
 * that serves one connection, in either protocol era (the SDK's dual-era stdio entry calls
 * it once per connection, and once more for a client's discarded probe).
 *
 * Built on the SDK's low-level `Server` so that each paid tool publishes exactly the JSON
 * Schema the service gives, and every refusal — bad input included — is a tool result
 * with `isError: true` and its code in `structuredContent`.
 *
 * Nothing slow runs before the first answer: initialize / server/discover are answered by
 * the SDK, tools/list from the cached catalog; the runtime (sandbox, engine, reconciler,
 * resume) starts on the first request that is not the opening one, and never for a probe.
 */
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type McpServerFactory,
} from "@modelcontextprotocol/server";
import type { Catalog } from "./catalog.js";
import type { McpContext, McpHost, McpPaidActions } from "./context.js";
import type { Parts } from "./parts.js";
import { registerResources } from "./resources.js";

export type { McpHost, McpPaidActions } from "./context.js";
export { executionUri } from "./uris.js";

export interface McpSurfaceOptions {
  host: McpHost;
  version: string;
  log: (line: string) => void;
  now?: () => number;
  /** How long an approval question waits for the human on a 2025 connection (default 10 min). */
  approvalTimeoutMs?: number;
  /** Called once the runtime has started (for the serve command's log). */
  onStarted?: (pa: McpPaidActions) => void;
}

export interface McpSurface {
  /** Builds the server for one connection (the SDK's entries call it). */
  factory: McpServerFactory;
  /** The catalog as it stands. */
  readonly catalog: Catalog;
  /** Re-reads the catalog from the service; announces a changed tool list. */
  refreshCatalog(): Promise<void>;
  /** Starts the runtime now (what the first real request does); memoized. */
  start(): Promise<McpPaidActions>;
  close(): Promise<void>;
}

const INSTRUCTIONS =
  "Buy real-world actions (servers, companies, domains, storage, agent services) from a payment-gated service. " +
  "Each paid tool quotes, checks the human's limits, pays in USDC (x402 on Solana) and returns an execution id at once; " +
  "follow it with get_execution, wait_for_execution or the resource paid-actions://executions/{executionId}. " +
  "Use quote_action first to see a price without paying. Limits are set by the human and cannot be raised by the agent. " +
  "A payment above the human's approval threshold needs a person's approval: the host asks its user when it can (its own prompt, or a link to the paid-actions console); " +
  "otherwise the call is refused with an approvalId, a person approves it in the paid-actions console or terminal, and you call again with the same input and that approvalId. Only a person can approve.";

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

export function createMcpSurface(o: McpSurfaceOptions): McpSurface {
  const { host } = o;
  const sandbox = host.sandbox;
  const sandboxNote = sandbox
    ? " SANDBOX: this server runs against the embedded reference service; payments settle on an emulated Solana devnet ledger with demo USDC — no real money moves."
    : "";

  let closed = false;
  let started: McpPaidActions | undefined;
  let starting: Promise<McpPaidActions> | undefined;
  let loaded: Parts | undefined;
  let loading: Promise<Parts> | undefined;
  /** The working parts, loaded once (see parts.ts). */
  const parts = (): Promise<Parts> =>
    loaded
      ? Promise.resolve(loaded)
      : (loading ??= import("./parts.js").then((m) => {
          loaded = m.buildParts(ctx);
          return loaded;
        }));
  const runtime = (): Promise<McpPaidActions> => {
    if (started) return Promise.resolve(started);
    starting ??= Promise.all([host.start(), parts()]).then(
      ([pa, p]) => {
        started = pa;
        p.updates.attach(pa);
        p.toolList.started(pa);
        o.onStarted?.(pa);
        return pa;
      },
      (e: unknown) => {
        starting = undefined; // the next call tries again
        throw e;
      },
    );
    return starting;
  };
  const ctx: McpContext = {
    host,
    sandbox,
    sandboxNote,
    now: o.now ?? Date.now,
    log: o.log,
    runtime,
    scrub: (s) => (started ? started.transcripts.scrub(s) : s),
    isClosed: () => closed,
    approvalWaitMs: o.approvalTimeoutMs ?? 600_000,
  };
  /** Starts the runtime in the background (a request that needs it awaits it itself). */
  const kick = () =>
    void runtime().catch((e: unknown) => {
      if (!closed) o.log(`start-up failed; the next call tries again: ${ctx.scrub((e as Error).message)}`);
    });

  const factory: McpServerFactory = ({ era }) => {
    const server = new Server(
      { name: "paid-actions-mcp", version: o.version, title: sandbox ? "Paid actions (sandbox)" : "Paid actions" },
      {
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
        instructions: INSTRUCTIONS + sandboxNote,
        cacheHints: CACHE_HINTS,
        inputRequired: { roundTimeoutMs: ctx.approvalWaitMs },
        requestState: { verify: async (state, rctx) => (await parts()).paidCalls.verifyState(state, rctx) },
      },
    );
    // The parts load once this connection's first answer has gone out.
    setImmediate(
      () => void parts().catch((e: unknown) => o.log(`loading the MCP surface failed: ${(e as Error).message}`)),
    );
    // A 2025 client has finished its handshake: this is no probe, start what calls will need —
    // a moment later, so that the tools/list that usually follows is answered first.
    server.oninitialized = () => setTimeout(kick, START_AFTER_HANDSHAKE_MS).unref();

    server.setRequestHandler("tools/list", async () => {
      const tools = await (await parts()).toolList.list();
      setImmediate(kick); // after this answer has been written
      return { tools };
    });

    server.setRequestHandler("tools/call", async (request, rctx) => {
      kick();
      const { toolList, paidCalls, callMirrorTool, refuseDroppedKeys } = await parts();
      const name = request.params.name;
      if (toolList.catalog.source === "none" && !toolList.mirror(name)) await toolList.load();
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

    // Resource updates: on a 2025 connection for the URIs its client subscribed to; on a
    // 2026 one for every changed URI, which the SDK routes to the client's listen streams.
    const subscriptions = new Set<string>();
    registerResources(server, ctx, subscriptions);
    let connected = true;
    let off = () => {};
    void parts()
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
    return server;
  };

  return {
    factory,
    get catalog() {
      return loaded?.toolList.catalog ?? { entries: [], source: "none" };
    },
    refreshCatalog: async () => (await parts()).toolList.refresh(),
    start: runtime,
    async close() {
      closed = true;
      loaded?.toolList.close();
      loaded?.updates.close();
    },
  };
}
