/**
 * The canonical terms a passkey signs (engine/evidence/terms.ts): a table of intents and the
 * exact canonical JSON and challenge each gives, and that every term changes the challenge.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalTerms, termsChallenge, termsOf, type TermsSource } from "../../src/engine/evidence/terms.js";
import type { Quote } from "../../src/domain/wire.js";

const NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
const PAYEE = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
const EXPIRES = Date.UTC(2030, 0, 2, 3, 4, 5);

const quote = (accepts: boolean): Quote => ({
  quoteId: "qt_1",
  action: "servers.provision",
  amount: "2.50",
  currency: "USDC",
  expiresAt: new Date(EXPIRES).toISOString(),
  paymentRequirement: {
    scheme: "exact",
    resource: "/v1/executions",
    network: NETWORK,
    ...(accepts
      ? {
          accepts: [
            {
              scheme: "exact",
              network: NETWORK,
              amount: "2500000",
              asset: MINT,
              payTo: PAYEE,
              maxTimeoutSeconds: 60,
              extra: {},
            },
          ],
        }
      : {}),
  },
});

const action: TermsSource = {
  kind: "action",
  action: "servers.provision",
  input: { region: "eu", size: "small" },
  fingerprint: "a".repeat(64),
  amount: 2_500_000n,
  payee: PAYEE,
  quote: quote(true),
  requirements: null,
  quoteExpiresAt: EXPIRES,
};

const fetch: TermsSource = {
  kind: "fetch",
  action: "x402.fetch",
  input: { method: "GET", url: "https://api.example/report?q=[redacted]", origin: "https://api.example" },
  fingerprint: "b".repeat(64),
  amount: 10_000n,
  payee: PAYEE,
  quote: null,
  requirements: {
    scheme: "exact",
    network: NETWORK,
    amount: "10000",
    asset: MINT,
    payTo: PAYEE,
    maxTimeoutSeconds: 60,
    extra: {},
  },
  quoteExpiresAt: EXPIRES,
};

const sha = (s: string) => createHash("sha256").update(s).digest("base64url");

describe("canonical terms", () => {
  const table: Array<[string, TermsSource, string]> = [
    [
      "an action priced by a quote with a challenge",
      action,
      `{"action":"servers.provision","amount":"2.50","approvalId":"apr_1","asset":"${MINT}","currency":"USDC","inputDigest":"${"a".repeat(64)}","kind":"action","network":"${NETWORK}","payee":"${PAYEE}","quoteExpiresAt":"2030-01-02T03:04:05.000Z","url":null,"v":1}`,
    ],
    [
      "an action whose quote names no accepts: the network from the quote, no asset, the intent's payee",
      { ...action, quote: quote(false) },
      `{"action":"servers.provision","amount":"2.50","approvalId":"apr_1","asset":null,"currency":"USDC","inputDigest":"${"a".repeat(64)}","kind":"action","network":"${NETWORK}","payee":"${PAYEE}","quoteExpiresAt":"2030-01-02T03:04:05.000Z","url":null,"v":1}`,
    ],
    [
      "an action with no payee of its own: the challenge's payTo",
      { ...action, payee: null },
      `{"action":"servers.provision","amount":"2.50","approvalId":"apr_1","asset":"${MINT}","currency":"USDC","inputDigest":"${"a".repeat(64)}","kind":"action","network":"${NETWORK}","payee":"${PAYEE}","quoteExpiresAt":"2030-01-02T03:04:05.000Z","url":null,"v":1}`,
    ],
    [
      "a fetch: its method and redacted URL, its 402's requirement",
      fetch,
      `{"action":null,"amount":"0.01","approvalId":"apr_1","asset":"${MINT}","currency":"USDC","inputDigest":"${"b".repeat(64)}","kind":"fetch","network":"${NETWORK}","payee":"${PAYEE}","quoteExpiresAt":"2030-01-02T03:04:05.000Z","url":"GET https://api.example/report?q=[redacted]","v":1}`,
    ],
  ];
  for (const [name, source, expected] of table) {
    it(name, () => {
      const canonical = canonicalTerms(termsOf(source, "apr_1"));
      expect(canonical).toBe(expected);
      expect(termsChallenge(canonical)).toBe(sha(expected));
      expect(termsChallenge(canonical)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });
  }

  it("changes its challenge with every term: amount, payee, asset, network, expiry, input, action, approval", () => {
    const base = termsChallenge(canonicalTerms(termsOf(action, "apr_1")));
    const other = quote(true);
    const variants: TermsSource[] = [
      { ...action, amount: 2_500_001n },
      { ...action, payee: "So11111111111111111111111111111111111111112" },
      {
        ...action,
        quote: {
          ...other,
          paymentRequirement: {
            ...other.paymentRequirement,
            accepts: [{ ...other.paymentRequirement.accepts![0]!, asset: "other" }],
          },
        },
      },
      {
        ...action,
        quote: {
          ...other,
          paymentRequirement: {
            ...other.paymentRequirement,
            accepts: [{ ...other.paymentRequirement.accepts![0]!, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }],
          },
        },
      },
      { ...action, quoteExpiresAt: EXPIRES + 1 },
      { ...action, fingerprint: "c".repeat(64) },
      { ...action, action: "servers.destroy" },
    ];
    const seen = new Set([base]);
    for (const v of variants) seen.add(termsChallenge(canonicalTerms(termsOf(v, "apr_1"))));
    seen.add(termsChallenge(canonicalTerms(termsOf(action, "apr_2"))));
    expect(seen.size).toBe(variants.length + 2);
  });
});
