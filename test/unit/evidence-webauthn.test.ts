/**
 * Passkey ceremonies checked on the server (engine/evidence/webauthn.ts, cbor.ts, cose.ts,
 * owner.ts, kept.ts), against a software authenticator: a registration and an assertion pass
 * for ES256, EdDSA and RS256, and each thing that must be refused is refused by name.
 */
import { describe, expect, it } from "vitest";
import { CborError, decodeCbor } from "../../src/engine/evidence/cbor.js";
import { parseKept, verifyKept, type KeptAssertion } from "../../src/engine/evidence/kept.js";
import {
  addressOfKeypair,
  base58Decode,
  base58Encode,
  ownerStatement,
  signStatement,
  verifyStatement,
} from "../../src/engine/evidence/owner.js";
import { termsChallenge } from "../../src/engine/evidence/terms.js";
import {
  counterAdvances,
  verifyAssertion,
  verifyRegistration,
  type Expected,
} from "../../src/engine/evidence/webauthn.js";
import { generateKeypairBytes } from "../../src/domain/keypair.js";
import { encodeCbor, softAuthenticator, type Alg } from "../helpers/authenticator.js";

const ORIGIN = "http://localhost:4321";
const expect4321 = (challenge: string): Expected => ({ challenge, origin: (o) => o === ORIGIN });

describe("registration", () => {
  for (const alg of ["ES256", "EdDSA", "RS256"] as Alg[]) {
    it(`accepts a ${alg} passkey made for our challenge on the console, user verified`, () => {
      const a = softAuthenticator(alg);
      const r = verifyRegistration(a.register({ challenge: "reg-1", origin: ORIGIN }), expect4321("reg-1"));
      expect(r).toEqual({
        ok: true,
        credential: {
          credentialId: a.credentialId,
          publicKey: a.publicKey,
          algorithm: { ES256: -7, EdDSA: -8, RS256: -257 }[alg],
          signCount: 0,
        },
      });
    });
  }

  it("refuses another challenge, another origin, another RP ID, no UV, no UP, a get made as a create", () => {
    const a = softAuthenticator();
    const cases: Array<[Parameters<typeof a.register>[0], string]> = [
      [{ challenge: "other", origin: ORIGIN }, "challenge"],
      [{ challenge: "reg-1", origin: "http://localhost:9999" }, "origin"],
      [{ challenge: "reg-1", origin: "http://127.0.0.1:4321" }, "origin"],
      [{ challenge: "reg-1", origin: ORIGIN, rpId: "evil.example" }, "rp_id"],
      [{ challenge: "reg-1", origin: ORIGIN, uv: false }, "user_verification"],
      [{ challenge: "reg-1", origin: ORIGIN, up: false }, "user_presence"],
      [{ challenge: "reg-1", origin: ORIGIN, type: "webauthn.get" }, "type"],
    ];
    for (const [ceremony, problem] of cases)
      expect(verifyRegistration(a.register(ceremony), expect4321("reg-1")), problem).toEqual({ ok: false, problem });
  });

  it("refuses what is not an attestation: bad base64url, not CBOR, trailing bytes, a float", () => {
    const good = softAuthenticator().register({ challenge: "c", origin: ORIGIN });
    const bad = [
      { ...good, attestationObject: "not base64url!" },
      { ...good, attestationObject: Buffer.from([0xff]).toString("base64url") },
      {
        ...good,
        attestationObject: Buffer.concat([Buffer.from(good.attestationObject, "base64url"), Buffer.from([0])]).toString(
          "base64url",
        ),
      },
      { ...good, attestationObject: Buffer.from([0xfb, 0, 0, 0, 0, 0, 0, 0, 0]).toString("base64url") },
      { ...good, clientDataJSON: Buffer.from("not json").toString("base64url") },
    ];
    for (const r of bad) expect(verifyRegistration(r, expect4321("c"))).toEqual({ ok: false, problem: "format" });
  });
});

describe("assertions", () => {
  for (const alg of ["ES256", "EdDSA", "RS256"] as Alg[]) {
    it(`verifies a ${alg} assertion over our challenge and reads its counter`, () => {
      const a = softAuthenticator(alg, { counter: 5 });
      const r = verifyAssertion(
        a.assert({ challenge: "t-1", origin: ORIGIN }),
        { ...a, signCount: 5 },
        expect4321("t-1"),
      );
      expect(r).toEqual({ ok: true, signCount: 6 });
    });
  }

  it("refuses other terms, another origin or RP ID, no UV, no UP, another key, a tampered signature", () => {
    const a = softAuthenticator();
    const other = softAuthenticator();
    const key = { credentialId: a.credentialId, publicKey: a.publicKey, signCount: 0 };
    const run = (c: Parameters<typeof a.assert>[0]) => verifyAssertion(a.assert(c), key, expect4321("t-1"));
    expect(run({ challenge: "t-2", origin: ORIGIN })).toEqual({ ok: false, problem: "challenge" });
    expect(run({ challenge: "t-1", origin: "http://localhost:1" })).toEqual({ ok: false, problem: "origin" });
    expect(run({ challenge: "t-1", origin: ORIGIN, rpId: "example.com" })).toEqual({ ok: false, problem: "rp_id" });
    expect(run({ challenge: "t-1", origin: ORIGIN, uv: false })).toEqual({ ok: false, problem: "user_verification" });
    expect(run({ challenge: "t-1", origin: ORIGIN, up: false })).toEqual({ ok: false, problem: "user_presence" });
    expect(run({ challenge: "t-1", origin: ORIGIN, type: "webauthn.create" })).toEqual({ ok: false, problem: "type" });
    // Signed by another authenticator, presented under this credential's id and key.
    const forged = { ...other.assert({ challenge: "t-1", origin: ORIGIN }), credentialId: a.credentialId };
    expect(verifyAssertion(forged, key, expect4321("t-1"))).toEqual({ ok: false, problem: "signature" });
    // An unregistered credential.
    expect(verifyAssertion(other.assert({ challenge: "t-1", origin: ORIGIN }), key, expect4321("t-1"))).toEqual({
      ok: false,
      problem: "credential",
    });
    const good = a.assert({ challenge: "t-1", origin: ORIGIN });
    const sig = Buffer.from(good.signature, "base64url");
    sig[sig.length - 1]! ^= 1;
    expect(verifyAssertion({ ...good, signature: sig.toString("base64url") }, key, expect4321("t-1")).ok).toBe(false);
    // The flags byte flipped to claim UV after signing: the signature covers it.
    const noUv = a.assert({ challenge: "t-1", origin: ORIGIN, uv: false });
    const auth = Buffer.from(noUv.authenticatorData, "base64url");
    auth[32] = auth[32]! | 0x04;
    expect(verifyAssertion({ ...noUv, authenticatorData: auth.toString("base64url") }, key, expect4321("t-1"))).toEqual(
      {
        ok: false,
        problem: "signature",
      },
    );
  });

  it("a counter must go up, unless the authenticator keeps none (0 and 0)", () => {
    expect(counterAdvances(0, 0)).toBe(true);
    expect(counterAdvances(0, 1)).toBe(true);
    expect(counterAdvances(5, 6)).toBe(true);
    expect(counterAdvances(5, 5)).toBe(false);
    expect(counterAdvances(5, 4)).toBe(false);
    expect(counterAdvances(5, 0)).toBe(false);
  });
});

describe("the CBOR reader", () => {
  it("reads maps, arrays, text, bytes and integers; refuses what WebAuthn never sends", () => {
    const m = decodeCbor(
      encodeCbor(
        new Map<number | string, never>([
          [1, 2 as never],
          ["a", [-1, "x", new Uint8Array([7])] as never],
        ]),
      ),
    );
    expect(m).toEqual(
      new Map<unknown, unknown>([
        [1, 2],
        ["a", [-1, "x", new Uint8Array([7])]],
      ]),
    );
    const refuse = (bytes: number[]) => expect(() => decodeCbor(Uint8Array.from(bytes))).toThrow(CborError);
    refuse([0x9f, 0xff]); // indefinite array
    refuse([0xc0, 0x00]); // a tag
    refuse([0xf9, 0, 0]); // a float
    refuse([0x18, 0x01]); // 1 not in its shortest form
    refuse([0xa2, 0x01, 0x00, 0x01, 0x00]); // duplicate key
    refuse([0x62, 0xc3, 0x28]); // invalid UTF-8
    refuse([0x5a, 0xff, 0xff, 0xff, 0xff]); // bytes longer than the data
    refuse([0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]); // beyond 2^53
    refuse(Array(20).fill(0x81).concat([0])); // nested too deeply
  });
});

describe("the owner's word, and a kept assertion checked offline", () => {
  it("base58 round-trips, leading zeros included", () => {
    for (const b of [new Uint8Array([0, 0, 1, 2, 255]), new Uint8Array(32).fill(9), new Uint8Array([0])])
      expect(base58Decode(base58Encode(b))).toEqual(b);
    expect(base58Decode("0OIl")).toBeUndefined();
  });

  it("verifies the owner's signature of the statement, and nothing else", () => {
    const keypair = generateKeypairBytes();
    const owner = addressOfKeypair(keypair);
    const a = softAuthenticator();
    const statement = ownerStatement({
      credentialId: a.credentialId,
      publicKey: a.publicKey,
      owner,
      rpId: "localhost",
    });
    const sig = signStatement(statement, keypair);
    expect(verifyStatement(statement, owner, sig)).toBe(true);
    expect(verifyStatement(statement, owner, Buffer.from(base58Decode(sig)!).toString("base64"))).toBe(true);
    expect(verifyStatement(`${statement}\n`, owner, sig)).toBe(false);
    expect(verifyStatement(statement, addressOfKeypair(generateKeypairBytes()), sig)).toBe(false);
  });

  it("a kept assertion verifies on its own; changed terms, a changed key or a false owner signature do not", () => {
    const keypair = generateKeypairBytes();
    const owner = addressOfKeypair(keypair);
    const a = softAuthenticator("ES256", { counter: 1 });
    const terms = '{"amount":"2.50","approvalId":"apr_1"}';
    const challenge = termsChallenge(terms);
    const got = a.assert({ challenge, origin: ORIGIN });
    const statement = ownerStatement({
      credentialId: a.credentialId,
      publicKey: a.publicKey,
      owner,
      rpId: "localhost",
    });
    const kept: KeptAssertion = {
      v: 1,
      rpId: "localhost",
      origin: ORIGIN,
      terms,
      challenge,
      credential: {
        id: a.credentialId,
        publicKey: a.publicKey,
        algorithm: -7,
        owner,
        ownerSignature: signStatement(statement, keypair),
      },
      authenticatorData: got.authenticatorData,
      clientDataJSON: got.clientDataJSON,
      signature: got.signature,
      signCount: 2,
      verifiedAt: new Date(0).toISOString(),
    };
    expect(parseKept(JSON.stringify(kept))).toEqual(kept);
    expect(verifyKept(kept)).toEqual({ ok: true, owner: "bound" });
    expect(verifyKept({ ...kept, credential: { ...kept.credential, owner: null, ownerSignature: null } })).toEqual({
      ok: true,
      owner: "unbound",
    });
    const other = addressOfKeypair(generateKeypairBytes());
    expect(verifyKept({ ...kept, credential: { ...kept.credential, owner: other } })).toEqual({
      ok: true,
      owner: "invalid",
    });
    expect(verifyKept({ ...kept, terms: '{"amount":"25.00","approvalId":"apr_1"}' })).toEqual({
      ok: false,
      problem: "challenge",
    });
    const b = softAuthenticator();
    expect(verifyKept({ ...kept, credential: { ...kept.credential, publicKey: b.publicKey } })).toEqual({
      ok: false,
      problem: "signature",
    });
    expect(parseKept("{}")).toBeUndefined();
    expect(parseKept("not json")).toBeUndefined();
  });
});
