/**
 * A lying service: the reference service behind a proxy that rewrites, truncates, loops
 * and redirects. Each behaviour must be refused with a clear error; before signing, nothing
 * is signed and nothing is spent; after payment, nothing more is paid. Every case runs on
 * each rail it applies to (test/helpers/rails.ts): the lies about the requirement are told
 * in our entry of the quote (Solana's, or eip155:84532's), drifted to that rail's values, and
 * the payer's and payee's balances on that rail's ledger decide what was paid.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type ProxyRule } from "../helpers/proxy.js";
import { balances, moved, RAILS, type RailFixture } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const QUOTES = on("POST", "/v1/quotes");
const PREPARE = on("POST", "/v1/payments/prepare");
const PAID_EXECUTION = (r: Parameters<typeof QUOTES>[0]) =>
  on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined;
const PRICE = 288_000n;
/** Our entry of a quote's accepts: the one on the rail's network. */
const oursIn = (rail: RailFixture, q: any) => rail.ours(q.paymentRequirement.accepts);
const rewriteQuote = (f: (q: any) => void): ProxyRule => ({
  match: QUOTES,
  action: { kind: "rewrite", transform: (q) => (f(q), q) },
});
/** The quote endpoint answers 201 with whatever `write` sends (and ends, or not). */
const rawQuote = (write: (res: import("node:http").ServerResponse) => void): ProxyRule[] => [
  {
    match: QUOTES,
    action: {
      kind: "raw",
      handler: (_req, res) => {
        res.writeHead(201, { "content-type": "application/json" });
        write(res);
      },
    },
  },
];
const rewritePrepare = (rail: RailFixture, f: (p: any) => void): ProxyRule => ({
  match: PREPARE,
  action: { kind: "rewrite", transform: (p) => (f(rail.ours(p.paymentRequired.accepts)), p) },
});

interface Case {
  name: string;
  rules: (t: TestSandbox, rail: RailFixture) => ProxyRule[];
  /** The rails it applies to (default: both), and why not the others. */
  only?: { rails: Array<RailFixture["name"]>; why: string };
  /** Refused codes that are acceptable. */
  codes: string[];
  /** Before signing (default) or after payment settled. */
  stage?: "before-signing" | "after-payment";
  /** Ask for a fresh challenge from /payments/prepare. */
  fresh?: boolean;
  message?: RegExp;
}

const CASES: Case[] = [
  {
    name: "amount raised between quote and challenge",
    fresh: true,
    rules: (_t, rail) => [rewritePrepare(rail, (a) => (a.amount = "300000"))],
    codes: ["quote_drift"],
    message: /amount: expected 288000/,
  },
  {
    name: "payee swapped in the challenge",
    fresh: true,
    rules: (_t, rail) => [rewritePrepare(rail, (a) => (a.payTo = rail.drift.payee))],
    codes: ["quote_drift"],
    message: /payTo/,
  },
  {
    name: "mint swapped (Solana: mainnet's USDC; EVM: another ERC-20 contract)",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).asset = rail.drift.asset))],
    codes: ["quote_drift"],
    message: /asset/,
  },
  {
    name: "network swapped (Solana: mainnet; EVM: eip155:8453 while we pay on 84532)",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).network = rail.drift.network))],
    codes: ["quote_drift"],
    message: /scheme\/network/,
  },
  {
    name: "scheme swapped",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).scheme = "upto"))],
    codes: ["quote_drift"],
    message: /scheme\/network/,
  },
  {
    name: "fee payer equal to our own wallet",
    only: { rails: ["solana"], why: "on EVM the facilitator submits the authorization and pays the gas: no fee payer" },
    rules: (t, rail) => [rewriteQuote((q) => (oursIn(rail, q).extra.feePayer = t.wallet.address))],
    codes: ["quote_drift"],
    message: /feePayer/,
  },
  {
    name: "challenge without a fee payer",
    only: { rails: ["solana"], why: "on EVM the facilitator submits the authorization and pays the gas: no fee payer" },
    rules: (_t, rail) => [rewriteQuote((q) => delete oursIn(rail, q).extra.feePayer)],
    codes: ["quote_drift"],
    message: /feePayer/,
  },
  {
    name: "amount as a float",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).amount = "288000.0"))],
    codes: ["quote_drift"],
    message: /amount/,
  },
  {
    name: "amount in exponent form",
    rules: (_t, rail) => [rewriteQuote((q) => ((q.amount = "2.88e-1"), (oursIn(rail, q).amount = "2.88e5")))],
    codes: ["quote_drift", "service_error"],
    message: /amount/,
  },
  {
    name: "amount negative",
    rules: (_t, rail) => [rewriteQuote((q) => ((q.amount = "-0.288"), (oursIn(rail, q).amount = "-288000")))],
    codes: ["quote_drift", "service_error"],
    message: /amount/,
  },
  {
    name: "amount zero",
    rules: (_t, rail) => [rewriteQuote((q) => ((q.amount = "0"), (oursIn(rail, q).amount = "0")))],
    codes: ["quote_drift"],
  },
  {
    name: "amount beyond 2^64",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).amount = "18446744073709551616"))],
    codes: ["quote_drift"],
    message: /amount/,
  },
  { name: "amount as a JSON number", rules: () => [rewriteQuote((q) => (q.amount = 0.288))], codes: ["service_error"] },
  {
    name: "quote already expired",
    rules: () => [rewriteQuote((q) => (q.expiresAt = new Date(Date.now() - 60_000).toISOString()))],
    codes: ["quote_expired"],
  },
  {
    name: "quote expiring during the call",
    fresh: true,
    rules: () => [
      rewriteQuote((q) => (q.expiresAt = new Date(Date.now() + 400).toISOString())),
      { match: PREPARE, action: { kind: "delay", ms: 700 } },
    ],
    codes: ["quote_expired"],
  },
  {
    name: "quote for another action",
    rules: () => [rewriteQuote((q) => (q.action = "domains.register"))],
    codes: ["quote_drift"],
    message: /domains\.register/,
  },
  {
    name: "quote for another input (a real quote of the service, for a longer rental)",
    rules: (t) => [
      {
        match: QUOTES,
        action: {
          kind: "raw",
          handler: (_req, res) =>
            void t.quote("servers.provision", { ...SMALL_SERVER, durationHours: 25 }).then((q) => {
              const body = JSON.stringify({
                ...q,
                amount: "0.288",
                paymentRequirement: {
                  ...q.paymentRequirement,
                  accepts: q.paymentRequirement.accepts.map((a: object) => ({ ...a, amount: "288000" })),
                },
              });
              res.writeHead(201, { "content-type": "application/json" });
              res.end(body);
            }),
        },
      },
    ],
    codes: ["quote_drift"],
    message: /not for this intent/,
  },
  {
    name: "memo of another quote in the challenge",
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).extra.memo = "qt_notthisone"))],
    codes: ["quote_drift"],
    message: /extra\.memo/,
  },
  {
    name: "another EIP-712 domain for the USDC (extra.name)",
    only: { rails: ["evm"], why: "Solana's transfer names its mint alone: no signing domain to swap" },
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).extra.name = "USD Coin"))],
    codes: ["quote_drift"],
    message: /extra\.name/,
  },
  {
    name: "permit2 as the transfer method",
    only: { rails: ["evm"], why: "Solana has one transfer instruction: no transfer method to swap" },
    rules: (_t, rail) => [rewriteQuote((q) => (oursIn(rail, q).extra.assetTransferMethod = "permit2"))],
    codes: ["quote_drift"],
    message: /assetTransferMethod/,
  },
  {
    name: "missing required fields (no quoteId)",
    rules: () => [rewriteQuote((q) => delete q.quoteId)],
    codes: ["service_error"],
    message: /quoteId/,
  },
  {
    name: "a quote id with path characters",
    rules: () => [rewriteQuote((q) => (q.quoteId = "../../etc/passwd"))],
    codes: ["quote_drift"],
  },
  {
    name: "redirect to another host",
    rules: () => [
      {
        match: QUOTES,
        action: { kind: "status", status: 307, headers: { location: "http://attacker.invalid/v1/quotes" } },
      },
    ],
    codes: ["service_error"],
    message: /redirect/,
  },
  {
    name: "a 10 MB body",
    rules: () => rawQuote((res) => res.end(`{"pad":"${"x".repeat(10 * 1024 * 1024)}"}`)),
    codes: ["service_unavailable"],
    message: /larger than/,
  },
  {
    name: "a response that never ends",
    rules: () => rawQuote((res) => res.write('{"quoteId":"qt_')),
    codes: ["service_unavailable"],
  },
  {
    name: "invalid UTF-8",
    rules: () => rawQuote((res) => res.end(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]))),
    codes: ["service_unavailable"],
    message: /UTF-8/,
  },
  {
    name: "non-JSON body",
    rules: () => [{ match: QUOTES, action: { kind: "garbage" } }],
    codes: ["service_unavailable"],
  },
  {
    name: "a 402 after payment (pay-again loop)",
    stage: "after-payment",
    rules: () => [
      {
        match: PAID_EXECUTION,
        // The service takes the proof it was handed (the payment settles), then asks to be paid again.
        action: {
          kind: "rewrite",
          status: 402,
          transform: () => ({
            error: { code: "payment_required", message: "pay again", paymentRequired: { x402Version: 2, accepts: [] } },
          }),
        },
      },
    ],
    codes: ["payment_loop"],
  },
  {
    name: "an execution id with path characters",
    stage: "after-payment",
    rules: () => [
      { match: PAID_EXECUTION, action: { kind: "rewrite", transform: (e) => ((e.executionId = "../../v1/admin"), e) } },
    ],
    codes: ["service_error"],
  },
];

describe.each(RAILS)("a lying service on $name: every behaviour refused, nothing signed or overpaid", (rail) => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ ...rail.sandbox, rateLimit: { perSecond: 1000, burst: 1000 } });
  });
  afterAll(() => t.close());

  const cases = CASES.filter((c) => !c.only || c.only.rails.includes(rail.name));
  it("has at least 20 adversarial behaviours", () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });

  for (const c of cases) {
    it(c.name, async () => {
      const f: EngineFixture = await engineFixture({
        t,
        env: rail.env(t),
        rules: c.rules(t, rail),
        configFile: { http: { timeoutMs: 500, maxAttempts: 2 } },
        open: c.fresh ? { challengeMaxAgeMs: 0 } : {},
      });
      try {
        const before = await balances(rail, t);
        let error: PaidActionError | undefined;
        try {
          await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }, { callId: "call_lying" });
        } catch (e) {
          if (!(e instanceof PaidActionError)) throw e;
          error = e;
        }
        expect(error, "the call must be refused").toBeDefined();
        expect(c.codes).toContain(error!.code);
        if (c.message) expect(error!.message).toMatch(c.message);
        expect(error!.message.length).toBeGreaterThan(20);
        const rows = await f.pa.journal.intentsSince(0);
        if ((c.stage ?? "before-signing") === "before-signing") {
          for (const row of rows) expect(row.proof, "nothing may be signed").toBeNull();
          expect(await moved(rail, t, before)).toEqual({ payer: 0n, payee: 0n });
          expect((await f.pa.engine.spending()).committedLast24h).toBe("0.00");
        } else {
          // Paid once, never again; the budget stays held and a human is told.
          expect(await moved(rail, t, before)).toEqual({ payer: PRICE, payee: PRICE });
          expect(rows).toHaveLength(1);
          expect(rows[0]!.state).toBe("attention");
          expect(await f.pa.engine.needsAttention()).toHaveLength(1);
        }
        // A refusal that said nothing was charged: no transfer for it on the ledger, its kept proofs replayed.
        await f.checkRefusals();
      } finally {
        await f.close();
      }
    });
  }

  it("an execution that failed and is never refunded is followed for a day, then handed to a human", async () => {
    let clock = Date.now();
    const f = await engineFixture({
      t,
      env: rail.env(t),
      open: { now: () => clock },
      rules: [
        {
          match: on("GET", "/v1/executions/"),
          action: {
            kind: "rewrite",
            transform: (e) => ({ ...e, status: "failed", error: { code: "provider_failed", message: "gone" } }),
          },
        },
      ],
    });
    try {
      const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
      clock += 2_000;
      await f.pa.reconciler!.runOnce();
      let row = (await f.pa.journal.intent(paid.intentId))!;
      expect(row.execStatus).toBe("failed");
      expect(row.nextPollAt).not.toBeNull(); // still waiting for the refund
      clock += 25 * 3_600_000;
      await f.pa.reconciler!.runOnce();
      row = (await f.pa.journal.intent(paid.intentId))!;
      expect(row.nextPollAt).toBeNull();
      expect(row.attention).toMatch(/not refunded it after 24 h/);
      expect((await f.pa.engine.needsAttention()).map((v) => v.executionId)).toContain(paid.executionId);
    } finally {
      await f.close();
    }
  });
});
