/**
 * Money truth from the chain, for refunds: a service that says it refunded credits back only
 * what landed on chain — all of it, nothing, one atomic unit, less than it claims, or nothing
 * for a refund transaction already credited to another purchase. Each case runs the engine
 * against the real reference service through a programmable proxy, on each rail
 * (test/helpers/rails.ts); the payer's and the payee's balances on that rail's ledger decide
 * what came back.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { on, type ProxyRule, type SeenRequest } from "../helpers/proxy.js";
import { balances, moved, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { pollUntil } from "../helpers/wait.js";

const PRICE = 288_000n;
const GET_EXECUTION = on("GET", "/v1/executions/");

describe.each(RAILS)("money truth on $name: the chain decides, whatever the service says", (rail) => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox(rail.sandbox);
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every refusal that said nothing was charged: no transfer for it on the ledger, its kept proofs replayed.
    await f?.checkRefusals();
    await f?.close();
    f = undefined;
  });

  describe("refunds credit back exactly what landed on chain", () => {
    /** Pays, then lets the reconciler follow the execution and the refund until it rests. */
    async function payAndFollow(fx: EngineFixture, image: string) {
      const paid = await fx.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, image } });
      return follow(fx, paid.intentId);
    }
    /** Runs the reconciler until it no longer follows the intent; the intent's row then. */
    async function follow(fx: EngineFixture, intentId: string) {
      const followed = await pollUntil(
        async () => {
          await fx.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
          return (await fx.pa.journal.intent(intentId))!;
        },
        (row) => row.nextPollAt === null,
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      const row = followed.value;
      if (!followed.done)
        throw new Error(
          `the intent was still followed: ${JSON.stringify({ state: row.state, exec: row.execStatus, settlement: row.settlement, refund: row.refundState })}`,
        );
      return row;
    }
    /** Makes the provider fail, so the sandbox refunds the payment for real. */
    const failTheProvider: ProxyRule = {
      match: on("POST", "/v1/executions"),
      action: { kind: "dynamic", choose: (r: SeenRequest) => ((r.headers["x-sandbox-outcome"] = "fail"), undefined) },
    };

    it("an honest refund: all of it, no human needed", async () => {
      f = await engineFixture({ t, env: rail.env(t), rules: [failTheProvider], open: { reconcile: false } });
      const before = await balances(rail, t);
      const row = await payAndFollow(f, "refund-honest");
      expect(row.execStatus).toBe("refunded");
      expect(await moved(rail, t, before)).toEqual({ payer: 0n, payee: 0n });
      expect(row.refundState).toBe("verified");
      expect(row.refundCredit).toBe(PRICE);
      expect(row.attention).toBeNull();
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.00");
    });

    it("a `refunded` status with no refund at all credits nothing and tells a human", async () => {
      f = await engineFixture({
        t,
        env: rail.env(t),
        rules: [
          {
            match: GET_EXECUTION,
            action: { kind: "rewrite", transform: (e) => ({ ...e, status: "refunded", refund: undefined }) },
          },
        ],
      });
      const before = await balances(rail, t);
      const row = await payAndFollow(f, "refund-none");
      expect(await moved(rail, t, before)).toEqual({ payer: PRICE, payee: PRICE });
      expect(row.refundCredit).toBe(0n);
      expect(row.refundState).toBe("unverified");
      expect(row.attention).toMatch(/names no refund transaction/);
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
    });

    it("a tiny refund (one atomic unit landed) credits one atomic unit", async () => {
      let tiny: string | undefined = undefined;
      f = await engineFixture({
        t,
        env: rail.env(t),
        rules: [
          {
            match: GET_EXECUTION,
            action: {
              kind: "rewrite",
              transform: (e) =>
                tiny
                  ? { ...e, status: "refunded", refund: { amount: "0.000001", currency: "USDC", transaction: tiny } }
                  : e,
            },
          },
        ],
      });
      const paid = await f.pa.engine.pay({
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: "refund-tiny" },
      });
      tiny = await rail.refund(t, 1n);
      const before = await balances(rail, t);
      const row = await follow(f, paid.intentId);
      expect(await moved(rail, t, before)).toEqual({ payer: 0n, payee: 0n });
      expect(row.refundCredit).toBe(1n);
      expect(row.refundTx).toBe(tiny);
      expect(row.attention).toMatch(/only 0\.000001 of the 0\.288 USDC paid came back/);
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.287999");
    });

    it("an inflated refund claim credits only what landed (never more than was paid) and tells a human", async () => {
      f = await engineFixture({
        t,
        env: rail.env(t),
        rules: [
          failTheProvider,
          {
            match: GET_EXECUTION,
            action: {
              kind: "rewrite",
              transform: (e) => (e.refund ? { ...e, refund: { ...e.refund, amount: "1000.00" } } : e),
            },
          },
        ],
      });
      const before = await balances(rail, t);
      const row = await payAndFollow(f, "refund-inflated");
      expect(row.execStatus).toBe("refunded");
      expect(await moved(rail, t, before)).toEqual({ payer: 0n, payee: 0n });
      expect(row.refundCredit).toBe(PRICE);
      expect(row.attention).toMatch(/reports 1000\.00 USDC refunded; the chain shows 0\.288 USDC/);
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.00");
    });

    it("one refund transaction claimed for two purchases credits only the first", async () => {
      let shared: string | undefined = undefined;
      f = await engineFixture({
        t,
        env: rail.env(t),
        rules: [
          failTheProvider,
          {
            match: GET_EXECUTION,
            action: {
              kind: "rewrite",
              transform: (e) => (e.refund && shared ? { ...e, refund: { ...e.refund, transaction: shared } } : e),
            },
          },
        ],
      });
      const first = await payAndFollow(f, "refund-shared-1");
      expect(first.refundCredit).toBe(PRICE);
      shared = first.refundTx!;
      const second = await payAndFollow(f, "refund-shared-2");
      expect(second.refundCredit).toBe(0n);
      expect(second.attention).toMatch(/already credited another purchase/);
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
    });
  });
});
