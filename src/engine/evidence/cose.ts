/**
 * A credential's public key as WebAuthn gives it (a COSE_Key, RFC 9052/9053) turned into a
 * node:crypto key, and the one signature check every assertion gets: ES256 (-7, P-256 with
 * SHA-256, the signature DER-encoded as WebAuthn sends it), EdDSA (-8, Ed25519) and RS256
 * (-257, RSASSA-PKCS1-v1_5 with SHA-256). Any other algorithm or curve is refused.
 */
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { CborError, decodeCbor, isCborMap, type CborMap } from "./cbor.js";

export const COSE_ALGORITHMS = { ES256: -7, EdDSA: -8, RS256: -257 } as const;
export type CoseAlgorithm = (typeof COSE_ALGORITHMS)[keyof typeof COSE_ALGORITHMS];

/** A COSE key we can verify with: its algorithm and the node:crypto key. */
export interface CoseKey {
  algorithm: CoseAlgorithm;
  key: KeyObject;
}

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

function bytesAt(m: CborMap, label: number, length?: number): Uint8Array {
  const v = m.get(label);
  if (!(v instanceof Uint8Array) || (length !== undefined && v.length !== length))
    throw new CborError(`COSE key parameter ${label} is not ${length ?? "a"} byte${length === 1 ? "" : "s"}`);
  return v;
}

/** The JWK of a COSE key of a supported algorithm (kty 1 OKP, 2 EC2, 3 RSA). */
function jwkOf(m: CborMap): { algorithm: CoseAlgorithm; jwk: Record<string, string> } {
  const kty = m.get(1);
  const alg = m.get(3);
  if (alg === COSE_ALGORITHMS.ES256 && kty === 2) {
    if (m.get(-1) !== 1) throw new CborError("an ES256 key not on P-256");
    return {
      algorithm: alg,
      jwk: { kty: "EC", crv: "P-256", x: b64u(bytesAt(m, -2, 32)), y: b64u(bytesAt(m, -3, 32)) },
    };
  }
  if (alg === COSE_ALGORITHMS.EdDSA && kty === 1) {
    if (m.get(-1) !== 6) throw new CborError("an EdDSA key not on Ed25519");
    return { algorithm: alg, jwk: { kty: "OKP", crv: "Ed25519", x: b64u(bytesAt(m, -2, 32)) } };
  }
  if (alg === COSE_ALGORITHMS.RS256 && kty === 3) {
    const n = bytesAt(m, -1);
    if (n.length < 256) throw new CborError("an RSA key shorter than 2048 bits");
    return { algorithm: alg, jwk: { kty: "RSA", n: b64u(n), e: b64u(bytesAt(m, -2)) } };
  }
  throw new CborError(`an unsupported COSE key (kty ${String(kty)}, alg ${String(alg)})`);
}

/** A COSE key's bytes as a key to verify with; throws CborError for anything we do not accept. */
export function coseKey(bytes: Uint8Array): CoseKey {
  const m = decodeCbor(bytes);
  if (!isCborMap(m)) throw new CborError("a COSE key is a map");
  const { algorithm, jwk } = jwkOf(m);
  try {
    return { algorithm, key: createPublicKey({ key: jwk, format: "jwk" }) };
  } catch (e) {
    throw new CborError(`the COSE key is not a valid public key (${(e as Error).message})`);
  }
}

/** Whether `signature` is the key's over `data`, by its algorithm (never throws on a bad signature). */
export function coseVerify(k: CoseKey, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    if (k.algorithm === COSE_ALGORITHMS.EdDSA) return verify(null, data, k.key, signature);
    if (k.algorithm === COSE_ALGORITHMS.ES256)
      return verify("sha256", data, { key: k.key, dsaEncoding: "der" }, signature);
    return verify("sha256", data, k.key, signature);
  } catch {
    return false;
  }
}
