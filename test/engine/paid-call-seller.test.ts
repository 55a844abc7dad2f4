/**
 * The service's signed word on a paid action (x402 offer-receipt), against the reference
 * service over HTTP through a proxy, with a real journal: the offer in the quote's own
 * challenge (the fast path) or in /payments/prepare's, checked against the resource the
 * challenge names — the service's own URL, not the proxy's we call — and the receipt in the
 * execution's PAYMENT-RESPONSE, both kept, the result saying the seller signed. A tampered
 * offer is reported, not trusted, and the payment that is otherwise right goes through once;
 * a service that signs nothing is paid as before, its result without a seller.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseKeptWord } from "../../src/engine/evidence/seller.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const OFFER_RECEIPT = "offer-receipt";

/** A JWS whose payload says another amount, its signature left as it was. */
function tampered(jws: string): string {
  const [header, payload, signature] = jws.split(".") as [string, string, string];
  const stated = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
  const lie = Buffer.from(JSON.stringify({ ...stated, amount: "1" })).toString("base64url");
  return `${header}.${lie}.${signature}`;
}

/** A PAYMENT-RESPONSE header without its extensions. */
function withoutReceipt(header: string): string {
  const settled = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as Record<string, unknown>;
  delete settled.extensions;
  return Buffer.from(JSON.stringify(settled)).toString("base64");
}

describe("engine: the service's signed offer and receipt on a paid action", () => {
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

  const resourceUrl = () => `${t.sb.baseUrl}/executions`;

  it("the quote's signed offer and the execution's signed receipt are verified, kept, and said in the result", async () => {
    f = await engineFixture({ t });
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(paid.payment.seller).toEqual({
      signed: true,
      offer: "verified",
      receipt: "verified",
      signer: t.sb.sellerKey!.kid,
    });
    // Checked against the resource the service's challenge names, not the proxy the engine calls.
    expect(f.proxy.url).not.toBe(new URL(t.sb.baseUrl).origin);
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(intent.offer).toEqual({ resource: { url: resourceUrl() } });
    const word = (await f.pa.journal.sellerWord(paid.intentId))!;
    expect(parseKeptWord(word.offer)).toMatchObject({ state: "verified", signer: t.sb.sellerKey!.kid, problems: [] });
    expect(parseKeptWord(word.receipt)).toMatchObject({ state: "verified", signer: t.sb.sellerKey!.kid, problems: [] });
    // The fast path: no request for a fresher challenge.
    expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/prepare")).toHaveLength(0);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
  });

  it("a fresher challenge from /payments/prepare carries the offer checked and kept", async () => {
    f = await engineFixture({ t, open: { challengeMaxAgeMs: 0 } });
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/prepare").length).toBeGreaterThan(0);
    expect(paid.payment.seller).toMatchObject({ signed: true, offer: "verified", receipt: "verified" });
    expect((await f.pa.journal.intent(paid.intentId))!.offer).toEqual({ resource: { url: resourceUrl() } });
  });

  it("a tampered offer is reported as invalid, not trusted, and the payment that is otherwise right goes through once", async () => {
    f = await engineFixture({
      t,
      rules: [
        {
          match: on("POST", "/v1/quotes"),
          action: {
            kind: "rewrite",
            transform: (quote) => {
              for (const offer of quote.paymentRequirement.extensions[OFFER_RECEIPT].info.offers)
                offer.signature = tampered(offer.signature);
              return quote;
            },
          },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(paid.payment.seller).toMatchObject({ signed: false, offer: "invalid", receipt: "verified" });
    expect(paid.payment.seller!.problems!.join("; ")).toMatch(/signature does not hold/);
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
    expect(f.executionsFor(paid.quote.quoteId)).toBe(1);
    // Kept as received: the lie is in the journal, with our check of it.
    const offer = parseKeptWord((await f.pa.journal.sellerWord(paid.intentId))!.offer)!;
    expect(offer.state).toBe("invalid");
    const stated = JSON.parse(Buffer.from(offer.signed.signature.split(".")[1]!, "base64url").toString("utf8"));
    expect(stated.amount).toBe("1");
  });

  it("a service that signs nothing is paid as before: the result has no seller", async () => {
    f = await engineFixture({
      t,
      rules: [
        {
          match: on("POST", "/v1/quotes"),
          action: {
            kind: "rewrite",
            transform: (quote) => {
              delete quote.paymentRequirement.extensions;
              return quote;
            },
          },
        },
        {
          match: on("POST", "/v1/executions"),
          action: {
            kind: "rewrite",
            transform: (body, res) => {
              const header = res.headers["payment-response"];
              if (header) res.headers["payment-response"] = withoutReceipt(header);
              return body;
            },
          },
        },
      ],
    });
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(paid.payment).not.toHaveProperty("seller");
    expect(paid.payment.transaction).toBeTruthy();
    expect(await f.pa.journal.sellerWord(paid.intentId)).toBeUndefined();
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
  });
});
