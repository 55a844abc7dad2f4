/**
 * The facilitator's HTTP surface at its edges, and its settlements that end as they can on
 * a real cluster: malformed and unsupported requests, bounded bodies, the per-address rate
 * limit, discovery's parameters; a confirmation that times out (the stock seller's single
 * retry is answered from the ledger) and a transaction held in flight (reported settled once
 * it lands, exactly once).
 */
import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOLANA_MAINNET } from "../../src/domain/networks.js";
import { FacilitatorFaults } from "../../src/sandbox/index.js";
import { ensureTokenAccount, fundWallet } from "../../src/sandbox/ledger/chain.js";
import { PAID_RESOURCES } from "../../src/sandbox/resources/catalog.js";
import { startSeller, stopAllSellers } from "../helpers/sellers.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("the facilitator's HTTP surface", () => {
  let t: TestSandbox;
  let payer: KeyPairSigner;
  let payee: KeyPairSigner;
  let client: HTTPFacilitatorClient;
  const faults = new FacilitatorFaults();

  /** The sandbox's own resources (weather, summarize), which it lists from its start. */
  const own = (i: 0 | 1) => `${new URL(t.sb.baseUrl).origin}${PAID_RESOURCES[i]!.path}`;

  const post = (path: string, body: string, contentType = "application/json") =>
    fetch(`${t.sb.facilitatorUrl}${path}`, { method: "POST", headers: { "content-type": contentType }, body });

  /** A payment of `amount` to the payee, built by the stock client scheme against the facilitator's fee payer. */
  async function payment(amount: string): Promise<{ payload: PaymentPayload; requirements: PaymentRequirements }> {
    const requirements = {
      scheme: "exact",
      network: t.sb.network,
      amount,
      asset: t.sb.asset,
      payTo: payee.address,
      maxTimeoutSeconds: 60,
      extra: { feePayer: t.sb.keys.feePayer.address },
    } as PaymentRequirements;
    const built = await new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl }).createPaymentPayload(2, requirements);
    const payload = { ...built, accepted: requirements, resource: { url: "http://127.0.0.1:9/thing" } };
    return { payload: payload as PaymentPayload, requirements };
  }

  beforeAll(async () => {
    t = await startTestSandbox({ facilitatorFaults: faults });
    client = new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl });
    payer = await generateKeyPairSigner();
    payee = await generateKeyPairSigner();
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 1_000_000n);
    await ensureTokenAccount(t.sb.ledger, t.sb.keys, payee.address, t.sb.asset);
  });
  afterAll(async () => {
    await stopAllSellers();
    await t?.close();
  });

  it("a malformed request is answered 4xx in the shape the stock client reads as a failure", async () => {
    const verify = await post("/verify", "{}");
    expect(verify.status).toBe(400);
    expect(await verify.json()).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
    const settle = await post("/settle", "{not json");
    expect(settle.status).toBe(400);
    expect(await settle.json()).toMatchObject({ success: false, errorReason: "invalid_payload", transaction: "" });
    expect((await post("/settle", "x=1", "application/x-www-form-urlencoded")).status).toBe(415);
    expect((await post("/verify", JSON.stringify({ pad: "x".repeat(70_000) }))).status).toBe(413);
    const { payload, requirements } = await payment("1000");
    await expect(client.verify(payload, { ...requirements, amount: 5 } as never)).rejects.toThrow(/invalid_payload/);
  });

  it("unknown paths are 404 and a wrong method 405", async () => {
    expect((await fetch(`${t.sb.facilitatorUrl}/nothing`)).status).toBe(404);
    expect((await fetch(`${t.sb.facilitatorUrl}`)).status).toBe(404);
    const wrong = await fetch(`${t.sb.facilitatorUrl}/settle`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
  });

  it("another network or scheme is refused, nothing sent", async () => {
    const { payload, requirements } = await payment("1000");
    const mainnet = { ...requirements, network: SOLANA_MAINNET } as PaymentRequirements;
    expect(await client.verify(payload, mainnet)).toMatchObject({ isValid: false, invalidReason: "invalid_network" });
    expect(await client.settle(payload, { ...requirements, scheme: "upto" })).toMatchObject({
      success: false,
      errorReason: "unsupported_scheme",
    });
    expect(await t.usdc(payer.address)).toBe(1_000_000n);
  });

  it("discovery's limit and offset are bounded integers", async () => {
    for (const query of ["limit=0", "limit=1001", "limit=abc", "offset=-1", "offset=1.5"]) {
      const res = await fetch(`${t.sb.facilitatorUrl}/discovery/resources?${query}`);
      expect(res.status, query).toBe(400);
    }
    // Before any settlement the catalog holds only the sandbox's own resources, listed at start.
    const fresh = await (await fetch(`${t.sb.facilitatorUrl}/discovery/resources?limit=5`)).json();
    expect(fresh).toEqual({
      x402Version: 2,
      items: [expect.objectContaining({ resource: own(1) }), expect.objectContaining({ resource: own(0) })],
      pagination: { limit: 5, offset: 0, total: 2 },
    });
  });

  it("a settled payment is catalogued under its http(s) URL, query dropped, only with a valid Bazaar extension", async () => {
    const bazaar = declareDiscoveryExtension({
      input: { q: "x" },
      inputSchema: { properties: { q: { type: "string" } } },
    });
    (bazaar.bazaar!.info.input as { method?: string }).method = "GET";
    const settle = async (url: string, extensions?: Record<string, unknown>) => {
      const { payload, requirements } = await payment("1000");
      const result = await client.settle(
        { ...payload, resource: { url }, ...(extensions ? { extensions } : {}) },
        requirements,
      );
      expect(result.success).toBe(true);
    };
    await settle("http://127.0.0.1:9/listed?secret=1", bazaar);
    await settle("ftp://127.0.0.1/not-http", bazaar);
    await settle("http://127.0.0.1:9/no-extension");
    await settle("http://127.0.0.1:9/invalid", {
      bazaar: { info: { input: { type: "http" } }, schema: { type: "string" } },
    });
    // Lets its own (empty) schema pass, but has no input type to list: settled, not catalogued.
    await settle("http://127.0.0.1:9/shapeless", { bazaar: { info: { input: "http" }, schema: {} } });
    const listed: any = await (await fetch(`${t.sb.facilitatorUrl}/discovery/resources`)).json();
    expect(listed.items.map((i: any) => i.resource)).toEqual(["http://127.0.0.1:9/listed", own(1), own(0)]);
    expect(listed.items[0].extensions).toEqual(bazaar);
  });

  it("verify accepts a good payment and moves nothing", async () => {
    const { payload, requirements } = await payment("1000");
    const before = await t.usdc(payer.address);
    expect(await client.verify(payload, requirements)).toMatchObject({ isValid: true, payer: payer.address });
    expect(await t.usdc(payer.address)).toBe(before);
  });

  it("a confirmation that times out: the stock seller's one retry is answered from the ledger, paid once", async () => {
    const seller = await startSeller({
      framework: "express",
      facilitatorUrl: t.sb.facilitatorUrl,
      network: t.sb.network,
      payTo: payee.address,
    });
    const before = await t.usdc(payer.address);
    faults.pendingAfterSend(1);
    const scheme = new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl });
    const res = await wrapFetchWithPayment(
      fetch,
      new x402Client().register("solana:*", scheme),
    )(`${seller.url}/paid/data`);
    expect(res.status).toBe(200);
    expect(await t.usdc(payer.address)).toBe(before - 10_000n);
    await seller.stop();
  });

  it("a transaction held in flight: pending until it lands, then reported settled exactly once", async () => {
    const { payload, requirements } = await payment("7000");
    const before = await t.usdc(payer.address);
    faults.holdInFlight(1);
    const first = await client.settle(payload, requirements);
    expect(first).toMatchObject({ success: false, errorReason: "settlement_pending" });
    expect(first.transaction).not.toBe("");
    expect(await client.settle(payload, requirements)).toMatchObject({ success: false });
    expect(await t.usdc(payer.address)).toBe(before);
    expect(faults.landHeld().every((r) => r.ok)).toBe(true);
    // Landed: reported settled only against the terms it was sent for.
    const elsewhere = { ...requirements, payTo: payer.address };
    expect(await client.settle(payload, elsewhere)).toMatchObject({ errorReason: "duplicate_settlement" });
    const landed = await client.settle(payload, requirements);
    expect(landed).toMatchObject({ success: true, transaction: first.transaction, payer: payer.address });
    expect(await client.settle(payload, requirements)).toMatchObject({
      success: false,
      errorReason: "duplicate_settlement",
    });
    expect(await t.usdc(payer.address)).toBe(before - 7_000n);
  });
});

describe("the facilitator's rate limit", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox({ rateLimit: { perSecond: 0.5, burst: 2 } });
  });
  afterAll(() => t?.close());

  it("is per client address, answered 429 with Retry-After", async () => {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${t.sb.facilitatorUrl}/supported`);
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers.get("retry-after");
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
  });
});
