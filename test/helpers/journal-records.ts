/**
 * Journal records for the store tests: an intent as the engine first writes it and a signed
 * payment, at a fixed time.
 */
import type { NewIntent } from "../../src/engine/journal/port.js";
import type { PaymentRecord } from "../../src/engine/model/types.js";

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
