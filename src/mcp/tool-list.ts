/**
 * The tool list, for the whole process: the paid tools of the service's catalog (sorted by
 * name), then the paid tools beyond it (paid_fetch), then the mirror tools (in a fixed
 * order), so the same catalog always lists the same way. The first tools/list is answered from a cached catalog (the snapshot, in
 * sandbox mode the sandbox's own, the journal's) without waiting for the service; the
 * service's copy replaces it in the background once the runtime is up, and every connection
 * is told when the list changed.
 */
import type { Tool } from "@modelcontextprotocol/server";
import { cachedCatalog, catalogFromRows, loadCatalog, type Catalog } from "./catalog.js";
import type { McpContext, McpPaidActions } from "./context.js";
import { buildPaidTools, type PaidTool } from "./paid-tools.js";
import type { MirrorTool, MirrorTools } from "./tools/index.js";

export interface ToolList {
  /** The catalog as it stands (source "none" until loaded). */
  readonly catalog: Catalog;
  /** The tools, loading the catalog first when nothing is loaded yet. */
  list(): Promise<Tool[]>;
  /** A paid tool: a catalog action's, or one beyond the catalog (paid_fetch). */
  paid(name: string): PaidTool | undefined;
  mirror(name: string): MirrorTool | undefined;
  /** Loads the catalog (cache first, else the service); once. */
  load(): Promise<void>;
  /** Re-reads the catalog from the service; tells the listeners when the tools changed. */
  refresh(): Promise<void>;
  /** The runtime is up: the engine checks limits against the catalog, and a cached one is revalidated. */
  started(pa: McpPaidActions): void;
  /** Called whenever the tool list changed; returns the function that removes the listener. */
  onChange(listener: () => void): () => void;
  /**
   * Stops the retries and the listeners; resolves once a load or refresh in flight has ended
   * (it finishes quietly: nothing is logged for work the close cut short).
   */
  close(): Promise<void>;
}

const RETRY_MS = 15_000;

/** What the tool list keeps between calls; the functions below take it explicitly. */
interface ListState {
  ctx: McpContext;
  /** The paid tools that are not catalog actions (paid_fetch). */
  fixed: Map<string, PaidTool>;
  mirror: MirrorTools;
  catalog: Catalog;
  paidTools: Map<string, PaidTool>;
  /** The runtime, once started. */
  pa?: McpPaidActions;
  listeners: Set<() => void>;
  retryTimer?: NodeJS.Timeout;
  loading?: Promise<void>;
  refreshing?: Promise<void>;
}

const toolsOf = (s: ListState, map: Map<string, PaidTool>) => [
  ...[...map.values()].map((t) => t.tool),
  ...[...s.fixed.values()].map((t) => t.tool),
  ...[...s.mirror.values()].map((m) => m.tool),
];

/** Makes `next` the catalog; true when the tools changed. */
function use(s: ListState, next: Catalog): boolean {
  const before = JSON.stringify(toolsOf(s, s.paidTools));
  s.catalog = next;
  s.paidTools = buildPaidTools(s.ctx, next.entries, (name) => s.mirror.has(name) || s.fixed.has(name));
  s.pa?.engine.useCatalog(next.entries.map((e) => e.name));
  return JSON.stringify(toolsOf(s, s.paidTools)) !== before;
}

/**
 * The catalog at hand without asking the service: the snapshot file, else (sandbox mode) the
 * embedded service's own catalog, else the journal's cached copy. Each is a cached catalog,
 * revalidated against the service once the runtime is up.
 */
async function catalogAtHand(ctx: McpContext): Promise<Catalog> {
  const { host } = ctx;
  const snapshot = host.catalogSnapshot();
  if (snapshot) return catalogFromRows(snapshot);
  const own = await host.builtInCatalog?.().catch((e: unknown) => {
    ctx.log(`catalog: the sandbox's own catalog could not be read (${ctx.scrub((e as Error).message)})`);
    return undefined;
  });
  const builtIn = catalogFromRows(own ?? []);
  if (builtIn.entries.length > 0) return builtIn;
  return cachedCatalog(await host.journal(), host.service);
}

function load(s: ListState): Promise<void> {
  const { ctx } = s;
  s.loading ??= (async () => {
    const cached = await catalogAtHand(ctx);
    if (cached.entries.length > 0) {
      use(s, cached);
      return;
    }
    // Nothing cached (a first start): the service's catalog is needed now.
    const started = await ctx.runtime();
    await fetchInto(s, started);
  })().catch((e: unknown) => {
    s.loading = undefined;
    if (!ctx.isClosed()) ctx.log(`catalog: could not be loaded (${ctx.scrub((e as Error).message)})`);
  });
  return s.loading;
}

/** Reads the service's catalog (the cache when it does not answer); true when the tools changed. */
async function fetchInto(s: ListState, p: McpPaidActions): Promise<boolean> {
  const { host, log, now } = s.ctx;
  const fresh = await loadCatalog(p.engine, p.journal, host.service, now());
  // The server closed meanwhile: what was read is of no use to anyone.
  if (s.ctx.isClosed()) return false;
  if (fresh.source === "service")
    host.saveCatalogSnapshot(
      fresh.entries.map((e) => ({ name: e.name, detail: e.detail })),
      fresh.fetchedAt ?? now(),
    );
  if (fresh.problem)
    log(
      `catalog: the service did not answer (${s.ctx.scrub(fresh.problem)}); using ${fresh.source === "cache" ? "the cached catalog" : "no paid tools yet"}`,
    );
  if (fresh.source === "none" && s.catalog.source !== "none") return false;
  if (fresh.source === "cache" && s.catalog.source === "cache") return false;
  const changed = use(s, fresh);
  if (fresh.source !== "service") scheduleRetry(s);
  return changed;
}

function refresh(s: ListState): Promise<void> {
  const { ctx } = s;
  s.refreshing ??= (async () => {
    if (ctx.isClosed()) return;
    const p = await ctx.runtime();
    if (ctx.isClosed()) return;
    if (await fetchInto(s, p)) for (const l of s.listeners) l();
  })()
    .catch((e: unknown) => {
      // After close, a failure is the close's doing (the journal or the service went away).
      if (!ctx.isClosed()) ctx.log(`catalog: refresh failed (${ctx.scrub((e as Error).message)})`);
    })
    .finally(() => {
      s.refreshing = undefined;
    });
  return s.refreshing;
}

/** Until the service's catalog is in, asks again every RETRY_MS. */
function scheduleRetry(s: ListState): void {
  if (s.retryTimer || s.ctx.isClosed()) return;
  s.retryTimer = setInterval(() => {
    if (s.catalog.source === "service" || s.ctx.isClosed()) {
      clearInterval(s.retryTimer);
      s.retryTimer = undefined;
      return;
    }
    void refresh(s);
  }, RETRY_MS);
  s.retryTimer.unref();
}

export function createToolList(ctx: McpContext, fixed: Map<string, PaidTool>, mirror: MirrorTools): ToolList {
  const s: ListState = {
    ctx,
    fixed,
    mirror,
    catalog: { entries: [], source: "none" },
    paidTools: new Map<string, PaidTool>(),
    listeners: new Set<() => void>(),
  };
  return {
    get catalog() {
      return s.catalog;
    },
    async list() {
      if (s.catalog.source === "none") await load(s);
      return toolsOf(s, s.paidTools);
    },
    paid: (name) => s.paidTools.get(name) ?? fixed.get(name),
    mirror: (name) => mirror.get(name),
    load: () => load(s),
    refresh: () => refresh(s),
    started(p) {
      s.pa = p;
      p.engine.useCatalog(s.catalog.entries.map((e) => e.name));
      // A cached catalog is revalidated against the service, in the background.
      if (s.catalog.source === "cache") setImmediate(() => void refresh(s));
    },
    onChange(listener) {
      s.listeners.add(listener);
      return () => s.listeners.delete(listener);
    },
    async close() {
      if (s.retryTimer) clearInterval(s.retryTimer);
      s.retryTimer = undefined;
      s.listeners.clear();
      await Promise.all([s.loading, s.refreshing]);
    },
  };
}
