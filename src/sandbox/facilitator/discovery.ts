/**
 * The facilitator's Bazaar catalog: each resource it settled a payment for whose payload
 * declared the discovery extension, and the sandbox's own resources, registered at start as
 * their seller; kept in SQLite by resource URL and method, updated on every settlement (its
 * latest requirements, its last update), and listed in the format
 * `@x402/extensions/bazaar`'s client reads (`GET /discovery/resources`, `/discovery/search`).
 */
import type Database from "better-sqlite3";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { extractDiscoveryInfo } from "./bazaar.js";
import { statement } from "../db.js";

/** A catalogued resource as the Bazaar client's `DiscoveryResource` has it. */
export interface DiscoveryResource {
  resource: string;
  type: string;
  x402Version: number;
  accepts: PaymentRequirements[];
  lastUpdated: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  extensions: Record<string, unknown>;
}

/** The filters of `GET /discovery/resources` (and of search), as its client sends them. */
export interface DiscoveryFilter {
  type?: string;
  payTo?: string;
  scheme?: string;
  network?: string;
  /** Extension keys, comma-separated: each must be present on the resource. */
  extensions?: string;
}

interface ResourceRow {
  resource: string;
  method: string;
  type: string;
  x402_version: number;
  accepts: string;
  scheme: string;
  network: string;
  pay_to: string;
  description: string | null;
  mime_type: string | null;
  metadata: string;
  extensions: string;
  last_updated: number;
}

/** Requirement fields a seller fills per request (a blockhash hint): not part of a catalog entry. */
const PER_REQUEST_EXTRA = ["recentBlockhash", "lastValidBlockHeight"];

function catalogRequirements(requirements: PaymentRequirements): PaymentRequirements {
  const extra = Object.fromEntries(
    Object.entries(requirements.extra ?? {}).filter(([k]) => !PER_REQUEST_EXTRA.includes(k)),
  );
  return { ...requirements, extra };
}

function view(row: ResourceRow): DiscoveryResource {
  const metadata = JSON.parse(row.metadata) as Pick<DiscoveryResource, "serviceName" | "tags" | "iconUrl">;
  return {
    resource: row.resource,
    type: row.type,
    x402Version: row.x402_version,
    accepts: JSON.parse(row.accepts) as PaymentRequirements[],
    lastUpdated: new Date(row.last_updated).toISOString(),
    ...(row.description ? { description: row.description } : {}),
    ...(row.mime_type ? { mimeType: row.mime_type } : {}),
    ...metadata,
    extensions: JSON.parse(row.extensions) as Record<string, unknown>,
  };
}

function matches(row: ResourceRow, f: DiscoveryFilter): boolean {
  if (f.type !== undefined && row.type !== f.type) return false;
  if (f.payTo !== undefined && row.pay_to !== f.payTo) return false;
  if (f.scheme !== undefined && row.scheme !== f.scheme) return false;
  if (f.network !== undefined && row.network !== f.network) return false;
  if (f.extensions !== undefined) {
    const present = Object.keys(JSON.parse(row.extensions) as object);
    const wanted = f.extensions.split(",").map((k) => k.trim());
    if (!wanted.filter(Boolean).every((k) => present.includes(k))) return false;
  }
  return true;
}

/** What a search query is matched against: the URL, the descriptions, the tags, the declared input. */
function haystack(row: ResourceRow): string {
  return [row.resource, row.method, row.description ?? "", row.metadata, row.extensions].join(" ").toLowerCase();
}

/** The catalog row of a payload that declared the Bazaar extension, or undefined. */
function rowOf(payload: PaymentPayload, requirements: PaymentRequirements, now: number) {
  const found = extractDiscoveryInfo(payload);
  if (!found || !/^https?:\/\//.test(found.resourceUrl)) return undefined;
  const method = "toolName" in found ? `tool:${found.toolName}` : (found.method ?? "");
  const accepted = catalogRequirements(requirements);
  const metadata = {
    ...(found.serviceName ? { serviceName: found.serviceName } : {}),
    ...(found.tags ? { tags: found.tags } : {}),
    ...(found.iconUrl ? { iconUrl: found.iconUrl } : {}),
  };
  return {
    resource: found.resourceUrl,
    method,
    type: found.discoveryInfo.input.type,
    x402_version: found.x402Version,
    accepts: JSON.stringify([accepted]),
    scheme: accepted.scheme,
    network: accepted.network,
    pay_to: accepted.payTo,
    description: found.description || null,
    mime_type: found.mimeType || null,
    metadata: JSON.stringify(metadata),
    // Only the discovery extension is echoed: other extensions of a payload are the payer's.
    extensions: JSON.stringify({ bazaar: payload.extensions?.bazaar }),
    now,
  };
}

export class DiscoveryCatalog {
  constructor(
    private readonly db: Database.Database,
    private readonly now: () => number,
  ) {}

  /**
   * Catalogs the resource a settled payment paid for, if its payload declared the Bazaar
   * extension (validated against its own schema, as the reference helper does: bazaar.ts).
   * Runs inside the caller's transaction. Returns the catalogued URL, or undefined.
   */
  record(payload: PaymentPayload, requirements: PaymentRequirements): string | undefined {
    const row = rowOf(payload, requirements, this.now());
    if (!row) return undefined;
    statement(
      this.db,
      `INSERT INTO discovery_resources (resource, method, type, x402_version, accepts, scheme, network, pay_to,
           description, mime_type, metadata, extensions, settlements, first_settled_at, last_updated)
         VALUES (@resource, @method, @type, @x402_version, @accepts, @scheme, @network, @pay_to,
           @description, @mime_type, @metadata, @extensions, 1, @now, @now)
         ON CONFLICT(resource, method) DO UPDATE SET
           type = excluded.type, x402_version = excluded.x402_version, accepts = excluded.accepts,
           scheme = excluded.scheme, network = excluded.network, pay_to = excluded.pay_to,
           description = excluded.description, mime_type = excluded.mime_type, metadata = excluded.metadata,
           extensions = excluded.extensions, settlements = settlements + 1, last_updated = excluded.last_updated`,
    ).run(row);
    return row.resource;
  }

  /**
   * The entry a first settlement of this payload would make, with no settlement counted (an
   * entry made earlier keeps its count; a new one's first_settled_at says when it was listed).
   * An entry that already says all this is left as it is: a restart updates nothing.
   */
  private register(payload: PaymentPayload, requirements: PaymentRequirements, now: number): string | undefined {
    const row = rowOf(payload, requirements, now);
    if (!row) return undefined;
    statement(
      this.db,
      `INSERT INTO discovery_resources (resource, method, type, x402_version, accepts, scheme, network, pay_to,
           description, mime_type, metadata, extensions, settlements, first_settled_at, last_updated)
         VALUES (@resource, @method, @type, @x402_version, @accepts, @scheme, @network, @pay_to,
           @description, @mime_type, @metadata, @extensions, 0, @now, @now)
         ON CONFLICT(resource, method) DO UPDATE SET
           type = excluded.type, x402_version = excluded.x402_version, accepts = excluded.accepts,
           scheme = excluded.scheme, network = excluded.network, pay_to = excluded.pay_to,
           description = excluded.description, mime_type = excluded.mime_type, metadata = excluded.metadata,
           extensions = excluded.extensions, last_updated = excluded.last_updated
         WHERE (type, x402_version, accepts, scheme, network, pay_to, description, mime_type, metadata, extensions)
           IS NOT (excluded.type, excluded.x402_version, excluded.accepts, excluded.scheme, excluded.network,
             excluded.pay_to, excluded.description, excluded.mime_type, excluded.metadata, excluded.extensions)`,
    ).run(row);
    return row.resource;
  }

  /**
   * A seller's resources, listed from their 402s (`PAYMENT-REQUIRED`, decoded) as a buyer
   * would echo each one, in one transaction: the sandbox's own at start. Entries of the same
   * seller's resources at `paths` on another origin are forgotten first: where the sandbox
   * listened before it moved, nothing answers any more. Returns the URLs listed.
   */
  registerOwn(payTo: string, origin: string, paths: readonly string[], challenges: PaymentRequired[]): string[] {
    const now = this.now();
    return this.db.transaction(() => {
      this.forgetMoved(payTo, origin, paths);
      return challenges.flatMap((c) => {
        const accepted = c.accepts[0];
        if (!accepted) return [];
        const echoed: PaymentPayload = {
          x402Version: c.x402Version,
          resource: c.resource,
          accepted,
          payload: {},
          ...(c.extensions ? { extensions: c.extensions } : {}),
        };
        const url = this.register(echoed, accepted, now);
        return url ? [url] : [];
      });
    })();
  }

  private forgetMoved(payTo: string, origin: string, paths: readonly string[]): void {
    const rows = statement(this.db, `SELECT resource, method FROM discovery_resources WHERE pay_to = ?`).all(
      payTo,
    ) as Array<Pick<ResourceRow, "resource" | "method">>;
    for (const row of rows) {
      const url = new URL(row.resource);
      if (url.origin !== origin && paths.includes(url.pathname))
        statement(this.db, `DELETE FROM discovery_resources WHERE resource = ? AND method = ?`).run(
          row.resource,
          row.method,
        );
    }
  }

  /** Every catalogued resource that passes the filter, most recently updated first. */
  private rows(filter: DiscoveryFilter): ResourceRow[] {
    const all = statement(
      this.db,
      `SELECT * FROM discovery_resources ORDER BY last_updated DESC, resource, method`,
    ).all() as ResourceRow[];
    return all.filter((row) => matches(row, filter));
  }

  /** `GET /discovery/resources`: one page, and how many match in all. */
  list(filter: DiscoveryFilter, limit: number, offset: number) {
    const rows = this.rows(filter);
    return {
      x402Version: 2,
      items: rows.slice(offset, offset + limit).map(view),
      pagination: { limit, offset, total: rows.length },
    };
  }

  /** `GET /discovery/search`: resources whose text holds every word of the query. */
  search(query: string, filter: DiscoveryFilter, limit: number) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const found = this.rows(filter).filter((row) => {
      const text = haystack(row);
      return words.every((w) => text.includes(w));
    });
    return {
      x402Version: 2,
      resources: found.slice(0, limit).map(view),
      partialResults: found.length > limit,
      pagination: null,
    };
  }
}
