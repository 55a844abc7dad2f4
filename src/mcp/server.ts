/**
 * The MCP surface, assembled: one tool per catalog action (paid-tools.ts), read-only mirror
 * tools (tools/), executions as resources (resources.ts) with their updates (updates.ts),
 * approvals (approvals.ts). It lives for the process; `factory` builds the SDK `Server`
 * that serves one connection (connection.ts), in either protocol era (the SDK's dual-era
 * stdio entry calls it once per connection, and once more for a client's discarded probe).
 *
 * Built on the SDK's low-level `Server` so that each paid tool publishes exactly the JSON
 * Schema the service gives, and every refusal — bad input included — is a tool result
 * with `isError: true` and its code in `structuredContent`.
 *
 * Nothing slow runs before the first answer: initialize / server/discover are answered by
 * the SDK, tools/list from the cached catalog; the runtime (sandbox, engine, reconciler,
 * resume) starts on the first request that is not the opening one, and never for a probe.
 */
import { setTimeout as delay } from "node:timers/promises";
import type { McpServerFactory } from "@modelcontextprotocol/server";
import type { Catalog } from "./catalog.js";
import { connectionServer, type Connections } from "./connection.js";
import type { McpContext, McpHost, McpPaidActions } from "./context.js";
import type { Parts } from "./parts.js";
import { createApprovalWaits, DEFAULT_APPROVAL_WAIT_MS } from "./waits.js";

export type { McpHost, McpPaidActions } from "./context.js";
export { executionUri } from "./uris.js";

export interface McpSurfaceOptions {
  host: McpHost;
  version: string;
  log: (line: string) => void;
  now?: () => number;
  /**
   * How long a tool call waits for a person — the host's question, then the console's page —
   * before it answers approval_required with the approvalId (default 45 s: inside the 60 s a
   * client SDK waits by default).
   */
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

/**
 * How long close() waits for background work in flight: well inside the 2 s the SDKs' stdio
 * clients give a server between closing its stdin and sending SIGTERM.
 */
const CLOSE_GRACE_MS = 1_000;

/** What the surface holds for the process: the working parts and the runtime, each made once. */
interface Lifetime {
  closed: boolean;
  started?: McpPaidActions;
  starting?: Promise<McpPaidActions>;
  loaded?: Parts;
  loading?: Promise<Parts>;
}

/** The working parts, loaded once (see parts.ts). */
function loadParts(life: Lifetime, ctx: McpContext): Promise<Parts> {
  return life.loaded
    ? Promise.resolve(life.loaded)
    : (life.loading ??= import("./parts.js").then((m) => {
        life.loaded = m.buildParts(ctx);
        return life.loaded;
      }));
}

/** The runtime, started once and handed to the parts; a failed start is tried again by the next call. */
function startRuntime(life: Lifetime, o: McpSurfaceOptions, parts: () => Promise<Parts>): Promise<McpPaidActions> {
  if (life.started) return Promise.resolve(life.started);
  life.starting ??= Promise.all([o.host.start(), parts()]).then(
    ([pa, p]) => {
      life.started = pa;
      p.updates.attach(pa);
      p.toolList.started(pa);
      o.onStarted?.(pa);
      return pa;
    },
    (e: unknown) => {
      life.starting = undefined; // the next call tries again
      throw e;
    },
  );
  return life.starting;
}

/** What each part of the surface is handed (context.ts). */
function surfaceContext(o: McpSurfaceOptions, life: Lifetime, runtime: () => Promise<McpPaidActions>): McpContext {
  const { host } = o;
  const sandbox = host.sandbox;
  const sandboxNote = sandbox
    ? " SANDBOX: this server runs against the embedded reference service; payments settle on an emulated Solana devnet ledger with demo USDC — no real money moves."
    : "";
  return {
    host,
    sandbox,
    sandboxNote,
    now: o.now ?? Date.now,
    log: o.log,
    runtime,
    scrub: (s) => (life.started ? life.started.transcripts.scrub(s) : s),
    isClosed: () => life.closed,
    approvalWaitMs: o.approvalTimeoutMs ?? DEFAULT_APPROVAL_WAIT_MS,
    waits: host.approvalWaits ?? createApprovalWaits(),
  };
}

export function createMcpSurface(o: McpSurfaceOptions): McpSurface {
  const life: Lifetime = { closed: false };
  const parts = (): Promise<Parts> => loadParts(life, ctx);
  const runtime = (): Promise<McpPaidActions> => startRuntime(life, o, parts);
  const ctx = surfaceContext(o, life, runtime);
  const connections: Connections = {
    ctx,
    version: o.version,
    log: o.log,
    parts,
    /** Starts the runtime in the background (a request that needs it awaits it itself). */
    kick: () =>
      void runtime().catch((e: unknown) => {
        if (!life.closed) o.log(`start-up failed; the next call tries again: ${ctx.scrub((e as Error).message)}`);
      }),
  };

  return {
    factory: ({ era }) => connectionServer(connections, era),
    get catalog() {
      return life.loaded?.toolList.catalog ?? { entries: [], source: "none" };
    },
    refreshCatalog: async () => (await parts()).toolList.refresh(),
    start: runtime,
    async close() {
      life.closed = true;
      life.loaded?.updates.close();
      // A catalog refresh in flight finishes while the journal is still open, unless it is
      // slow (a remote service): then it is left to fail quietly once the journal closes.
      const refreshing = life.loaded?.toolList.close();
      if (refreshing) await Promise.race([refreshing, delay(CLOSE_GRACE_MS, undefined, { ref: false })]);
    },
  };
}
