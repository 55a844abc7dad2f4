/**
 * paid_fetch against stock resource servers that no one here wrote: @x402/express's and
 * @x402/hono's paymentMiddleware (x402ResourceServer over HTTPFacilitatorClient, @x402/svm's
 * exact server scheme) in child processes on 127.0.0.1, settling through the sandbox's
 * facilitator on its ledger. A paid GET and POST move exactly the price; a retry with the
 * intentKey pays nothing; a cap and an origin not allowed refuse with no payment sent; a lying
 * proxy that settles then answers 500 or 402 is paid once — on each rail (test/helpers/rails.ts:
 * the stock seller on Solana, or on the sandbox's eip155:84532 with @x402/evm's scheme, the
 * payer's and payee's balances read from that ledger); loopback however spelled is refused
 * before any connection when only `*` would allow it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, refusal, type EngineFixture } from "../helpers/engine.js";
import { balances, EVM, moved, RAILS, type RailFixture } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { startSeller, stopAllSellers, type Seller } from "../helpers/sellers.js";

const json = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString("utf8")) as unknown;

for (const framework of ["express", "hono"] as const) {
  describe(`engine: paid_fetch against a stock @x402/${framework} seller`, () => {
    let t: TestSandbox;
    let f: EngineFixture | undefined;
    beforeAll(async () => {
      // With the EVM ledger too: the lying proxies run on each rail.
      t = await startTestSandbox(EVM.sandbox);
    });
    afterAll(async () => {
      await stopAllSellers();
      await t.close();
    });
    afterEach(async () => {
      await f?.close();
      f = undefined;
    });

    const seller = (
      o: { lie?: "500-after-settle" | "402-after-settle"; paymentIdentifier?: boolean; rail?: RailFixture } = {},
    ) => {
      const { rail, ...rest } = o;
      return startSeller({
        framework,
        facilitatorUrl: t.sb.facilitatorUrl,
        network: rail?.network ?? t.sb.network,
        payTo: rail?.seller(t) ?? t.sb.keys.seller.address,
        ...rest,
      });
    };
    const open = async (s: Seller, env: Record<string, string> = {}, configFile?: unknown) =>
      (f = await engineFixture({
        t,
        env: { PAID_ACTIONS_ALLOW_ORIGINS: s.url, ...env },
        ...(configFile ? { configFile } : {}),
      }));
    const paid = async (s: Seller) => (await s.requests()).filter((r) => r.paid).length;

    it("a paid GET and a paid POST return the resource and move exactly the price; a retry with the intentKey pays nothing", async () => {
      const s = await seller({ paymentIdentifier: true });
      const f = await open(s);
      const payee = t.sb.keys.seller.address;
      const [payer0, payee0] = [await t.usdc(t.wallet.address), await t.usdc(payee)];

      const get = await f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: `${framework}-get-1` });
      expect(get.result).toMatchObject({ status: 200, payment: { amount: "0.01", payTo: payee } });
      expect(json(get.body)).toMatchObject({ data: expect.anything() });
      const post = await f.pa.engine.payFetch({ url: `${s.url}/paid/echo`, method: "POST", body: { hello: "world" } });
      expect(post.result).toMatchObject({ status: 200, payment: { amount: "0.02" } });
      expect(json(post.body)).toMatchObject({ hello: "world" });
      expect(await t.usdc(t.wallet.address)).toBe(payer0 - 30_000n);
      expect(await t.usdc(payee)).toBe(payee0 + 30_000n);
      // The payment-identifier the seller declared travelled with the payment.
      const seen = await s.requests();
      expect(seen.filter((r) => r.paid).every((r) => r.paymentIdentifier !== null)).toBe(true);

      const again = await f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: `${framework}-get-1` });
      expect(json(again.body)).toEqual(json(get.body));
      expect((await s.requests()).length).toBe(seen.length);
      expect(await t.usdc(t.wallet.address)).toBe(payer0 - 30_000n);

      const free = await f.pa.engine.payFetch({ url: `${s.url}/free` });
      expect(free.result).toMatchObject({ status: 200, payment: null, intentId: null });
    });

    it("a price above the origin's cap and an origin not allowed are refused with no payment sent", async () => {
      const s = await seller();
      const other = await seller();
      const f = await open(s, {}, { limits: { perOrigin: { [s.url]: "0.015" } } });
      const before = await t.usdc(t.wallet.address);
      const over = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/echo`, method: "POST", body: {} }));
      expect(over).toMatchObject({ code: "budget_exceeded" });
      const notAllowed = await refusal(f.pa.engine.payFetch({ url: `${other.url}/paid/data` }));
      expect(notAllowed).toMatchObject({ code: "origin_not_allowed" });
      expect(await other.requests()).toHaveLength(0);
      const header = await refusal(
        f.pa.engine.payFetch({ url: `${s.url}/paid/data`, headers: { "payment-signature": "e30=" } }),
      );
      expect(header).toMatchObject({ code: "invalid_input" });
      expect(await paid(s)).toBe(0);
      expect(await t.usdc(t.wallet.address)).toBe(before);
    });

    for (const rail of RAILS)
      for (const [lie, what] of [
        ["500-after-settle", "an error"],
        ["402-after-settle", "another 402"],
      ] as const) {
        it(`a lying proxy that settles and then answers ${what} is paid exactly once (${rail.name})`, async () => {
          const s = await seller({ lie, rail });
          const f = await open(s, rail.env(t));
          const before = await balances(rail, t, rail.seller(t));
          const key = `${framework}-${lie}-${rail.name}`;
          const first = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: key }));
          expect(first.code).toBe("execution_rejected");
          const again = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: key }));
          expect(again.code).toBe("execution_rejected");
          expect(await moved(rail, t, before, rail.seller(t))).toEqual({ payer: 10_000n, payee: 10_000n });
          expect(await paid(s)).toBe(1);
          expect((await f.pa.journal.intentByKey(key))!).toMatchObject({ state: "attention", budgetState: "spent" });
          expect((await f.pa.journal.paymentsSince(0)).map((p) => p.network)).toEqual([rail.network]);
        });
      }

    it("loopback however spelled is refused before any connection when only * allows it", async () => {
      const s = await seller();
      const f = await open(s, { PAID_ACTIONS_ALLOW_ORIGINS: "*" });
      const port = new URL(s.url).port;
      for (const host of ["127.0.0.2", "localhost", "0x7f.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "[::1]"]) {
        const e = await refusal(f.pa.engine.payFetch({ url: `http://${host}:${port}/paid/data` }));
        expect(e.code, host).toBe("origin_not_allowed");
      }
      expect(await s.requests()).toHaveLength(0);
    });
  });
}
