/**
 * The service's catalog as MCP tools: fetched at start (by the engine: the names, then each
 * action's detail), cached in the journal so the server starts and lists its tools even
 * when the service is briefly unreachable.
 */
import { z } from "zod";
import { ActionDetail } from "../domain/wire.js";
import type { CatalogEntry, Engine, JournalStore } from "../engine/index.js";

/** Tool names hosts accept everywhere: lower-case, digits, underscores, ≤ 64. */
export const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** `servers.provision` -> `servers_provision`, `agent-services.purchase` -> `agent_services_purchase`. */
export function toolNameFor(action: string): string {
  return action.toLowerCase().replace(/[.-]/g, "_");
}

export type { CatalogEntry };

/** One action of a cached catalog, as stored. */
export interface CatalogRow {
  name: string;
  detail: unknown;
  fetchedAt?: number;
}

export interface Catalog {
  entries: CatalogEntry[];
  source: "service" | "cache" | "none";
  fetchedAt?: number;
  problem?: string;
}

/** The live catalog, falling back to the journal's cached copy. */
export async function loadCatalog(
  engine: Pick<Engine, "fetchCatalog">,
  journal: JournalStore,
  service: string,
  now: number,
): Promise<Catalog> {
  try {
    const entries = await engine.fetchCatalog();
    if (entries) {
      await journal.saveCatalog(
        service,
        entries.map((e) => ({ name: e.name, detail: e.detail })),
        now,
      );
      return { entries, source: "service", fetchedAt: now };
    }
  } catch (e) {
    const cached = await cachedCatalog(journal, service);
    return { ...cached, problem: (e as Error).message };
  }
  // No service is configured to ask: the cached copy is all there is.
  return cachedCatalog(journal, service);
}

export async function cachedCatalog(journal: JournalStore, service: string): Promise<Catalog> {
  return catalogFromRows(await journal.catalog(service));
}

/** A cached catalog's rows (the journal's, or its snapshot's), each checked as an ActionDetail. */
export function catalogFromRows(rows: CatalogRow[]): Catalog {
  const entries: CatalogEntry[] = [];
  for (const r of rows) {
    const detail = ActionDetail.safeParse(r.detail);
    if (detail.success) entries.push({ name: r.name, detail: detail.data });
  }
  return entries.length > 0
    ? { entries, source: "cache", fetchedAt: rows[0]?.fetchedAt }
    : { entries: [], source: "none" };
}

/** The JSON Schema of an action's input, or a permissive object when the service gave none. */
export function inputSchemaOf(detail: ActionDetail): Record<string, unknown> {
  const schema = detail.inputSchema;
  if (schema && schema.type === "object") return schema;
  return { type: "object", additionalProperties: true };
}

/** A zod validator for an action's input, from its JSON Schema; permissive when it cannot be converted. */
export function inputValidator(detail: ActionDetail): z.ZodType<Record<string, unknown>> {
  try {
    const converted = z.fromJSONSchema(inputSchemaOf(detail) as Parameters<typeof z.fromJSONSchema>[0]);
    return converted as z.ZodType<Record<string, unknown>>;
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

/** Titles of the v1 catalog's actions, as a person would write them. */
const TITLES: Record<string, string> = {
  "servers.provision": "Provision a server",
  "servers.renew": "Renew a server",
  "companies.create": "Form a company",
  "domains.register": "Register a domain",
  "storage.purchase": "Buy storage",
  "agent-services.purchase": "Hire an agent service",
};

/**
 * An action's title: the service's own when it gives one, the known title of a v1 action,
 * else the action's name read as words ("widgets.order" -> "Order widgets").
 */
export function toolTitleFor(entry: CatalogEntry): string {
  const own = (entry.detail as Record<string, unknown>).title;
  if (typeof own === "string" && own.trim().length > 0 && own.length <= 80) return own.trim();
  const known = TITLES[entry.name];
  if (known) return known;
  const [noun = entry.name, ...verb] = entry.name.split(".");
  const words = (s: string) => s.replace(/[-_]+/g, " ").trim();
  const text = verb.length > 0 ? `${words(verb.join(" "))} ${words(noun)}` : words(noun);
  return text.charAt(0).toUpperCase() + text.slice(1);
}
