/**
 * What the sandbox's simulated providers charge, in bigint atomic USDC units: server plans
 * by the hour, company formation by jurisdiction, domains by TLD and year, storage by
 * GB-month. The catalog (catalog.ts) prices actions from these and publishes them.
 */
import { parseDecimal } from "../../domain/money.js";

export const usdc = (text: string): bigint => {
  const value = parseDecimal(text);
  if (value === undefined) throw new Error(`bad price literal ${text}`);
  return value;
};

export const SERVER_PLANS = {
  nano: { hourly: usdc("0.005"), vcpus: 1, memoryGb: 0.5 },
  small: { hourly: usdc("0.012"), vcpus: 1, memoryGb: 2 },
  medium: { hourly: usdc("0.045"), vcpus: 2, memoryGb: 8 },
  large: { hourly: usdc("0.18"), vcpus: 8, memoryGb: 32 },
  gpu: { hourly: usdc("1.20"), vcpus: 16, memoryGb: 96 },
} as const;
export type PlanName = keyof typeof SERVER_PLANS;

export const JURISDICTION_FEES = {
  "US-DE": { fee: usdc("89.00"), types: ["llc", "c-corp"] },
  "US-WY": { fee: usdc("49.00"), types: ["llc", "c-corp"] },
  UK: { fee: usdc("29.00"), types: ["ltd"] },
  EE: { fee: usdc("265.00"), types: ["ou"] },
  SG: { fee: usdc("315.00"), types: ["pte-ltd"] },
} as const;
export type Jurisdiction = keyof typeof JURISDICTION_FEES;
export const REGISTERED_AGENT_FEE = usdc("49.00");

export const TLD_YEARLY: Record<string, bigint> = {
  com: usdc("12.00"),
  net: usdc("14.00"),
  org: usdc("11.00"),
  io: usdc("39.00"),
  dev: usdc("15.00"),
  ai: usdc("80.00"),
  xyz: usdc("2.00"),
};

export const STORAGE_GB_MONTH = { object: usdc("0.023"), archive: usdc("0.004") } as const;
