/**
 * The sandbox's own paid x402 resources (GET /x402/weather, POST /x402/summarize), served
 * through the stock x402 resource server and settled by the sandbox's facilitator, paid by
 * the stock @x402/fetch client; the Bazaar catalog that lists them from the start, across a
 * restart; and sandbox.json's facilitatorUrl.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { withBazaar } from "@x402/extensions/bazaar";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSandboxInfo } from "../../src/sandbox/index.js";
import { fundWallet } from "../../src/sandbox/ledger/chain.js";
import { summarize, weatherFor } from "../../src/sandbox/resources/catalog.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("the sandbox's own paid resources", () => {
  const home = mkdtempSync(join(tmpdir(), "pam-resources-"));
  let t: TestSandbox;
  let payer: KeyPairSigner;
  let root: string;
  let proofs: string[];

  /** Starts the sandbox on `home`; a restart listens where it did (as the embedded one does: app/sandbox.ts). */
  const start = async () => {
    t = await startTestSandbox({ home, port: t?.sb.port ?? 0 });
    root = t.sb.facilitatorUrl.replace(/\/facilitator$/, "");
  };
  const pay = async (path: string, init?: RequestInit) => {
    const client = new x402Client().register("solana:*", new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl }));
    const recording: typeof fetch = async (input, i) => {
      const request = new Request(input, i);
      const proof = request.headers.get("payment-signature");
      if (proof) proofs.push(proof);
      return fetch(request);
    };
    const res = await wrapFetchWithPayment(recording, client)(`${root}${path}`, init);
    const header = res.headers.get("payment-response");
    return { status: res.status, body: await res.json(), receipt: header ? decodePaymentResponseHeader(header) : null };
  };
  const listed = async () => {
    const bazaar = withBazaar(new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl })).extensions.bazaar;
    return (await bazaar.listResources()).items;
  };

  beforeAll(async () => {
    await start();
    payer = await generateKeyPairSigner();
    proofs = [];
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 1_000_000n);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("sandbox.json carries facilitatorUrl", () => {
    expect(t.sb.facilitatorUrl).toBe(`http://127.0.0.1:${t.sb.port}/facilitator`);
    expect(readSandboxInfo(home)?.facilitatorUrl).toBe(t.sb.facilitatorUrl);
  });

  it("a sandbox.json written before the facilitator is still read", () => {
    const old = mkdtempSync(join(tmpdir(), "pam-old-info-"));
    const info = JSON.parse(readFileSync(join(home, "sandbox.json"), "utf8"));
    delete info.facilitatorUrl;
    writeFileSync(join(old, "sandbox.json"), JSON.stringify(info));
    expect(readSandboxInfo(old)).toEqual(info);
    expect(readSandboxInfo(old)?.facilitatorUrl).toBeUndefined();
    rmSync(old, { recursive: true, force: true });
  });

  it("an input that is not valid is refused 400 before any payment is asked for", async () => {
    for (const [path, init] of [
      ["/x402/weather", undefined],
      ["/x402/weather?city=%3Cscript%3E", undefined],
      ["/x402/summarize", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }],
    ] as const) {
      const res = await fetch(`${root}${path}`, init);
      expect(res.status).toBe(400);
      expect(res.headers.get("payment-required")).toBeNull();
      expect(((await res.json()) as any).error.code).toBe("invalid_request");
    }
    expect((await fetch(`${root}/x402/weather?city=Oslo`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${root}/x402/nothing`)).status).toBe(404);
  });

  it("the 402 names the sandbox's own URL, the seller wallet and the price, whatever Host says", async () => {
    // node:http, not fetch: fetch would not send a Host header of our choosing.
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get({ host: "127.0.0.1", port: t.sb.port, path: "/x402/weather?city=Oslo", headers: { host: "evil.example" } })
        .on("response", resolve)
        .on("error", reject),
    );
    res.resume();
    expect(res.statusCode).toBe(402);
    const challenge = JSON.parse(Buffer.from(String(res.headers["payment-required"]), "base64").toString("utf8"));
    expect(challenge.resource.url).toBe(`${root}/x402/weather`);
    expect(challenge.accepts).toEqual([
      expect.objectContaining({ amount: "1000", asset: t.sb.asset, payTo: t.sb.keys.seller.address }),
    ]);
    expect(challenge.extensions.bazaar.info.input.queryParams).toEqual({ city: "Lisbon" });
  });

  it("GET /x402/weather, paid by the stock client: the report, 0.001 USDC to the seller wallet, listed before and after", async () => {
    // Listed from the sandbox's start, as its seller registered it: before anyone paid for it.
    expect((await listed()).map((i) => i.resource)).toContain(`${root}/x402/weather`);
    const seller = await t.usdc(t.sb.keys.seller.address);
    const res = await pay("/x402/weather?city=Oslo");
    expect(res.status).toBe(200);
    expect(res.body).toEqual(weatherFor("Oslo"));
    expect(res.receipt).toMatchObject({ success: true, payer: payer.address });
    expect(await t.usdc(t.sb.keys.seller.address)).toBe(seller + 1_000n);
    expect(await t.usdc(payer.address)).toBe(1_000_000n - 1_000n);
    const entry = (await listed()).find((i) => i.resource === `${root}/x402/weather`)!;
    expect(entry).toMatchObject({ description: expect.stringContaining("weather"), mimeType: "application/json" });
    expect(entry.accepts[0]).toMatchObject({ amount: "1000", payTo: t.sb.keys.seller.address });
  });

  it("POST /x402/summarize, paid: the first sentence and the word count, 0.01 USDC, then listed", async () => {
    const text = "Payments settle on the ledger. Everything else is simulated!  Really.";
    const res = await pay("/x402/summarize", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text }),
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ summary: "Payments settle on the ledger.", wordCount: 10 });
    expect(summarize(text)).toEqual(res.body);
    expect(await t.usdc(payer.address)).toBe(1_000_000n - 11_000n);
    const entry = (await listed()).find((i) => i.resource === `${root}/x402/summarize`)!;
    expect((entry.extensions as any).bazaar.info.input).toMatchObject({ method: "POST", bodyType: "json" });
  });

  it("after a restart the catalog is still there, and an old proof is still refused", async () => {
    const before = await listed();
    await t.close();
    await start();
    expect(await listed()).toEqual(before);
    const payload = JSON.parse(Buffer.from(proofs[0]!, "base64").toString("utf8"));
    const settled = await new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl }).settle(payload, payload.accepted);
    expect(settled).toMatchObject({ success: false, errorReason: "duplicate_settlement" });
    const replay = await fetch(`${root}/x402/weather?city=Oslo`, { headers: { "payment-signature": proofs[0]! } });
    expect(replay.status).toBe(402);
    expect(await t.usdc(payer.address)).toBe(1_000_000n - 11_000n);
  });
});
