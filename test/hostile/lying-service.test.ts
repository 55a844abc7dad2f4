/**
 * A lying service: the reference service behind a proxy that rewrites, truncates, loops
 * and redirects. Each behaviour must be refused with a clear error; before signing, nothing
 * is signed and nothing is spent; after payment, nothing more is paid.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type ProxyRule } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const QUOTES = on("POST", "/v1/quotes");
const PREPARE = on("POST", "/v1/payments/prepare");
const PAID_EXECUTION = (r: Parameters<typeof QUOTES>[0]) =>
  on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined;
const accepts0 = (q: any) => q.paymentRequirement.accepts[0];
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
const rewritePrepare = (f: (p: any) => void): ProxyRule => ({
  match: PREPARE,
  action: { kind: "rewrite", transform: (p) => (f(p.paymentRequired.accepts[0]), p) },
});

interface Case {
  name: string;
  rules: (t: TestSandbox) => ProxyRule[];
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
    rules: () => [rewritePrepare((a) => (a.amount = "300000"))],
    codes: ["quote_drift"],
    message: /amount: expected 288000/,
  },
  {
    name: "payee swapped in the challenge",
    fresh: true,
    rules: () => [rewritePrepare((a) => (a.payTo = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"))],
    codes: ["quote_drift"],
    message: /payTo/,
  },
  {
    name: "mint swapped",
    rules: () => [rewriteQuote((q) => (accepts0(q).asset = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"))],
    codes: ["quote_drift"],
    message: /asset/,
  },
  {
    name: "network swapped",
    rules: () => [rewriteQuote((q) => (accepts0(q).network = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"))],
    codes: ["quote_drift"],
    message: /scheme\/network/,
  },
  {
    name: "scheme swapped",
    rules: () => [rewriteQuote((q) => (accepts0(q).scheme = "upto"))],
    codes: ["quote_drift"],
    message: /scheme\/network/,
  },
  {
    name: "fee payer equal to our own wallet",
    rules: (t) => [rewriteQuote((q) => (accepts0(q).extra.feePayer = t.wallet.address))],
    codes: ["quote_drift"],
    message: /feePayer/,
  },
  {
    name: "challenge without a fee payer",
    rules: () => [rewriteQuote((q) => delete accepts0(q).extra.feePayer)],
    codes: ["quote_drift"],
    message: /feePayer/,
  },
  {
    name: "amount as a float",
    rules: () => [rewriteQuote((q) => (accepts0(q).amount = "288000.0"))],
    codes: ["quote_drift"],
    message: /amount/,
  },
  {
    name: "amount in exponent form",
    rules: () => [rewriteQuote((q) => ((q.amount = "2.88e-1"), (accepts0(q).amount = "2.88e5")))],
    codes: ["quote_drift", "service_error"],
    message: /amount/,
  },
  {
    name: "amount negative",
    rules: () => [rewriteQuote((q) => ((q.amount = "-0.288"), (accepts0(q).amount = "-288000")))],
    codes: ["quote_drift", "service_error"],
    message: /amount/,
  },
  {
    name: "amount zero",
    rules: () => [rewriteQuote((q) => ((q.amount = "0"), (accepts0(q).amount = "0")))],
    codes: ["quote_drift"],
  },
  {
    name: "amount beyond 2^64",
    rules: () => [rewriteQuote((q) => (accepts0(q).amount = "18446744073709551616"))],
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
                paymentRequirement: { ...q.paymentRequirement, accepts: [{ ...accepts0(q), amount: "288000" }] },
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
    rules: () => [rewriteQuote((q) => (accepts0(q).extra.memo = "qt_notthisone"))],
    codes: ["quote_drift"],
    message: /extra\.memo/,
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

describe("a lying service: every behaviour refused, nothing signed or overpaid", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ rateLimit: { perSecond: 1000, burst: 1000 } });
  });
  afterAll(() => t.close());

  it("has at least 20 adversarial behaviours", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(20);
  });

  for (const c of CASES) {
    it(c.name, async () => {
      const f: EngineFixture = await engineFixture({
        t,
        rules: c.rules(t),
        configFile: { http: { timeoutMs: 500, maxAttempts: 2 } },
        open: c.fresh ? { challengeMaxAgeMs: 0 } : {},
      });
      try {
        const before = await t.usdc(t.wallet.address);
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
          expect(await t.usdc(t.wallet.address)).toBe(before);
          expect((await f.pa.engine.spending()).committedLast24h).toBe("0.00");
        } else {
          // Paid once, never again; the budget stays held and a human is told.
          expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
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
