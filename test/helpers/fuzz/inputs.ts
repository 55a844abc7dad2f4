/**
 * Tool inputs for the fuzz test (test/hostile/fuzz.test.ts), as fast-check arbitraries: the
 * server's tools and the service's actions; budgets, intent keys and approval ids, well
 * formed or not; inputs that pass every schema (payable, in the approval band, above the
 * limits); and mutations that break them.
 */
import fc from "fast-check";
import { anyValue, edgeNumber, hostileKey, hostileString, INJECTION, ownObject } from "./values.js";

export const PAID_TOOLS = [
  "servers_provision",
  "servers_renew",
  "companies_create",
  "domains_register",
  "storage_purchase",
  "agent_services_purchase",
] as const;
const MIRROR_TOOLS = [
  "quote_action",
  "get_execution",
  "list_executions",
  "wait_for_execution",
  "get_spending",
  "search_agent_services",
  "get_company",
  "paid_fetch",
  "search_paid_resources",
] as const;
export const ALL_TOOLS = [...PAID_TOOLS, ...MIRROR_TOOLS] as const;
export const KNOWN = new Set<string>(ALL_TOOLS);
export const PAID = new Set<string>(PAID_TOOLS);
export const ACTIONS = [
  "servers.provision",
  "servers.renew",
  "companies.create",
  "domains.register",
  "storage.purchase",
  "agent-services.purchase",
];
const REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"];

const POOL_KEYS = ["fuzz-key-0001", "fuzz-key-0002", "fuzz-key-0003", "fuzz.key:0004"];

export const budgetArb: fc.Arbitrary<unknown> = fc.oneof(
  // Well-formed, within and above every limit.
  fc.record({
    amount: fc.constantFrom(
      "0.01",
      "0.1",
      "0.3",
      "0.4",
      "0.45",
      "0.5",
      "0.500001",
      "0.51",
      "1",
      "3",
      "3.01",
      "1000",
      "999999999999.999999",
      "18446744073709.551615",
    ),
    currency: fc.constant("USDC"),
  }),
  // Malformed amounts and currencies.
  fc.record({
    amount: fc.oneof(
      hostileString,
      fc.constantFrom("-1", "1e308", "1e3", "0.1234567", "+1", " 1", "1,5", "0x1F", "Infinity", "0.", ".5", "00.1"),
    ),
    currency: fc.oneof(fc.constant("USDC"), hostileString),
  }),
  fc.record({ amount: edgeNumber, currency: fc.constant("USDC") }),
  fc.record({ amount: fc.constant("0.1"), currency: fc.constant("USDC"), extra: anyValue }),
  fc.record({ amount: fc.constant("0.1") }),
  anyValue,
);

const intentKeyArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_.:-]{8,100}$/),
  fc.constantFrom(...POOL_KEYS),
  fc.constantFrom(
    "short",
    "has space in it",
    "x".repeat(101),
    "../../../etc/passwd",
    "key\u0000withnul",
    "ключ-ключ-ключ",
    "🙂🙂🙂🙂🙂🙂🙂🙂",
  ),
  anyValue,
);

const approvalIdArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    "apr_0000000000000000",
    "apr_bogus",
    "approved",
    "yes",
    "'; UPDATE approvals SET status='approved'; --",
    "x".repeat(101),
    "",
  ),
  hostileString,
  anyValue,
);

/** Inputs that pass every schema: some payable, some above the approval threshold, some above the limits. */
export const payableInput: fc.Arbitrary<{ name: string; args: Record<string, unknown> }> = fc.oneof(
  fc
    .record({
      region: fc.constantFrom(...REGIONS),
      plan: fc.constantFrom("nano", "small"),
      durationHours: fc.integer({ min: 1, max: 60 }),
    })
    .map((args) => ({ name: "servers_provision", args })),
  fc
    .record({
      tier: fc.constant("archive"),
      sizeGb: fc.integer({ min: 1, max: 60 }),
      durationMonths: fc.integer({ min: 1, max: 3 }),
      region: fc.constantFrom(...REGIONS),
    })
    .map((args) => ({ name: "storage_purchase", args })),
  fc
    .record({
      serviceId: fc.constantFrom(
        "svc_summarize01",
        "svc_scrape01",
        "svc_translate01",
        "svc_transcribe01",
        "svc_data01",
      ),
      task: fc.constantFrom("Summarize this.", "Translate: hola", INJECTION[13]!),
    })
    .map((args) => ({ name: "agent_services_purchase", args })),
);

/** Within the per-call limit but above the approval threshold (0.40 < price <= 0.50): a human must approve. */
export const approvalBandInput: fc.Arbitrary<{ name: string; args: Record<string, unknown> }> = fc.oneof(
  fc
    .record({
      region: fc.constantFrom(...REGIONS),
      plan: fc.constant("small"),
      durationHours: fc.integer({ min: 34, max: 41 }),
    })
    .map((args) => ({ name: "servers_provision", args })),
  fc
    .record({
      region: fc.constantFrom(...REGIONS),
      plan: fc.constant("nano"),
      durationHours: fc.integer({ min: 81, max: 100 }),
    })
    .map((args) => ({ name: "servers_provision", args })),
  fc
    .record({
      tier: fc.constant("archive"),
      sizeGb: fc.integer({ min: 101, max: 125 }),
      durationMonths: fc.constant(1),
      region: fc.constantFrom(...REGIONS),
    })
    .map((args) => ({ name: "storage_purchase", args })),
);

const overLimitInput: fc.Arbitrary<{ name: string; args: Record<string, unknown> }> = fc.oneof(
  fc.constant({
    name: "companies_create",
    args: {
      jurisdiction: "US-DE",
      companyType: "llc",
      name: "Fuzz Robotics LLC",
      owners: [{ type: "individual", fullName: "Ada Lovelace", country: "GB" }],
    },
  }),
  fc
    .record({ domain: fc.stringMatching(/^[a-z]{3,12}\.(xyz|com|ai)$/) })
    .map((args) => ({ name: "domains_register", args })),
  fc
    .record({
      region: fc.constantFrom(...REGIONS),
      plan: fc.constantFrom("large", "gpu"),
      durationHours: fc.integer({ min: 1, max: 8760 }),
    })
    .map((args) => ({ name: "servers_provision", args })),
  fc
    .record({
      tier: fc.constant("object"),
      sizeGb: fc.integer({ min: 100, max: 100_000 }),
      durationMonths: fc.integer({ min: 1, max: 36 }),
      region: fc.constantFrom(...REGIONS),
    })
    .map((args) => ({ name: "storage_purchase", args })),
  fc
    .record({ serverId: fc.stringMatching(/^svr_[A-Za-z0-9]{1,20}$/), durationHours: fc.integer({ min: 1, max: 10 }) })
    .map((args) => ({ name: "servers_renew", args })),
);

export const validInput = fc.oneof(payableInput, approvalBandInput, overLimitInput);

export type Extras = { budget?: unknown; intentKey?: unknown; approvalId?: unknown };
export const extrasArb: fc.Arbitrary<Extras> = fc.record(
  { budget: budgetArb, intentKey: intentKeyArb, approvalId: approvalIdArb },
  { requiredKeys: [] },
);

export interface Mutation {
  op: "delete" | "set" | "add";
  index: number;
  key: string;
  value: unknown;
}
export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom("delete" as const, "set" as const, "add" as const),
  index: fc.nat(),
  key: hostileKey,
  value: anyValue,
});

export function mutate(args: Record<string, unknown>, mutations: Mutation[]): Record<string, unknown> {
  const entries = Object.entries(args);
  for (const m of mutations) {
    if (m.op === "add" || entries.length === 0) entries.push([m.key, m.value]);
    else if (m.op === "delete") entries.splice(m.index % entries.length, 1);
    else entries[m.index % entries.length]![1] = m.value;
  }
  return ownObject(entries);
}
