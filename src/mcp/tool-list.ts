/**
 * The tool list, for the whole process: the paid tools of the service's catalog (sorted by
 * name) followed by the mirror tools (in a fixed order), so the same catalog always lists
 * the same way. The first tools/list is answered from the journal's cached catalog without
 * waiting for the service; the service's copy replaces it in the background once the
 * runtime is up, and every connection is told when the list changed.
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
  close(): void;
}

const RETRY_MS = 15_000;

export function createToolList(ctx: McpContext, mirror: MirrorTools): ToolList {
  const { host, log, now } = ctx;
  let catalog: Catalog = { entries: [], source: "none" };
  let paidTools = new Map<string, PaidTool>();
  let pa: McpPaidActions | undefined;
  const listeners = new Set<() => void>();
  let retryTimer: NodeJS.Timeout | undefined;

  const toolsOf = (map: Map<string, PaidTool>) => [
    ...[...map.values()].map((t) => t.tool),
    ...[...mirror.values()].map((m) => m.tool),
  ];

  function use(next: Catalog): boolean {
    const before = JSON.stringify(toolsOf(paidTools));
    catalog = next;
    paidTools = buildPaidTools(ctx, next.entries, (name) => mirror.has(name));
    pa?.engine.useCatalog(next.entries.map((e) => e.name));
    return JSON.stringify(toolsOf(paidTools)) !== before;
  }

  let loading: Promise<void> | undefined;
  function load(): Promise<void> {
    loading ??= (async () => {
      const snapshot = host.catalogSnapshot();
      const cached = snapshot ? catalogFromRows(snapshot) : await cachedCatalog(await host.journal(), host.service);
      if (cached.entries.length > 0) {
        use(cached);
        return;
      }
      // Nothing cached (a first start): the service's catalog is needed now.
      const started = await ctx.runtime();
      await fetchInto(started);
    })().catch((e: unknown) => {
      loading = undefined;
      log(`catalog: could not be loaded (${ctx.scrub((e as Error).message)})`);
    });
    return loading;
  }

  async function fetchInto(p: McpPaidActions): Promise<boolean> {
    const fresh = await loadCatalog(p.client, p.journal, host.service, now());
    if (fresh.source === "service")
      host.saveCatalogSnapshot(
        fresh.entries.map((e) => ({ name: e.name, detail: e.detail })),
        fresh.fetchedAt ?? now(),
      );
    if (fresh.problem)
      log(
        `catalog: the service did not answer (${ctx.scrub(fresh.problem)}); using ${fresh.source === "cache" ? "the cached catalog" : "no paid tools yet"}`,
      );
    if (fresh.source === "none" && catalog.source !== "none") return false;
    if (fresh.source === "cache" && catalog.source === "cache") return false;
    const changed = use(fresh);
    if (fresh.source !== "service") scheduleRetry();
    return changed;
  }

  let refreshing: Promise<void> | undefined;
  function refresh(): Promise<void> {
    refreshing ??= (async () => {
      const p = await ctx.runtime();
      if (ctx.isClosed()) return;
      if (await fetchInto(p)) for (const l of listeners) l();
    })()
      .catch((e: unknown) => log(`catalog: refresh failed (${ctx.scrub((e as Error).message)})`))
      .finally(() => {
        refreshing = undefined;
      });
    return refreshing;
  }

  function scheduleRetry(): void {
    if (retryTimer || ctx.isClosed()) return;
    retryTimer = setInterval(() => {
      if (catalog.source === "service" || ctx.isClosed()) {
        clearInterval(retryTimer);
        retryTimer = undefined;
        return;
      }
      void refresh();
    }, RETRY_MS);
    retryTimer.unref();
  }

  return {
    get catalog() {
      return catalog;
    },
    async list() {
      if (catalog.source === "none") await load();
      return toolsOf(paidTools);
    },
    paid: (name) => paidTools.get(name),
    mirror: (name) => mirror.get(name),
    load,
    refresh,
    started(p) {
      pa = p;
      p.engine.useCatalog(catalog.entries.map((e) => e.name));
      // A cached catalog is revalidated against the service, in the background.
      if (catalog.source === "cache") setImmediate(() => void refresh());
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      if (retryTimer) clearInterval(retryTimer);
      listeners.clear();
    },
  };
}
