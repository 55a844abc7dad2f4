/**
 * A paid call against the reference service (a sandbox per file, each test its own engine
 * on it), refused before anything is signed: the limits, an approval above the threshold, a
 * drifting service (every drift named), and configuration errors failing closed. The paying
 * path is paid-call.test.ts.
 */
import { chmodSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { PaidActionError } from "../../src/engine/errors.js";
import { openPaidActions } from "../../src/app/index.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("engine: a paid call against the reference service", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  /** Nothing was signed for this intent: no proof in the journal, no payment at the service. */
  async function assertNothingSigned(fx: EngineFixture, intentId: string | undefined) {
    if (!intentId) return;
    const row = (await fx.pa.journal.intent(intentId))!;
    expect(row.proof).toBeNull();
    if (row.quoteId) expect(fx.settledFor(row.quoteId)).toBe(0);
    expect(["none", "released"]).toContain(row.budgetState);
  }

  describe("limits refuse before anything is signed", () => {
    it("per call", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_PER_CALL: "0.25" } });
      const before = await t.usdc(t.wallet.address);
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("budget_exceeded");
      expect(e.context).toMatchObject({ limit: "maxPerCall", amount: "0.288", ceiling: "0.25" });
      await assertNothingSigned(f, e.context.intentId as string);
      expect(await t.usdc(t.wallet.address)).toBe(before);
    });

    it("per day (rolling 24 h) and total", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_PER_DAY: "0.5" } });
      await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("budget_exceeded");
      expect(e.context).toMatchObject({ limit: "maxPerDay", spentLast24h: "0.288", remaining: "0.212" });
      await assertNothingSigned(f, e.context.intentId as string);
      await f.close();

      f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_TOTAL: "0.3" } });
      await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
      const total = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(total.code).toBe("budget_exceeded");
      expect(total.context).toMatchObject({ limit: "maxTotal" });
    });

    it("per action (config file), allowed actions and allowed payees", async () => {
      f = await engineFixture({ t, configFile: { limits: { perAction: { "servers.provision": "0.2" } } } });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("budget_exceeded");
      expect((e as PaidActionError<"budget_exceeded">).context.limit).toBe("perAction[servers.provision]");
      await f.close();

      f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ACTIONS: "domains.*,storage.purchase" } });
      const notAllowed = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(notAllowed.code).toBe("action_not_allowed");
      expect(f.proxy.seen.filter((r) => r.path.startsWith("/v1/quotes"))).toHaveLength(0);
      await f.close();

      f = await engineFixture({ t, configFile: { limits: { allowedPayees: ["11111111111111111111111111111111"] } } });
      const payee = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(payee.code).toBe("payee_not_allowed");
      await assertNothingSigned(f, payee.context.intentId as string);
    });

    it("an agent's budget lowers the ceiling of that call and never raises a limit", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_PER_CALL: "0.25" } });
      const low = await refusal(
        f.pa.engine.pay({
          action: "servers.provision",
          input: { ...SMALL_SERVER, durationHours: 10 },
          budget: { amount: "0.10", currency: "USDC" },
        }),
      );
      expect(low.code).toBe("budget_exceeded");
      expect(low.context).toMatchObject({ limit: "budget", ceiling: "0.10" });
      const high = await refusal(
        f.pa.engine.pay({
          action: "servers.provision",
          input: SMALL_SERVER,
          budget: { amount: "1000", currency: "USDC" },
        }),
      );
      expect(high.code).toBe("budget_exceeded");
      expect(high.context).toMatchObject({ limit: "maxPerCall", ceiling: "0.25" });
      const ok = await f.pa.engine.pay({
        action: "servers.provision",
        input: { ...SMALL_SERVER, durationHours: 10 },
        budget: { amount: "0.20", currency: "USDC" },
      });
      expect(ok.quote.amount).toBe("0.12");
      const quoteBody = JSON.parse(f.proxy.seen.filter((r) => r.path === "/v1/quotes").at(-1)!.body);
      expect(quoteBody.budget).toEqual({ amount: "0.20", currency: "USDC" });
    });
  });

  describe("approval above the threshold", () => {
    it("without a human at hand: approval_required with an approvalId; after `approve`, the same input plus approvalId pays once", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
      const before = await t.usdc(t.wallet.address);
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("approval_required");
      const approvalId = (e as PaidActionError<"approval_required">).context.approvalId;
      expect(approvalId).toMatch(/^apr_/);
      expect(e.context).toMatchObject({ amount: "0.288", currency: "USDC", payee: t.sb.keys.treasury.address });
      expect(e.message).toContain("a person must approve this payment in the paid-actions console or terminal");
      expect(e.message).toContain(`approvalId "${approvalId}"`);
      expect(e.message).not.toMatch(/paid-actions-mcp|approve apr_/); // no command line an agent could run
      await assertNothingSigned(f, e.context.intentId as string);

      const stillPending = await refusal(
        f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId }),
      );
      expect(stillPending.code).toBe("approval_required");

      const wrongInput = await refusal(
        f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, plan: "medium" }, approvalId }),
      );
      expect(wrongInput.code).toBe("approval_invalid");

      expect(await f.pa.engine.approve(approvalId)).toMatchObject({ approvalId, amount: "0.288" });
      const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
      expect(paid.status).toBe("pending");
      const again = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
      expect(again.executionId).toBe(paid.executionId);
      expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
      await expect(f.pa.engine.approve(approvalId)).rejects.toThrow(/already used/);
    });

    it("with a human at hand: only an explicit accept pays", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
      const before = await t.usdc(t.wallet.address);
      const asks: unknown[] = [];
      for (const answer of ["decline", "cancel"] as const) {
        const e = await refusal(
          f.pa.engine.pay(
            { action: "servers.provision", input: SMALL_SERVER },
            { approve: async (ask) => (asks.push(ask), answer) },
          ),
        );
        expect(e.code).toBe("approval_declined");
        await assertNothingSigned(f, e.context.intentId as string);
      }
      const thrown = await refusal(
        f.pa.engine.pay(
          { action: "servers.provision", input: SMALL_SERVER },
          {
            approve: async () => {
              throw new Error("timeout");
            },
          },
        ),
      );
      expect(thrown.code).toBe("approval_declined");
      expect(await t.usdc(t.wallet.address)).toBe(before);
      const paid = await f.pa.engine.pay(
        { action: "servers.provision", input: SMALL_SERVER },
        { approve: async () => "accept" },
      );
      expect(paid.status).toBe("pending");
      expect(asks[0]).toMatchObject({
        action: "servers.provision",
        amount: "0.288",
        currency: "USDC",
        payee: t.sb.keys.treasury.address,
      });
      expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    });
  });

  describe("a drifting service: every drift refused before signing, saying what drifted", () => {
    const accepts0 = (q: any) => q.paymentRequirement.accepts[0];
    const cases: Array<[string, (q: any) => void, string]> = [
      ["scheme", (q) => (accepts0(q).scheme = "upto"), "scheme/network"],
      ["network", (q) => (accepts0(q).network = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"), "scheme/network"],
      ["asset", (q) => (accepts0(q).asset = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"), "asset"],
      ["amount raised", (q) => (accepts0(q).amount = "288001"), "amount"],
      ["amount as a float", (q) => (accepts0(q).amount = "288000.5"), "amount"],
      ["memo of another quote", (q) => (accepts0(q).extra.memo = "qt_someoneelse"), "extra.memo"],
      ["no fee payer", (q) => delete accepts0(q).extra.feePayer, "extra.feePayer"],
    ];
    for (const [name, mutate, field] of cases) {
      it(name, async () => {
        f = await engineFixture({
          t,
          rules: [{ match: on("POST", "/v1/quotes"), action: { kind: "rewrite", transform: (q) => (mutate(q), q) } }],
        });
        const before = await t.usdc(t.wallet.address);
        const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
        expect(e.code).toBe("quote_drift");
        expect(
          ((e as PaidActionError<"quote_drift">).context.drifts as Array<{ field: string }>).map((d) => d.field),
        ).toContain(field);
        expect(e.message).toContain(field);
        await assertNothingSigned(f, e.context.intentId as string);
        expect(await t.usdc(t.wallet.address)).toBe(before);
      });
    }

    it("fee payer equal to our own wallet", async () => {
      f = await engineFixture({
        t,
        rules: [
          {
            match: on("POST", "/v1/quotes"),
            action: { kind: "rewrite", transform: (q) => ((accepts0(q).extra.feePayer = t.wallet.address), q) },
          },
        ],
      });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("quote_drift");
      expect(e.message).toContain("extra.feePayer");
      await assertNothingSigned(f, e.context.intentId as string);
    });

    it("fee payer equal to the owner, in delegate mode (the key that signs is not the owner)", async () => {
      f = await engineFixture({
        t,
        env: { PAID_ACTIONS_WALLET: t.sb.agentKeyPath!, PAID_ACTIONS_OWNER: t.wallet.address },
        rules: [
          {
            match: on("POST", "/v1/quotes"),
            action: { kind: "rewrite", transform: (q) => ((accepts0(q).extra.feePayer = t.wallet.address), q) },
          },
        ],
      });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("quote_drift");
      expect(e.message).toContain("extra.feePayer: expected an address other than the wallet's owner");
      await assertNothingSigned(f, e.context.intentId as string);
    });

    it("the quote's amount itself differs from its challenge's", async () => {
      f = await engineFixture({
        t,
        rules: [
          { match: on("POST", "/v1/quotes"), action: { kind: "rewrite", transform: (q) => ((q.amount = "0.10"), q) } },
        ],
      });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("quote_drift");
      expect(e.message).toMatch(/amount: expected 100000 \(0\.10 USDC\), got 288000/);
    });

    it("a fresh challenge from /payments/prepare may not change the payee", async () => {
      f = await engineFixture({
        t,
        open: { challengeMaxAgeMs: 0 },
        rules: [
          {
            match: on("POST", "/v1/payments/prepare"),
            action: {
              kind: "rewrite",
              transform: (p) => (
                (p.paymentRequired.accepts[0].payTo = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"),
                p
              ),
            },
          },
        ],
      });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("quote_drift");
      expect(e.message).toContain("payTo: expected");
      await assertNothingSigned(f, e.context.intentId as string);
    });

    it("a quote that has already expired", async () => {
      f = await engineFixture({
        t,
        rules: [
          {
            match: on("POST", "/v1/quotes"),
            action: {
              kind: "rewrite",
              transform: (q) => ((q.expiresAt = new Date(Date.now() - 1000).toISOString()), q),
            },
          },
        ],
      });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("quote_expired");
      await assertNothingSigned(f, e.context.intentId as string);
    });

    it("a quote priced at zero, negative or in exponent form", async () => {
      for (const amount of ["0", "-1.00", "1e3", "18446744073709.551616"]) {
        f = await engineFixture({
          t,
          rules: [
            {
              match: on("POST", "/v1/quotes"),
              action: { kind: "rewrite", transform: (q) => ((q.amount = amount), q) },
            },
          ],
        });
        const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
        expect(["quote_drift", "service_error"]).toContain(e.code);
        await f.close();
        f = undefined;
      }
    });
  });

  describe("configuration errors fail closed", () => {
    it("a limit that does not parse: every paying call fails naming the key", async () => {
      f = await engineFixture({ t, env: { PAID_ACTIONS_MAX_PER_DAY: "lots" } });
      expect(f.pa.configResult.ok).toBe(false);
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("config_invalid");
      expect(e.message).toContain("PAID_ACTIONS_MAX_PER_DAY");
      const q = await refusal(f.pa.engine.quote({ action: "servers.provision", input: SMALL_SERVER }));
      expect(q.code).toBe("config_invalid");
      expect(f.proxy.seen).toHaveLength(0);
    });

    it("a config file with a bad key names the file and the key", async () => {
      f = await engineFixture({ t, configFile: { limits: { maxPerCall: "five" } } });
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("config_invalid");
      expect(e.message).toMatch(/config\.json:limits\.maxPerCall/);
    });

    it("a wallet readable by others is refused, saying how to fix it, and nothing is signed", async () => {
      f = await engineFixture({ t });
      const loose = join(f.home, "loose-wallet.json");
      copyFileSync(t.sb.walletPath, loose);
      chmodSync(loose, 0o644);
      await f.pa.close();
      const pa = await openPaidActions({
        env: { ...f.env, PAID_ACTIONS_WALLET: loose },
        log: () => undefined,
        reconcile: false,
      });
      f.pa = pa;
      const e = await refusal(pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("wallet_invalid");
      expect(e.message).toContain(`chmod 600 ${loose}`);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(0);
    });
  });
});
