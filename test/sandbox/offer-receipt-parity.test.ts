/**
 * The sandbox's own offer-receipt signing (src/sandbox/resources/offer-receipt.ts, a port)
 * held to the stock @x402/extensions it was ported from, a devDependency here: the offers in
 * each 402 and the receipt in a paid answer (paid by the stock @x402/fetch client) verify
 * with the package's own JWS verification, resolving the key from its did:key; the offer is
 * the package's match for the requirement, the receipt matches the offer and the payer; the
 * key is the one sandbox.json publishes. The v1 service signs its word the same way: offers in
 * each quote, /payments/prepare and 402 of POST /executions (for the executions resource the
 * challenge names), a receipt in the PAYMENT-RESPONSE of the paid answer. And what the engine's
 * own checks (evidence/seller.ts) make of them: verified.
 */
import { generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import {
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureJWS,
  type JWSSignedOffer,
  type JWSSignedReceipt,
} from "@x402/extensions/offer-receipt";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOffer, checkReceipt, SignedWord } from "../../src/engine/evidence/seller.js";
import { readSandboxInfo } from "../../src/sandbox/index.js";
import { fundWallet } from "../../src/sandbox/ledger/chain.js";
import { SERVER_INPUT, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("the sandbox's signed offers and receipts, held to @x402/extensions", () => {
  let t: TestSandbox;
  let payer: KeyPairSigner;
  let root: string;
  beforeAll(async () => {
    t = await startTestSandbox();
    root = t.sb.facilitatorUrl.replace(/\/facilitator$/, "");
    payer = await generateKeyPairSigner();
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 1_000_000n);
  });
  afterAll(() => t?.close());

  it("each 402 carries an offer per way to pay, signed by the published key, that the package verifies and matches", async () => {
    const key = readSandboxInfo(t.sb.home)!.sellerKey!;
    expect(key.kid).toMatch(/^did:key:z6Mk/);
    const res = await fetch(`${root}/x402/weather?city=Oslo`);
    expect(res.status).toBe(402);
    const challenge = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString("utf8"));
    const offers = extractOffersFromPaymentRequired(challenge);
    expect(offers.length).toBe(challenge.accepts.length);
    for (const [i, offer] of offers.entries()) {
      expect(offer).toMatchObject({ format: "jws", acceptIndex: i });
      const payload = await verifyOfferSignatureJWS(offer as JWSSignedOffer);
      expect(payload).toMatchObject({ version: 1, resourceUrl: `${root}/x402/weather`, amount: "1000" });
      // The same with the key sandbox.json publishes, given rather than resolved.
      expect(await verifyOfferSignatureJWS(offer as JWSSignedOffer, key.publicKeyJwk)).toEqual(payload);
      expect(findAcceptsObjectFromSignedOffer(offer, challenge.accepts)).toEqual(challenge.accepts[i]);
      const ours = await checkOffer(SignedWord.parse(offer), {
        requirement: challenge.accepts[i],
        url: `${root}/x402/weather?city=Oslo`,
        at: Date.now(),
      });
      expect(ours).toMatchObject({ state: "verified", signer: key.kid, problems: [] });
    }
  });

  it("a paid answer carries a receipt the package verifies and matches to the offer and the payer", async () => {
    const seen: Response[] = [];
    const recording: typeof fetch = async (input, init) => {
      const r = await fetch(input, init);
      seen.push(r.clone());
      return r;
    };
    const client = new x402Client().register("solana:*", new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl }));
    const res = await wrapFetchWithPayment(recording, client)(`${root}/x402/weather?city=Lisbon`);
    expect(res.status).toBe(200);
    const challenge = JSON.parse(Buffer.from(seen[0]!.headers.get("payment-required")!, "base64").toString("utf8"));
    const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(challenge));
    const receipt = extractReceiptFromResponse(res) as JWSSignedReceipt;
    expect(receipt.format).toBe("jws");
    const payload = await verifyReceiptSignatureJWS(receipt);
    expect(payload).toMatchObject({ version: 1, payer: payer.address, resourceUrl: `${root}/x402/weather` });
    expect(payload.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,90}$/);
    expect(verifyReceiptMatchesOffer(receipt, offer!, [payer.address])).toBe(true);

    const keptOffer = await checkOffer(SignedWord.parse(offer!.signedOffer), {
      requirement: challenge.accepts[0],
      url: `${root}/x402/weather`,
      at: Date.now(),
    });
    const ours = await checkReceipt(receipt, {
      offer: keptOffer,
      url: `${root}/x402/weather?city=Lisbon`,
      network: t.sb.network,
      payer: payer.address,
      transaction: payload.transaction,
      signedAt: Date.now() - 60_000,
      at: Date.now(),
    });
    expect(ours).toMatchObject({ state: "verified", problems: [] });
  });

  it("the v1 service signs its word: offers in its quote, prepare and 402, a receipt in its paid answer's PAYMENT-RESPONSE", async () => {
    const key = readSandboxInfo(t.sb.home)!.sellerKey!;
    const resourceUrl = `${t.sb.baseUrl}/executions`;
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    expect(quote.paymentRequirement).toMatchObject({ resource: "/executions", resourceUrl });
    const prepared = await t.call("POST", "/payments/prepare", { body: { quoteId: quote.quoteId } });
    expect(prepared.status).toBe(200);
    const headers = { "x-quote-id": quote.quoteId, "idempotency-key": `word-${quote.quoteId}` };
    const body = { action: "servers.provision", input: SERVER_INPUT };
    const unpaid = await t.call("POST", "/executions", { body, headers });
    expect(unpaid.status).toBe(402);
    const challenge = unpaid.body.error.paymentRequired;
    for (const signed of [quote.paymentRequirement, prepared.body.paymentRequired, challenge]) {
      const offers = extractOffersFromPaymentRequired(signed);
      expect(offers.length).toBe(signed.accepts.length);
      for (const [i, offer] of offers.entries()) {
        const payload = await verifyOfferSignatureJWS(offer as JWSSignedOffer, key.publicKeyJwk);
        expect(payload).toMatchObject({ version: 1, resourceUrl, amount: "288000", payTo: signed.accepts[i].payTo });
        expect(findAcceptsObjectFromSignedOffer(offer, signed.accepts)).toEqual(signed.accepts[i]);
        const ours = await checkOffer(SignedWord.parse(offer), {
          requirement: signed.accepts[i],
          url: resourceUrl,
          at: Date.now(),
        });
        expect(ours).toMatchObject({ state: "verified", signer: key.kid, problems: [] });
      }
    }

    // The stock client pays the 402 of POST /executions; the 201's PAYMENT-RESPONSE carries the receipt.
    const client = new x402Client().register("solana:*", new ExactSvmScheme(payer, { rpcUrl: t.sb.rpcUrl }));
    const res = await wrapFetchWithPayment(fetch, client)(resourceUrl, {
      method: "POST",
      headers: { authorization: `Bearer ${t.sb.apiKey}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    const receipt = extractReceiptFromResponse(res) as JWSSignedReceipt;
    const payload = await verifyReceiptSignatureJWS(receipt);
    expect(payload).toMatchObject({ version: 1, payer: payer.address, resourceUrl, network: t.sb.network });
    const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(challenge));
    expect(verifyReceiptMatchesOffer(receipt, offer!, [payer.address])).toBe(true);
    const ours = await checkReceipt(receipt, {
      offer: undefined,
      url: resourceUrl,
      network: t.sb.network,
      payer: payer.address,
      transaction: payload.transaction ?? null,
      signedAt: Date.now() - 60_000,
      at: Date.now(),
    });
    expect(ours).toMatchObject({ state: "verified", signer: key.kid, problems: [] });
  });
});
