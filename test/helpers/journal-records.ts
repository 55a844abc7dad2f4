/**
 * Journal records for the store tests: an intent as the engine first writes it, what it holds
 * in later phases, and a signed payment, at a fixed time.
 */
import type { PaymentRequirements } from "../../src/domain/wire.js";
import type { NewIntent } from "../../src/engine/journal/port.js";
import type { IntentPatch, PaymentRecord } from "../../src/engine/model/types.js";

export const NOW = 1_700_000_000_000;
export const DAY = 24 * 3_600_000;
export const U64_MAX = 18_446_744_073_709_551_615n;

export function newIntent(id: string, o: Partial<NewIntent> = {}): NewIntent {
  return {
    intentId: id,
    intentKey: `key-${id}`,
    idemKey: `idem-${id}`,
    service: "svc",
    action: "servers_provision",
    input: { region: "eu", size: 3, tags: ["a", "ß", "😀"], nested: { ok: true, none: null } },
    fingerprint: `fp-${id}`,
    agentBudget: null,
    callId: null,
    createdAt: NOW,
    leaseOwner: "owner-a",
    leaseUntil: NOW + 60_000,
    ...o,
  };
}

export function payment(quoteId: string, intentId: string, o: Partial<PaymentRecord> = {}): PaymentRecord {
  return {
    quoteId,
    intentId,
    attempt: 0,
    amount: 1_500_000n,
    payee: "Payee111",
    payer: "Payer111",
    mint: "Mint111",
    source: "Source111",
    blockhash: "Hash111",
    lastValidHeight: 1_150n,
    signedAt: NOW + 10,
    sentAt: null,
    fate: "pending",
    tx: null,
    claimedTx: null,
    checkedAt: null,
    watch: false,
    ...o,
  };
}

/**
 * What an intent holds once priced, reserved, signed and executed, as the engine writes it:
 * the journal hands out no intent in a state without the fields that state requires.
 */
export const REQUIREMENTS: PaymentRequirements = {
  scheme: "exact",
  network: "solana",
  amount: "1500000",
  asset: "Mint111",
  payTo: "Payee111",
  maxTimeoutSeconds: 60,
  extra: {},
};

export const PRICED = {
  quoteId: "q1",
  quote: {
    quoteId: "q1",
    action: "servers_provision",
    amount: "1.5",
    currency: "USDC",
    expiresAt: new Date(NOW + 300_000).toISOString(),
    paymentRequirement: { scheme: "exact", resource: "/v1/executions", network: "solana", accepts: [REQUIREMENTS] },
  },
  amount: 1_500_000n,
  payee: "Payee111",
  quoteExpiresAt: NOW + 300_000,
  quotedAt: NOW,
} satisfies IntentPatch;

export const RESERVED = {
  ...PRICED,
  requirements: REQUIREMENTS,
  budgetState: "reserved",
  budgetAmount: 1_500_000n,
  budgetAt: NOW,
} satisfies IntentPatch;

export const SIGNED = { ...RESERVED, proof: "PROOF" } satisfies IntentPatch;

export const EXECUTED = {
  ...SIGNED,
  budgetState: "spent",
  executionId: "ex-1",
  execution: {
    executionId: "ex-1",
    status: "completed",
    action: "servers_provision",
    createdAt: "2023-11-14T00:00:00Z",
  },
  execStatus: "completed",
} satisfies IntentPatch;
