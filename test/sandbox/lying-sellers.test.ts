/**
 * The test sellers other tests build on (test/helpers/sellers.ts), checked against the
 * sandbox: a lying proxy in front of a stock seller settles the payment and then answers a
 * 500 or a fresh 402 — the money moved once all the same — and every seller logs what its
 * public face saw — on each rail (a stock seller on Solana, or on the sandbox's eip155:84532
 * paid by @x402/evm's client). Declared extensions reach the 402.
 */
import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureTokenAccount, fundWallet } from "../../src/sandbox/ledger/chain.js";
import { startSeller, stopAllSellers, type SellerOptions } from "../helpers/sellers.js";
import { EVM, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("the test sellers", () => {
  let t: TestSandbox;
  let payer: KeyPairSigner;
  let payee: KeyPairSigner;
  /** The payer and payee on the EVM ledger: a fresh key funded with USDC (it needs no gas), and another. */
  let evmPayer: PrivateKeyAccount;
  let evmPayee: PrivateKeyAccount;
  let common: Omit<SellerOptions, "framework">;
  const pay = (url: string) =>
    wrapFetchWithPayment(
      fetch,
      new x402Client().register("solana:*", new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl })),
    )(url);
  const payOnEvm = (url: string) =>
    wrapFetchWithPayment(fetch, new x402Client().register("eip155:*", new ExactEvmScheme(evmPayer)))(url);

  beforeAll(async () => {
    t = await startTestSandbox(EVM.sandbox);
    payer = await generateKeyPairSigner();
    payee = await generateKeyPairSigner();
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 1_000_000n);
    await ensureTokenAccount(t.sb.ledger, t.sb.keys, payee.address, t.sb.asset);
    common = { facilitatorUrl: t.sb.facilitatorUrl, network: t.sb.network, payTo: payee.address };
    evmPayer = privateKeyToAccount(generatePrivateKey());
    evmPayee = privateKeyToAccount(generatePrivateKey());
    const ledger = t.sb.evmLedger!;
    await ledger.callToken(ledger.keys.minter, { functionName: "mint", args: [evmPayer.address, 1_000_000n] });
  });
  afterAll(async () => {
    await stopAllSellers();
    await t?.close();
  });

  for (const rail of RAILS)
    for (const [lie, status] of [
      ["500-after-settle", 500],
      ["402-after-settle", 402],
    ] as const) {
      it(`${lie} (${rail.name}): settles, then answers ${status} without a receipt; the money moved once`, async () => {
        const onEvm = rail.name === "evm";
        const [from, to] = onEvm ? [evmPayer.address, evmPayee.address] : [payer.address, payee.address];
        const seller = await startSeller({ ...common, network: rail.network, payTo: to, framework: "hono", lie });
        const [before, payeeBefore] = [await rail.balance(t, from), await rail.balance(t, to)];
        const res = await (onEvm ? payOnEvm : pay)(`${seller.url}/paid/data`);
        expect(res.status).toBe(status);
        expect(res.headers.get("payment-response")).toBeNull();
        if (status === 402) expect(res.headers.get("payment-required")).not.toBeNull();
        expect(await rail.balance(t, from)).toBe(before - 10_000n);
        expect(await rail.balance(t, to)).toBe(payeeBefore + 10_000n);
        expect(await seller.requests()).toEqual([
          { method: "GET", path: "/paid/data", paid: false, paymentIdentifier: null, status: 402 },
          { method: "GET", path: "/paid/data", paid: true, paymentIdentifier: null, status },
        ]);
        await seller.stop();
      });
    }

  it("a handler that fails settles nothing (the stock middleware's rule), and the log says so", async () => {
    const seller = await startSeller({
      ...common,
      framework: "express",
      routes: [{ method: "GET", path: "/broken", price: "$0.05", respond: { status: 500, json: { error: "down" } } }],
    });
    const before = await t.usdc(payer.address);
    const res = await pay(`${seller.url}/broken`);
    expect(res.status).toBe(500);
    expect(await t.usdc(payer.address)).toBe(before);
    expect((await seller.requests()).map((r) => [r.paid, r.status])).toEqual([
      [false, 402],
      [true, 500],
    ]);
    await seller.stop();
  });

  it("declared extensions reach the 402: the Bazaar and payment-identifier", async () => {
    const seller = await startSeller({ ...common, framework: "express", bazaar: true, paymentIdentifier: true });
    const res = await fetch(`${seller.url}/paid/echo`, { method: "POST" });
    expect(res.status).toBe(402);
    const challenge = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString("utf8"));
    expect(Object.keys(challenge.extensions).sort()).toEqual(["bazaar", "payment-identifier"]);
    expect(challenge.accepts[0]).toMatchObject({ amount: "20000", asset: t.sb.asset });
    await seller.stop();
  });

  it("text and binary answers, at the size asked for", async () => {
    const seller = await startSeller({
      ...common,
      framework: "hono",
      routes: [
        { method: "GET", path: "/text", respond: { text: "a".repeat(100_000), contentType: "text/plain" } },
        { method: "GET", path: "/bin", price: "$0.01", respond: { bytes: 4096 } },
      ],
    });
    const text = await fetch(`${seller.url}/text`);
    expect((await text.text()).length).toBe(100_000);
    const bin = await pay(`${seller.url}/bin`);
    expect(bin.status).toBe(200);
    expect(bin.headers.get("content-type")).toBe("application/octet-stream");
    expect((await bin.arrayBuffer()).byteLength).toBe(4096);
    await seller.stop();
  });
});
