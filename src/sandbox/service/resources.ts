/**
 * The records an execution creates for its tenant (a company, a server, a domain, a bucket,
 * an agent-service purchase) and how each follows its execution's status.
 */
import type Database from "better-sqlite3";
import type { ActionDef } from "../providers/catalog.js";
import { iso, type ExecutionRow } from "./records.js";
import { statement } from "../db.js";

export function createResource(
  db: Database.Database,
  now: number,
  action: ActionDef,
  row: ExecutionRow,
  input: Record<string, unknown>,
): void {
  let kind: string;
  let record: Record<string, unknown>;
  const parsed = action.schema.parse(input);
  switch (action.name) {
    case "companies.create":
      kind = "company";
      record = {
        companyId: row.resource_id,
        name: parsed.name,
        jurisdiction: parsed.jurisdiction,
        companyType: parsed.companyType,
        owners: parsed.owners,
        registeredAgent: parsed.registeredAgent,
        formationStatus: "pending",
        providerRefs: { provider: action.provider },
        documents: [],
        executionId: row.execution_id,
        createdAt: iso(now),
        updatedAt: iso(now),
      };
      break;
    case "servers.provision":
      kind = "server";
      record = {
        serverId: row.resource_id,
        plan: parsed.plan,
        region: parsed.region,
        image: parsed.image,
        status: "provisioning",
        executionId: row.execution_id,
      };
      break;
    case "domains.register":
      kind = "domain";
      record = { domainId: row.resource_id, domain: parsed.domain, status: "pending", executionId: row.execution_id };
      break;
    case "storage.purchase":
      kind = "bucket";
      record = { bucketId: row.resource_id, tier: parsed.tier, status: "pending", executionId: row.execution_id };
      break;
    case "agent-services.purchase":
      kind = "purchase";
      record = {
        purchaseId: row.resource_id,
        serviceId: parsed.serviceId,
        status: "pending",
        executionId: row.execution_id,
      };
      break;
    default:
      return; // servers.renew works on an existing server
  }
  statement(
    db,
    `INSERT INTO resources (resource_id, tenant, kind, execution_id, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(row.resource_id, row.tenant, kind, row.execution_id, JSON.stringify(record), now, now);
}

export function updateResource(db: Database.Database, nowMs: number, row: ExecutionRow): void {
  if (!row.resource_id) return;
  const res = statement(db, `SELECT kind, record FROM resources WHERE resource_id = ?`).get(row.resource_id) as
    { kind: string; record: string } | undefined;
  if (!res) return;
  const record = JSON.parse(res.record) as Record<string, unknown>;
  const output = row.output ? (JSON.parse(row.output) as Record<string, unknown>) : undefined;
  const now = iso(nowMs);
  if (res.kind === "company") {
    if (row.execution_id !== record.executionId) return;
    record.formationStatus =
      row.status === "processing"
        ? "filing"
        : row.status === "completed"
          ? "formed"
          : row.status === "pending"
            ? "pending"
            : "rejected";
    if (output) {
      record.documents = output.documents;
      record.providerRefs = { ...(record.providerRefs as object), registrationNumber: output.registrationNumber };
    }
    record.updatedAt = now;
  } else if (res.kind === "server") {
    if (row.action === "servers.renew") {
      if (row.status === "completed" && output) record.expiresAt = output.expiresAt;
    } else if (row.status === "completed" && output) {
      Object.assign(record, { status: "running", ipv4: output.ipv4, expiresAt: output.expiresAt });
    } else if (row.status === "failed" || row.status === "refunded") {
      record.status = "failed";
    }
  } else {
    if (row.status === "completed") record.status = "active";
    else if (row.status === "failed" || row.status === "refunded") record.status = "failed";
  }
  statement(db, `UPDATE resources SET record = ?, updated_at = ? WHERE resource_id = ?`).run(
    JSON.stringify(record),
    nowMs,
    row.resource_id,
  );
}

/** A resource record of this tenant, or undefined. */
export function readResource(
  db: Database.Database,
  tenant: string,
  kind: "company" | "server",
  id: string,
): Record<string, unknown> | undefined {
  const row = statement(db, `SELECT record FROM resources WHERE resource_id = ? AND tenant = ? AND kind = ?`).get(
    id,
    tenant,
    kind,
  ) as { record: string } | undefined;
  return row ? (JSON.parse(row.record) as Record<string, unknown>) : undefined;
}
