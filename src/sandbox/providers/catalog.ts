/**
 * The sandbox's action catalog: for each action, its input schema (schemas.ts, published as
 * JSON Schema 2020-12), a pricing model that explains every price (the price lists are in
 * prices.ts), and budget hints (the simulated providers' outputs are in outputs.ts). Prices
 * are bigint atomic USDC units.
 */
import { z } from "zod";
import { formatDecimal, parseDecimal } from "../../domain/money.js";
import { AGENT_SERVICES, findAgentService } from "./agent-services.js";
import {
  JURISDICTION_FEES,
  REGISTERED_AGENT_FEE,
  SERVER_PLANS,
  STORAGE_GB_MONTH,
  TLD_YEARLY,
  usdc,
  type PlanName,
} from "./prices.js";
import {
  AgentServicesPurchaseInput,
  CompaniesCreateInput,
  DomainsRegisterInput,
  ServersProvisionInput,
  ServersRenewInput,
  StoragePurchaseInput,
} from "./schemas.js";

const HOURLY_RATES = Object.fromEntries(Object.entries(SERVER_PLANS).map(([k, v]) => [k, formatDecimal(v.hourly)]));
const SERVER_BUDGET_HINTS = { typical: "0.29", max: formatDecimal(SERVER_PLANS.gpu.hourly * 8760n) };

/** What an action's pricing needs to know about the caller's world (their servers). */
export interface PricingWorld {
  server(serverId: string): { plan: string; region: string } | undefined;
  domainTaken(domain: string): boolean;
}

export type PriceResult =
  | { ok: true; amount: bigint; breakdown: Record<string, unknown>; region: string }
  | { ok: false; status: 400 | 404; path: string; message: string };

export interface ActionDef {
  name: string;
  description: string;
  supportsAsync: boolean;
  schema: z.ZodType<Record<string, unknown>>;
  pricing: Record<string, unknown>;
  budgetHints: { typical: string; max: string };
  provider: string;
  /** Dedicated endpoint (POST), for the documentation and routing. */
  endpoint: string;
  /** Key under which the created resource's id is returned. */
  resourceKey: string;
  resourcePrefix: string;
  price(input: Record<string, unknown>, world: PricingWorld): PriceResult;
}

const fixed = (amount: bigint, breakdown: Record<string, unknown>, region: string): PriceResult => ({
  ok: true,
  amount,
  breakdown,
  region,
});

export const ACTIONS: readonly ActionDef[] = [
  {
    name: "companies.create",
    description:
      "Forms a company with a formation agent: files the formation documents in the chosen jurisdiction and returns the company record with its documents.",
    supportsAsync: true,
    schema: CompaniesCreateInput,
    pricing: {
      model: "fixed",
      currency: "USDC",
      formula: "jurisdiction filing fee + registered agent fee (if registeredAgent)",
      jurisdictionFees: Object.fromEntries(
        Object.entries(JURISDICTION_FEES).map(([k, v]) => [k, formatDecimal(v.fee)]),
      ),
      registeredAgentFee: formatDecimal(REGISTERED_AGENT_FEE),
      companyTypes: Object.fromEntries(Object.entries(JURISDICTION_FEES).map(([k, v]) => [k, v.types])),
    },
    budgetHints: { typical: "89.00", max: formatDecimal(usdc("315.00") + REGISTERED_AGENT_FEE) },
    provider: "sandbox-formations",
    endpoint: "/companies",
    resourceKey: "companyId",
    resourcePrefix: "co",
    price(raw) {
      const input = raw as z.infer<typeof CompaniesCreateInput>;
      const j = JURISDICTION_FEES[input.jurisdiction];
      if (!(j.types as readonly string[]).includes(input.companyType)) {
        return {
          ok: false,
          status: 400,
          path: "input.companyType",
          message: `${input.jurisdiction} forms ${j.types.join(" or ")}, not ${input.companyType}`,
        };
      }
      const agent = input.registeredAgent ? REGISTERED_AGENT_FEE : 0n;
      return fixed(
        j.fee + agent,
        { filingFee: formatDecimal(j.fee), registeredAgentFee: formatDecimal(agent) },
        input.jurisdiction.toLowerCase(),
      );
    },
  },
  {
    name: "servers.provision",
    description:
      "Provisions a virtual server for a fixed number of hours and returns its id and public IP once it is running.",
    supportsAsync: true,
    schema: ServersProvisionInput,
    pricing: {
      model: "per_unit",
      currency: "USDC",
      unit: "hour",
      formula: "plan hourly rate x durationHours",
      hourlyRates: HOURLY_RATES,
    },
    budgetHints: SERVER_BUDGET_HINTS,
    provider: "sandbox-cloud",
    endpoint: "/servers/provision",
    resourceKey: "serverId",
    resourcePrefix: "svr",
    price(raw) {
      const input = raw as z.infer<typeof ServersProvisionInput>;
      const rate = SERVER_PLANS[input.plan].hourly;
      return fixed(
        rate * BigInt(input.durationHours),
        { hourlyRate: formatDecimal(rate), hours: input.durationHours },
        input.region,
      );
    },
  },
  {
    name: "servers.renew",
    description: "Extends a running or reserved server by more hours, at its plan's hourly rate.",
    supportsAsync: true,
    schema: ServersRenewInput,
    pricing: {
      model: "per_unit",
      currency: "USDC",
      unit: "hour",
      formula: "the server's plan hourly rate x durationHours",
      hourlyRates: HOURLY_RATES,
    },
    budgetHints: SERVER_BUDGET_HINTS,
    provider: "sandbox-cloud",
    endpoint: "/servers/{serverId}/renew",
    resourceKey: "serverId",
    resourcePrefix: "svr",
    price(raw, world) {
      const input = raw as z.infer<typeof ServersRenewInput>;
      const server = world.server(input.serverId);
      if (!server)
        return { ok: false, status: 404, path: "input.serverId", message: `server ${input.serverId} not found` };
      const rate = SERVER_PLANS[server.plan as PlanName]?.hourly ?? SERVER_PLANS.small.hourly;
      return fixed(
        rate * BigInt(input.durationHours),
        { hourlyRate: formatDecimal(rate), hours: input.durationHours, plan: server.plan },
        server.region,
      );
    },
  },
  {
    name: "domains.register",
    description: "Registers a domain name for 1-10 years with WHOIS privacy, and sets its nameservers.",
    supportsAsync: true,
    schema: DomainsRegisterInput,
    pricing: {
      model: "per_unit",
      currency: "USDC",
      unit: "year",
      formula: "TLD yearly rate x years",
      yearlyRates: Object.fromEntries(Object.entries(TLD_YEARLY).map(([k, v]) => [k, formatDecimal(v)])),
    },
    budgetHints: { typical: "12.00", max: formatDecimal(usdc("80.00") * 10n) },
    provider: "sandbox-registrar",
    endpoint: "/domains/register",
    resourceKey: "domainId",
    resourcePrefix: "dom",
    price(raw, world) {
      const input = raw as z.infer<typeof DomainsRegisterInput>;
      const tld = input.domain.split(".").pop() ?? "";
      const rate = TLD_YEARLY[tld];
      if (rate === undefined) {
        return {
          ok: false,
          status: 400,
          path: "input.domain",
          message: `.${tld} is not offered; offered: ${Object.keys(TLD_YEARLY)
            .map((t) => `.${t}`)
            .join(", ")}`,
        };
      }
      if (world.domainTaken(input.domain)) {
        return { ok: false, status: 400, path: "input.domain", message: `${input.domain} is already registered` };
      }
      return fixed(rate * BigInt(input.years), { yearlyRate: formatDecimal(rate), years: input.years }, "global");
    },
  },
  {
    name: "storage.purchase",
    description:
      "Buys object or archive storage capacity for a number of months and returns the bucket and its endpoint.",
    supportsAsync: true,
    schema: StoragePurchaseInput,
    pricing: {
      model: "per_unit",
      currency: "USDC",
      unit: "GB-month",
      formula: "tier rate x sizeGb x durationMonths",
      ratesPerGbMonth: Object.fromEntries(Object.entries(STORAGE_GB_MONTH).map(([k, v]) => [k, formatDecimal(v)])),
    },
    budgetHints: { typical: "2.30", max: formatDecimal(STORAGE_GB_MONTH.object * 100_000n * 36n) },
    provider: "sandbox-storage",
    endpoint: "/storage/purchase",
    resourceKey: "bucketId",
    resourcePrefix: "bkt",
    price(raw) {
      const input = raw as z.infer<typeof StoragePurchaseInput>;
      const rate = STORAGE_GB_MONTH[input.tier];
      return fixed(
        rate * BigInt(input.sizeGb) * BigInt(input.durationMonths),
        { ratePerGbMonth: formatDecimal(rate), sizeGb: input.sizeGb, months: input.durationMonths },
        input.region,
      );
    },
  },
  {
    name: "agent-services.purchase",
    description:
      "Hires an agent service from the marketplace (find one with POST /v1/agent-services/search, the MCP tool search_agent_services) to do a task, and returns its deliverable.",
    supportsAsync: true,
    schema: AgentServicesPurchaseInput,
    pricing: {
      model: "fixed",
      currency: "USDC",
      formula: "the service's listed price per task",
      priceRange: {
        min: formatDecimal(AGENT_SERVICES.reduce((m, s) => (s.price < m ? s.price : m), AGENT_SERVICES[0]!.price)),
        max: formatDecimal(AGENT_SERVICES.reduce((m, s) => (s.price > m ? s.price : m), 0n)),
      },
    },
    budgetHints: { typical: "0.50", max: "25.00" },
    provider: "sandbox-agent-market",
    endpoint: "/agent-services/purchase",
    resourceKey: "purchaseId",
    resourcePrefix: "pur",
    price(raw) {
      const input = raw as z.infer<typeof AgentServicesPurchaseInput>;
      const service = findAgentService(input.serviceId);
      if (!service)
        return {
          ok: false,
          status: 404,
          path: "input.serviceId",
          message: `agent service ${input.serviceId} not found`,
        };
      if (input.maxPrice) {
        const cap = parseDecimal(input.maxPrice.amount);
        if (cap === undefined || service.price > cap) {
          return {
            ok: false,
            status: 400,
            path: "input.maxPrice",
            message: `${service.serviceId} costs ${formatDecimal(service.price)} USDC, above maxPrice ${input.maxPrice.amount}`,
          };
        }
      }
      return fixed(service.price, { servicePrice: formatDecimal(service.price), service: service.name }, "global");
    },
  },
];

const BY_NAME = new Map(ACTIONS.map((a) => [a.name, a]));

export function findAction(name: string): ActionDef | undefined {
  return BY_NAME.get(name);
}

const schemaCache = new Map<string, Record<string, unknown>>();
export function inputJsonSchema(action: ActionDef): Record<string, unknown> {
  let schema = schemaCache.get(action.name);
  if (!schema) {
    schema = z.toJSONSchema(action.schema, { io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
    schemaCache.set(action.name, schema);
  }
  return schema;
}

export function describeAction(action: ActionDef) {
  return {
    name: action.name,
    description: action.description,
    supportsAsync: action.supportsAsync,
    inputSchema: inputJsonSchema(action),
    pricing: action.pricing,
    budgetHints: action.budgetHints,
    endpoint: action.endpoint,
  };
}
