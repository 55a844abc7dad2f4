/**
 * The sandbox's own offer-receipt signing (src/sandbox/resources/offer-receipt.ts, a port)
 * held to the stock @x402/extensions it was ported from, a devDependency here: the offers in
 * each 402 and the receipt in a paid answer (paid by the stock @x402/fetch client) verify
 * with the package's own JWS verification, resolving the key from its did:key; the offer is
 * the package's match for the requirement, the receipt matches the offer and the payer; the
 * key is the one sandbox.json publishes. And what the engine's own checks (evidence/seller.ts)
 * make of them: verified.
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
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

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
});
