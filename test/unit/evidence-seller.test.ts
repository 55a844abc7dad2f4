/**
 * The seller's signed word, checked without I/O (evidence/jws.ts, evidence/seller.ts): JWS
 * made by @x402/extensions' own signing (EdDSA by a did:key, ES256 by a did:jwk, ES256K by a
 * secp256k1 did:key) verify; a changed payload, another key's signature, a key on another
 * curve do not; a did:web key or an unknown algorithm is unchecked, never taken as valid. An
 * offer is verified only when it offers exactly what was paid for the resource asked for, and
 * a receipt only when it names this payer, network, resource and transaction, signed by the
 * offer's key.
 */
import { createPublicKey, ECDH, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { createOfferJWS, createReceiptJWS, type JWSSigner } from "@x402/extensions/offer-receipt";
import { describe, expect, it } from "vitest";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { verifyJws } from "../../src/engine/evidence/jws.js";
import { base58Encode } from "../../src/engine/evidence/owner.js";
import {
  checkOffer,
  checkReceipt,
  offerFor,
  offersOf,
  receiptOf,
  sellerSummary,
  type KeptWord,
  type SignedWord,
} from "../../src/engine/evidence/seller.js";

type Curve = "Ed25519" | "P-256" | "secp256k1";

/** A signer as the package takes one, over a fresh key of `curve`, named by a did:key (or a did:jwk). */
function signer(curve: Curve, naming: "did:key" | "did:jwk" = "did:key"): JWSSigner & { publicKey: KeyObject } {
  const pair =
    curve === "Ed25519"
      ? generateKeyPairSync("ed25519")
      : generateKeyPairSync("ec", { namedCurve: curve === "P-256" ? "prime256v1" : "secp256k1" });
  const jwk = pair.publicKey.export({ format: "jwk" });
  let kid: string;
  if (naming === "did:jwk") kid = `did:jwk:${Buffer.from(JSON.stringify(jwk)).toString("base64url")}`;
  else if (curve === "Ed25519")
    kid = `did:key:z${base58Encode(Uint8Array.from([0xed, 0x01, ...Buffer.from(jwk.x!, "base64url")]))}`;
  else {
    const raw = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
    const compressed = ECDH.convertKey(
      raw,
      curve === "P-256" ? "prime256v1" : "secp256k1",
      undefined,
      undefined,
      "compressed",
    ) as Buffer;
    const prefix = curve === "P-256" ? [0x80, 0x24] : [0xe7, 0x01];
    kid = `did:key:z${base58Encode(Uint8Array.from([...prefix, ...compressed]))}`;
  }
  const algorithm = curve === "Ed25519" ? "EdDSA" : curve === "P-256" ? "ES256" : "ES256K";
  return {
    kid,
    format: "jws",
    algorithm,
    publicKey: pair.publicKey,
    sign: async (bytes) =>
      (curve === "Ed25519"
        ? sign(null, bytes, pair.privateKey)
        : sign("sha256", bytes, { key: pair.privateKey, dsaEncoding: "ieee-p1363" })
      ).toString("base64url"),
  };
}

const URL_ASKED = "https://seller.example/paid/data?key=secret";
const REQ: PaymentRequirements = {
  scheme: "exact",
  network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  amount: "10000",
  asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
  payTo: "7etkwaFCDduKe3WiRunTwJj33UWJZpnNZ81NDyFQUYYb",
  maxTimeoutSeconds: 60,
  extra: {},
};
const PAYER = "3w3FVLs69QAoMTzaaTe1mpeFJwHyyuNidvAnNFTwkMas";
const TX = "5ZWbqs9JUEkQmexciuxJ6ygtehMVakN61vhjRTRpiyVxPNyjHf8nzJVmk6HSvFymyxpN5hhTDyKEfGa9mxMQMKSD";

const offerBy = (s: JWSSigner, over: Partial<PaymentRequirements> = {}, url = "https://seller.example/paid/data") =>
  createOfferJWS(url, { acceptIndex: 0, ...REQ, ...over }, s) as Promise<SignedWord>;

/** A JWS with its payload swapped for `change(payload)`, its signature kept. */
function tampered(w: SignedWord, change: (p: Record<string, unknown>) => void): SignedWord {
  const [h, p, sig] = w.signature.split(".");
  const payload = JSON.parse(Buffer.from(p!, "base64url").toString("utf8"));
  change(payload);
  return { ...w, signature: `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}` };
}

describe("JWS, checked with node:crypto", () => {
  it.each([
    ["EdDSA by a did:key", "Ed25519", "did:key"],
    ["ES256 by a did:key", "P-256", "did:key"],
    ["ES256 by a did:jwk", "P-256", "did:jwk"],
    ["ES256K by a did:key", "secp256k1", "did:key"],
  ] as const)("%s, signed by @x402/extensions, verifies; changed, it does not", async (_what, curve, naming) => {
    const s = signer(curve, naming);
    const offer = await offerBy(s);
    expect(verifyJws(offer.signature)).toMatchObject({ ok: true, kid: s.kid, payload: { amount: "10000" } });
    const changed = tampered(offer, (p) => (p.amount = "1"));
    expect(verifyJws(changed.signature)).toMatchObject({ ok: false, problem: "signature" });
  });

  it("another key's signature under this kid, a key on another curve, a did:web key, an unknown algorithm, garbage", async () => {
    const [a, b] = [signer("Ed25519"), signer("Ed25519")];
    const byB = await offerBy(b);
    const [h, p, sig] = byB.signature.split(".");
    const header = JSON.parse(Buffer.from(h!, "base64url").toString("utf8"));
    const reHeader = (o: Record<string, unknown>) =>
      `${Buffer.from(JSON.stringify({ ...header, ...o })).toString("base64url")}.${p}.${sig}`;
    expect(verifyJws(reHeader({ kid: a.kid }))).toMatchObject({ ok: false, problem: "signature" });
    expect(verifyJws(reHeader({ alg: "ES256" }))).toMatchObject({ ok: false, problem: "signature" });
    expect(verifyJws(reHeader({ kid: "did:web:seller.example#key-1" }))).toMatchObject({
      ok: false,
      problem: "unchecked",
      detail: expect.stringMatching(/did:web.*not fetched/),
    });
    expect(verifyJws(reHeader({ alg: "HS256" }))).toMatchObject({ ok: false, problem: "unchecked" });
    expect(verifyJws(reHeader({ kid: undefined }))).toMatchObject({ ok: false, problem: "unchecked" });
    expect(verifyJws("not.a.jws!")).toMatchObject({ ok: false, problem: "format" });
    expect(verifyJws("a.b")).toMatchObject({ ok: false, problem: "format" });
  });
});

describe("the offer, against what was paid", () => {
  const s = signer("Ed25519");
  const at = Date.now();
  it("verified when it offers exactly the requirement paid, for the resource asked for", async () => {
    const kept = await checkOffer(await offerBy(s), { requirement: REQ, url: URL_ASKED, at });
    expect(kept).toMatchObject({ state: "verified", signer: s.kid, problems: [] });
  });
  it.each([
    ["payTo", { payTo: "11111111111111111111111111111111" }, /payTo/],
    ["amount", { amount: "9999" }, /amount 9999/],
    ["asset", { asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" }, /asset/],
    ["network", { network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }, /network/],
    ["scheme", { scheme: "upto" }, /scheme/],
  ] as const)("a signed offer of another %s is a mismatch, named", async (_f, over, named) => {
    const kept = await checkOffer(await offerBy(s, over), { requirement: REQ, url: URL_ASKED, at });
    expect(kept.state).toBe("mismatch");
    expect(kept.problems.join("; ")).toMatch(named);
  });
  it("another resource, an expired offer: mismatches; a tampered one: invalid, whatever it says", async () => {
    const other = await checkOffer(await offerBy(s, {}, "https://seller.example/other"), {
      requirement: REQ,
      url: URL_ASKED,
      at,
    });
    expect(other).toMatchObject({ state: "mismatch", problems: [expect.stringMatching(/another resource/)] });
    const expired = await checkOffer(await offerBy(s), { requirement: REQ, url: URL_ASKED, at: at + 3_600_000 });
    expect(expired).toMatchObject({ state: "mismatch", problems: [expect.stringMatching(/valid until/)] });
    const forged = tampered(
      await offerBy(s, { payTo: "11111111111111111111111111111111" }),
      (p) => (p.payTo = REQ.payTo),
    );
    expect(await checkOffer(forged, { requirement: REQ, url: URL_ASKED, at })).toMatchObject({
      state: "invalid",
      signer: null,
    });
  });
  it("an EIP-712 offer is unchecked in this build (no EVM rail), or checked by the recovery given", async () => {
    const payload = {
      version: 1,
      resourceUrl: "https://seller.example/paid/data",
      ...REQ,
      validUntil: Math.floor(at / 1000) + 60,
    };
    const w: SignedWord = { format: "eip712", payload, signature: "0x00" };
    expect(await checkOffer(w, { requirement: REQ, url: URL_ASKED, at })).toMatchObject({ state: "unchecked" });
    const recovered = await checkOffer(w, { requirement: REQ, url: URL_ASKED, at }, async () => "0xSeller");
    expect(recovered).toMatchObject({ state: "verified", signer: "0xSeller" });
  });
  it("the offer for the requirement paid: the hinted one when it matches, else the one that does", async () => {
    const good = await offerBy(s);
    const wrong = { ...(await offerBy(s, { amount: "1" })), acceptIndex: 0 };
    expect(offerFor([wrong, { ...good, acceptIndex: 1 }], REQ, 0)).toEqual({ ...good, acceptIndex: 1 });
    expect(offerFor([good], REQ, 0)).toEqual(good);
    expect(offerFor([], REQ, 0)).toBeUndefined();
    expect(offersOf({ "offer-receipt": { info: { offers: [good, { format: "nope" }] } } })).toEqual([good]);
    expect(offersOf(undefined)).toEqual([]);
  });
});

describe("the receipt, against the offer and the payment", () => {
  const s = signer("P-256", "did:jwk");
  const now = Date.now();
  const receiptBy = (
    by: JWSSigner,
    o: Partial<{ payer: string; network: string; transaction: string; resourceUrl: string }> = {},
  ) =>
    createReceiptJWS(
      {
        resourceUrl: o.resourceUrl ?? "https://seller.example/paid/data",
        payer: o.payer ?? PAYER,
        network: o.network ?? REQ.network,
        transaction: o.transaction ?? TX,
      },
      by,
    ) as Promise<SignedWord>;
  const expected = async (offer?: KeptWord) => ({
    offer: offer ?? (await checkOffer(await offerBy(s), { requirement: REQ, url: URL_ASKED, at: now })),
    url: URL_ASKED,
    network: REQ.network,
    payer: PAYER,
    transaction: TX,
    signedAt: now - 10_000,
    at: now + 10_000,
  });
  it("verified when it names this payer, network, resource and transaction, by the offer's key", async () => {
    expect(await checkReceipt(await receiptBy(s), await expected())).toMatchObject({ state: "verified", problems: [] });
    expect(receiptOf({ "offer-receipt": { info: { receipt: await receiptBy(s) } } })).toMatchObject({ format: "jws" });
  });
  it.each([
    ["another payer", { payer: "11111111111111111111111111111111" }, /payer/],
    ["another network", { network: "eip155:8453" }, /network/],
    ["another transaction", { transaction: "1".repeat(88) }, /transaction/],
    ["another resource", { resourceUrl: "https://seller.example/other" }, /another resource/],
  ] as const)("%s is a mismatch, named", async (_what, o, named) => {
    const kept = await checkReceipt(await receiptBy(s, o), await expected());
    expect(kept.state).toBe("mismatch");
    expect(kept.problems.join("; ")).toMatch(named);
  });
  it("signed by another key than the offer's: a mismatch; the summary says the seller did not sign", async () => {
    const kept = await checkReceipt(await receiptBy(signer("P-256", "did:jwk")), await expected());
    expect(kept).toMatchObject({ state: "mismatch", problems: [expect.stringMatching(/who signed the offer/)] });
    const offer = (await expected()).offer;
    expect(sellerSummary(offer, kept)).toMatchObject({ signed: false, offer: "verified", receipt: "mismatch" });
    expect(sellerSummary(undefined, undefined)).toMatchObject({ signed: false, offer: "absent", receipt: "absent" });
  });
  it("issued long before the payment, or after it arrived: a mismatch", async () => {
    const kept = await checkReceipt(await receiptBy(s), {
      ...(await expected()),
      signedAt: now + 3_600_000,
      at: now + 3_700_000,
    });
    expect(kept).toMatchObject({ state: "mismatch", problems: [expect.stringMatching(/issued at/)] });
  });
});

// A key object is what signer() keeps: used only to show the did:jwk carries the public half.
it("a did:jwk names the signer's public key, and nothing private", () => {
  const s = signer("P-256", "did:jwk");
  const jwk = JSON.parse(Buffer.from(s.kid.slice("did:jwk:".length), "base64url").toString("utf8"));
  expect(jwk.d).toBeUndefined();
  expect(createPublicKey({ key: jwk, format: "jwk" }).equals(s.publicKey)).toBe(true);
});
