/**
 * The sandbox as an x402 facilitator, used by code nobody here wrote: @x402/core's
 * HTTPFacilitatorClient, stock @x402/express and @x402/hono sellers in their own processes,
 * and the stock @x402/fetch client paying them with a wallet funded on the sandbox ledger.
 * Money is read back over the sandbox's Solana RPC; discovery through @x402/extensions'
 * Bazaar client.
 */
import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { withBazaar } from "@x402/extensions/bazaar";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureTokenAccount, fundWallet } from "../../src/sandbox/ledger/chain.js";
import { startSeller, stopAllSellers, type Seller } from "../helpers/sellers.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

interface Paid {
  status: number;
  body: any;
  /** The PAYMENT-SIGNATURE the client sent (undefined when it did not pay). */
  proof: string | undefined;
  receipt: any;
}

describe("stock sellers settle through the sandbox's facilitator", () => {
  let t: TestSandbox;
  let payer: KeyPairSigner;
  let payee: KeyPairSigner;
  let express: Seller;
  let hono: Seller;
  let pay: (url: string, init?: RequestInit) => Promise<Paid>;
  const bazaar = () => withBazaar(new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl })).extensions.bazaar;
  const listed = async () => (await bazaar().listResources({ type: "http" })).items.map((i) => i.resource);

  beforeAll(async () => {
    t = await startTestSandbox();
    payer = await generateKeyPairSigner();
    payee = await generateKeyPairSigner();
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 10_000_000n);
    await ensureTokenAccount(t.sb.ledger, t.sb.keys, payee.address, t.sb.asset);
    const common = { facilitatorUrl: t.sb.facilitatorUrl, network: t.sb.network, payTo: payee.address };
    [express, hono] = await Promise.all([
      startSeller({ ...common, framework: "express", bazaar: true }),
      startSeller({
        ...common,
        framework: "hono",
        routes: [
          { method: "GET", path: "/paid/data", price: "$0.01" },
          { method: "POST", path: "/paid/echo", price: "$0.02", bazaar: true },
        ],
      }),
    ]);
    const client = new x402Client().register("solana:*", new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl }));
    pay = async (url, init) => {
      let proof: string | undefined;
      const recording: typeof fetch = async (input, i) => {
        const request = new Request(input, i);
        proof = request.headers.get("payment-signature") ?? undefined;
        return fetch(request);
      };
      const res = await wrapFetchWithPayment(recording, client)(url, init);
      const header = res.headers.get("payment-response");
      return {
        status: res.status,
        body: await res.json().catch(() => undefined),
        proof,
        receipt: header ? decodePaymentResponseHeader(header) : undefined,
      };
    };
  });
  afterAll(async () => {
    await stopAllSellers();
    await t?.close();
  });

  it("HTTPFacilitatorClient.getSupported: the exact scheme on the sandbox's network, its fee payer, the Bazaar", async () => {
    const supported = await new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl }).getSupported();
    expect(supported.kinds).toEqual([
      { x402Version: 2, scheme: "exact", network: t.sb.network, extra: { feePayer: t.sb.keys.feePayer.address } },
    ]);
    expect(supported.extensions).toContain("bazaar");
    expect(supported.signers).toEqual({ "solana:*": [t.sb.keys.feePayer.address] });
  });

  it("an unpaid request gets the stock 402: the price in the sandbox's USDC, our fee payer", async () => {
    const res = await fetch(`${express.url}/paid/data`);
    expect(res.status).toBe(402);
    const challenge = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString("utf8"));
    expect(challenge.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: t.sb.network,
        amount: "10000",
        asset: t.sb.asset,
        payTo: payee.address,
        extra: expect.objectContaining({ feePayer: t.sb.keys.feePayer.address }),
      }),
    ]);
    expect(await listed()).not.toContain(`${express.url}/paid/data`);
  });

  for (const framework of ["express", "hono"] as const) {
    const seller = () => (framework === "express" ? express : hono);

    it(`${framework}: a paid GET returns the resource and moves exactly the price`, async () => {
      const [before, received] = [await t.usdc(payer.address), await t.usdc(payee.address)];
      const res = await pay(`${seller().url}/paid/data`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { route: "GET /paid/data", answer: 42 } });
      expect(res.receipt).toMatchObject({ success: true, network: t.sb.network, payer: payer.address });
      expect(t.sb.ledger.transaction(res.receipt.transaction)).toBeDefined();
      expect(await t.usdc(payer.address)).toBe(before - 10_000n);
      expect(await t.usdc(payee.address)).toBe(received + 10_000n);
    });

    it(`${framework}: a paid POST echoes its body and moves exactly the price`, async () => {
      const [before, received] = [await t.usdc(payer.address), await t.usdc(payee.address)];
      const res = await pay(`${seller().url}/paid/echo`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: `hello ${framework}` }),
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ message: `hello ${framework}` });
      expect(res.receipt.success).toBe(true);
      expect(await t.usdc(payer.address)).toBe(before - 20_000n);
      expect(await t.usdc(payee.address)).toBe(received + 20_000n);
    });

    it(`${framework}: a replayed proof is refused and moves nothing`, async () => {
      const first = await pay(`${seller().url}/paid/data`);
      expect(first.status).toBe(200);
      const [before, received] = [await t.usdc(payer.address), await t.usdc(payee.address)];
      const replay = await fetch(`${seller().url}/paid/data`, { headers: { "payment-signature": first.proof! } });
      expect(replay.status).toBe(402);
      expect(replay.headers.get("payment-response")).toBeNull();
      expect(await t.usdc(payer.address)).toBe(before);
      expect(await t.usdc(payee.address)).toBe(received);
    });
  }

  it("settling the same transaction again, straight at /settle, is a clean success:false", async () => {
    const first = await pay(`${express.url}/paid/data`);
    const payload = JSON.parse(Buffer.from(first.proof!, "base64").toString("utf8"));
    const client = new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl });
    const before = await t.usdc(payer.address);
    const again = await client.settle(payload, payload.accepted);
    expect(again).toMatchObject({ success: false, errorReason: "duplicate_settlement", transaction: "" });
    const verified = await client.verify(payload, payload.accepted);
    expect(verified).toMatchObject({ isValid: false, invalidReason: "duplicate_settlement" });
    expect(await t.usdc(payer.address)).toBe(before);
  });

  it("discovery lists a route after its first paid request when it declared the Bazaar, and only then", async () => {
    const items = (await bazaar().listResources()).items;
    const byUrl = new Map(items.map((i) => [i.resource, i]));
    const data = byUrl.get(`${express.url}/paid/data`)!;
    expect(data).toMatchObject({ type: "http", x402Version: 2, description: "Some paid data" });
    expect(data.accepts).toEqual([
      expect.objectContaining({ amount: "10000", asset: t.sb.asset, payTo: payee.address, network: t.sb.network }),
    ]);
    expect((data.extensions as any).bazaar.info.input).toMatchObject({ type: "http", method: "GET" });
    expect(Date.parse(data.lastUpdated)).toBeGreaterThan(0);
    expect((byUrl.get(`${express.url}/paid/echo`)!.extensions as any).bazaar.info.input.method).toBe("POST");
    expect(byUrl.has(`${hono.url}/paid/echo`)).toBe(true);
    // Paid, but declared without the Bazaar extension: never listed.
    expect(byUrl.has(`${hono.url}/paid/data`)).toBe(false);
  });

  it("discovery filters and pages as the Bazaar client asks", async () => {
    const all = await bazaar().listResources();
    expect(all.pagination).toEqual({ limit: 100, offset: 0, total: all.items.length });
    const page = await bazaar().listResources({ limit: 1, offset: 1 });
    expect(page.items).toEqual([all.items[1]]);
    expect(page.pagination).toEqual({ limit: 1, offset: 1, total: all.items.length });
    // Beside the sellers' routes, the sandbox's own two resources, listed from its start.
    const own = all.items.filter((i) => i.accepts[0]?.payTo === t.sb.keys.seller.address);
    expect(own.map((i) => new URL(i.resource).pathname).sort()).toEqual(["/x402/summarize", "/x402/weather"]);
    expect((await bazaar().listResources({ payTo: payee.address })).items.length).toBe(all.items.length - own.length);
    expect((await bazaar().listResources({ payTo: t.wallet.address })).items).toEqual([]);
    expect((await bazaar().listResources({ type: "mcp" })).items).toEqual([]);
    const found = await bazaar().search({ query: "echoes json" });
    expect(found.resources.map((r) => r.resource)).toEqual([`${express.url}/paid/echo`]);
  });

  it("a free route is served by the stock middleware without any payment", async () => {
    const res = await fetch(`${express.url}/free`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ free: true });
  });
});
