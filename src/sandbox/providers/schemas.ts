/**
 * What each action of the catalog accepts: its input schema (zod; the catalog publishes it
 * as JSON Schema 2020-12), with the offered plans, regions and jurisdictions as enums.
 */
import { z } from "zod";
import { JURISDICTION_FEES, SERVER_PLANS, type Jurisdiction, type PlanName } from "./prices.js";

const PLAN_NAMES = Object.keys(SERVER_PLANS) as [PlanName, ...PlanName[]];

const REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"] as const;

const DurationHours = z.int().min(1).max(8760).describe("How long to keep the server, in hours (1-8760)");
const SshKey = z
  .string()
  .max(4096)
  .regex(
    /^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( [^\r\n]{0,200})?$/,
    "must be an OpenSSH public key",
  );

const Money = z.object({
  amount: z.string().regex(/^(0|[1-9][0-9]*)(\.[0-9]+)?$/, "must be a decimal string"),
  currency: z.literal("USDC"),
});

export const ServersProvisionInput = z.strictObject({
  region: z.enum(REGIONS).describe("Data-center region"),
  plan: z.enum(PLAN_NAMES).describe("Server size: nano, small, medium, large or gpu"),
  image: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9.-]*$/)
    .default("ubuntu-24.04")
    .describe("OS image"),
  durationHours: DurationHours,
  sshKeys: z.array(SshKey).max(10).default([]).describe("OpenSSH public keys to install for root"),
});

export const ServersRenewInput = z.strictObject({
  serverId: z
    .string()
    .regex(/^svr_[A-Za-z0-9]{1,40}$/)
    .describe("The server to extend (svr_...)"),
  durationHours: DurationHours,
});

export const CompaniesCreateInput = z.strictObject({
  jurisdiction: z.enum(Object.keys(JURISDICTION_FEES) as [Jurisdiction, ...Jurisdiction[]]),
  companyType: z.enum(["llc", "c-corp", "ltd", "ou", "pte-ltd"]),
  name: z.string().min(2).max(120).describe("Company name, as it should be registered"),
  owners: z
    .array(
      z.strictObject({
        type: z.enum(["individual", "company"]),
        fullName: z.string().min(1).max(200),
        country: z.string().regex(/^[A-Z]{2}$/, "must be an ISO 3166-1 alpha-2 code"),
      }),
    )
    .min(1)
    .max(20),
  registeredAgent: z.boolean().default(false).describe("Add a registered agent for the first year"),
});

export const DomainsRegisterInput = z.strictObject({
  domain: z
    .string()
    .max(253)
    .regex(
      /^(?!-)[a-z0-9-]{1,63}(?<!-)\.[a-z]{2,24}$/,
      "must be a second-level domain such as example.com, lower-case",
    ),
  years: z.int().min(1).max(10).default(1),
  privacy: z.boolean().default(true).describe("WHOIS privacy"),
  nameservers: z.array(z.string().max(253)).max(6).default([]),
});

export const StoragePurchaseInput = z.strictObject({
  tier: z.enum(["object", "archive"]),
  sizeGb: z.int().min(1).max(100_000),
  durationMonths: z.int().min(1).max(36),
  region: z.enum(REGIONS),
});

export const AgentServicesPurchaseInput = z.strictObject({
  serviceId: z
    .string()
    .regex(/^svc_[A-Za-z0-9]{1,40}$/)
    .describe(
      "Service to hire (svc_...); find one with POST /v1/agent-services/search (the MCP tool search_agent_services)",
    ),
  task: z.string().min(1).max(4000).describe("What the service should do"),
  deliveryMode: z.enum(["json", "text"]).default("json"),
  maxPrice: Money.optional().describe("Refuse if the service's price is above this"),
});
