/**
 * What the sandbox's simulated providers return for a finished execution: a plausible
 * output per action (server id and IPs, company record with documents, domain, storage
 * bucket, agent service deliverable), derived from the execution id so a restart
 * reproduces it exactly.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import { findAgentService } from "./agent-services.js";
import type { ActionDef } from "./catalog.js";
import type {
  AgentServicesPurchaseInput,
  CompaniesCreateInput,
  DomainsRegisterInput,
  ServersProvisionInput,
  ServersRenewInput,
  StoragePurchaseInput,
} from "./schemas.js";

function digest(seed: string): Buffer {
  return createHash("sha256").update(seed).digest();
}

const addHours = (iso: string, hours: number) => new Date(Date.parse(iso) + hours * 3_600_000).toISOString();

/** What a provider knows when an execution finishes. */
interface OutputContext {
  executionId: string;
  resourceId: string;
  completedAt: string;
  previous?: Record<string, unknown>;
}

type OutputOf = (input: Record<string, unknown>, ctx: OutputContext, d: Buffer) => Record<string, unknown>;

function serverProvisioned(input: Record<string, unknown>, ctx: OutputContext, d: Buffer): Record<string, unknown> {
  const i = input as z.infer<typeof ServersProvisionInput>;
  return {
    serverId: ctx.resourceId,
    status: "running",
    ipv4: `203.0.113.${(d[0]! % 250) + 2}`,
    ipv6: `2001:db8:${d.readUInt16BE(1).toString(16)}::${d.readUInt16BE(3).toString(16)}`,
    region: i.region,
    plan: i.plan,
    image: i.image,
    sshUser: "root",
    sshKeysInstalled: i.sshKeys.length,
    expiresAt: addHours(ctx.completedAt, i.durationHours),
  };
}

function serverRenewed(input: Record<string, unknown>, ctx: OutputContext): Record<string, unknown> {
  const i = input as z.infer<typeof ServersRenewInput>;
  const previousExpiry = typeof ctx.previous?.expiresAt === "string" ? ctx.previous.expiresAt : ctx.completedAt;
  const base = Date.parse(previousExpiry) > Date.parse(ctx.completedAt) ? previousExpiry : ctx.completedAt;
  return { serverId: i.serverId, extendedByHours: i.durationHours, expiresAt: addHours(base, i.durationHours) };
}

function companyFormed(input: Record<string, unknown>, ctx: OutputContext, d: Buffer): Record<string, unknown> {
  const i = input as z.infer<typeof CompaniesCreateInput>;
  const number = `${i.jurisdiction}-${d.readUInt32BE(0).toString().padStart(10, "0")}`;
  const base = `https://sandbox.paid-actions.invalid/companies/${ctx.resourceId}`;
  const documents = [
    { kind: "certificate_of_formation", name: "Certificate of Formation.pdf", url: `${base}/certificate.pdf` },
    {
      kind: i.companyType === "llc" ? "operating_agreement" : "articles",
      name: i.companyType === "llc" ? "Operating Agreement.pdf" : "Articles of Association.pdf",
      url: `${base}/governing.pdf`,
    },
  ];
  if (i.jurisdiction.startsWith("US"))
    documents.push({ kind: "ein_letter", name: "EIN Confirmation Letter.pdf", url: `${base}/ein.pdf` });
  return { companyId: ctx.resourceId, formationStatus: "formed", registrationNumber: number, documents };
}

function domainRegistered(input: Record<string, unknown>, ctx: OutputContext): Record<string, unknown> {
  const i = input as z.infer<typeof DomainsRegisterInput>;
  return {
    domainId: ctx.resourceId,
    domain: i.domain,
    status: "active",
    registrar: "sandbox-registrar",
    privacy: i.privacy,
    nameservers: i.nameservers.length > 0 ? i.nameservers : ["ns1.sandbox-dns.invalid", "ns2.sandbox-dns.invalid"],
    expiresAt: addHours(ctx.completedAt, i.years * 8760),
  };
}

function storagePurchased(input: Record<string, unknown>, ctx: OutputContext, d: Buffer): Record<string, unknown> {
  const i = input as z.infer<typeof StoragePurchaseInput>;
  const bucketName = `pa-${d.subarray(0, 6).toString("hex")}`;
  return {
    bucketId: ctx.resourceId,
    bucketName,
    endpoint: `https://${i.region}.storage.sandbox.invalid/${bucketName}`,
    tier: i.tier,
    sizeGb: i.sizeGb,
    region: i.region,
    expiresAt: addHours(ctx.completedAt, i.durationMonths * 730),
  };
}

function agentServiceDelivered(input: Record<string, unknown>, ctx: OutputContext, d: Buffer): Record<string, unknown> {
  const i = input as z.infer<typeof AgentServicesPurchaseInput>;
  const service = findAgentService(i.serviceId);
  const summary = `${service?.name ?? i.serviceId} completed the task: ${i.task.slice(0, 200)}`;
  return {
    purchaseId: ctx.resourceId,
    serviceId: i.serviceId,
    deliveryMode: i.deliveryMode,
    deliverable:
      i.deliveryMode === "json"
        ? { format: "json", result: { summary, confidence: 0.8 + (d[0]! % 20) / 100, items: [] } }
        : { format: "text", result: summary },
    deliveredAt: ctx.completedAt,
  };
}

/** Each catalog action's provider output, by action name. */
const OUTPUTS: Readonly<Record<string, OutputOf>> = {
  "servers.provision": serverProvisioned,
  "servers.renew": serverRenewed,
  "companies.create": companyFormed,
  "domains.register": domainRegistered,
  "storage.purchase": storagePurchased,
  "agent-services.purchase": agentServiceDelivered,
};

/**
 * The output an honest provider returns for a finished execution. Derived from the
 * execution id, so a restart reproduces it exactly. An action without a provider output: {}.
 */
export function providerOutput(
  action: ActionDef,
  input: Record<string, unknown>,
  ctx: OutputContext,
): Record<string, unknown> {
  const output = Object.hasOwn(OUTPUTS, action.name) ? OUTPUTS[action.name] : undefined;
  return output ? output(input, ctx, digest(ctx.executionId)) : {};
}
