/**
 * The service's free reads, answered through the v1 API (api.ts) for the engine's surface:
 * the catalog (its names, then each action's detail), a formed company's record, and the
 * marketplace of agent services. Nothing here pays or writes the journal; a refusal the
 * caller should see becomes a PaidActionError with a stable code, a fault stays a throw.
 */
import type { ActionDetail, Company } from "../../domain/wire.js";
import { paidError } from "../errors.js";
import type { AgentServiceSearchResult, ServiceApi } from "./api.js";

/** One action of the service's catalog, with its detail (schema, pricing, budget hints). */
export interface CatalogEntry {
  name: string;
  detail: ActionDetail;
}

/** What the service said when asked for its catalog's names: the names, or its refusal in words. */
export type ActionNames = { ok: true; names: string[] } | { ok: false; status: number; problem: string };

/** A catalog larger than this is cut: tools/list stays bounded whatever the service lists. */
const MAX_ACTIONS = 1000;
/** Details read at once (a catalog of many actions is not read one by one, nor all at once). */
const DETAIL_READERS = 8;

/** The catalog's names (GET /actions), or the service's refusal; throws when it does not answer. */
export async function actionNames(api: ServiceApi): Promise<ActionNames> {
  const list = await api.listActions();
  if (!list.ok)
    return {
      ok: false,
      status: list.status,
      problem: `GET /actions answered HTTP ${list.status} ${list.error.code}: ${list.error.message}`,
    };
  return { ok: true, names: list.body.items.map((i) => i.name) };
}

/**
 * The whole catalog, sorted by name: the names, then each action's detail (an action whose
 * detail the service does not give is left out). Throws when the names cannot be read.
 */
export async function fetchCatalog(api: ServiceApi): Promise<CatalogEntry[]> {
  const list = await api.listActions();
  if (!list.ok) throw new Error(`GET /actions answered HTTP ${list.status} ${list.error.code}`);
  const names = [...new Set(list.body.items.map((i) => i.name))].slice(0, MAX_ACTIONS);
  const entries: CatalogEntry[] = [];
  let index = 0;
  const reader = async () => {
    while (index < names.length) {
      const name = names[index++]!;
      const res = await api.getAction(name);
      if (res.ok) entries.push({ name, detail: res.body });
    }
  };
  await Promise.all(Array.from({ length: Math.min(DETAIL_READERS, names.length) }, reader));
  return entries.sort((a, b) => a.name.localeCompare(b.name));
}

/** A formed company's record; not_found when the service knows no such company. */
export async function company(api: ServiceApi, companyId: string): Promise<Company> {
  const res = await api.getCompany(companyId);
  if (!res.ok) {
    const said = { companyId, status: res.status, serviceCode: res.error.code, detail: res.error.message };
    throw res.status === 404
      ? paidError("not_found", said)
      : paidError("service_error", { problem: "company", ...said });
  }
  return res.body;
}

/** The marketplace searched (free); invalid_input when the service refuses the query as such. */
export async function searchAgentServices(
  api: ServiceApi,
  query: Record<string, unknown>,
): Promise<AgentServiceSearchResult> {
  const res = await api.searchAgentServices(query);
  if (!res.ok) {
    const said = {
      problem: "search",
      status: res.status,
      serviceCode: res.error.code,
      detail: res.error.message,
    } as const;
    throw res.status === 400 ? paidError("invalid_input", said) : paidError("service_error", said);
  }
  return res.body;
}
