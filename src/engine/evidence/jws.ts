/**
 * JSON Web Signatures (RFC 7515, compact form) checked with node:crypto alone: the format
 * x402's offer-receipt extension signs a seller's offers and receipts in (`format: "jws"`).
 * The key is the one the header's `kid` names, resolved offline: `did:key` (Ed25519, P-256,
 * secp256k1 multicodec keys) or `did:jwk`. A `did:web` key lives on the seller's site and is
 * never fetched here (a receipt is checked the same way anywhere, with no network): such a
 * signature is reported unchecked. Algorithms: EdDSA (Ed25519), ES256, ES256K.
 */
import { createPublicKey, ECDH, verify, type KeyObject } from "node:crypto";
import { base58Decode } from "./owner.js";

/** A JWS split into its parts, undefined when it is not three base64url parts with JSON header and payload. */
export interface DecodedJws {
  header: { alg: string; kid?: string };
  payload: unknown;
  signingInput: string;
  signature: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]*$/;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function jsonPart(part: string): unknown {
  if (!B64URL.test(part)) return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(part, "base64url")));
  } catch {
    return undefined;
  }
}

/** The JWS's header, payload and signature, read without checking anything. */
export function decodeJws(jws: string): DecodedJws | undefined {
  if (jws.length > 16_384) return undefined;
  const parts = jws.split(".");
  if (parts.length !== 3 || !B64URL.test(parts[2]!)) return undefined;
  const header = jsonPart(parts[0]!);
  const payload = jsonPart(parts[1]!);
  if (!isRecord(header) || typeof header.alg !== "string" || payload === undefined) return undefined;
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  return {
    header: { alg: header.alg, ...(kid !== undefined ? { kid } : {}) },
    payload,
    signingInput: `${parts[0]}.${parts[1]}`,
    signature: Buffer.from(parts[2]!, "base64url"),
  };
}

/** The curve each algorithm signs on, and how node:crypto verifies it. */
const ALGORITHMS = {
  EdDSA: { curve: "Ed25519", digest: null },
  ES256: { curve: "P-256", digest: "sha256" },
  ES256K: { curve: "secp256k1", digest: "sha256" },
} as const;
type Algorithm = keyof typeof ALGORITHMS;

/** did:key's multicodec prefixes (varint) and the curve of the key that follows. */
const MULTICODECS: Array<{ prefix: number[]; curve: "Ed25519" | "P-256" | "secp256k1"; length: number }> = [
  { prefix: [0xed, 0x01], curve: "Ed25519", length: 32 },
  { prefix: [0x80, 0x24], curve: "P-256", length: 33 },
  { prefix: [0xe7, 0x01], curve: "secp256k1", length: 33 },
];

const OPENSSL_CURVE = { "P-256": "prime256v1", secp256k1: "secp256k1" } as const;

/** A compressed EC point (33 bytes) as a JWK. */
function ecJwk(curve: "P-256" | "secp256k1", compressed: Uint8Array): Record<string, string> {
  const point = ECDH.convertKey(Buffer.from(compressed), OPENSSL_CURVE[curve], undefined, undefined, "uncompressed");
  const raw = Buffer.isBuffer(point) ? point : Buffer.from(point, "latin1");
  return {
    kty: "EC",
    crv: curve,
    x: raw.subarray(1, 33).toString("base64url"),
    y: raw.subarray(33, 65).toString("base64url"),
  };
}

/** A did:key's public key as a JWK, or why not. */
function didKeyJwk(id: string): Record<string, string> | string {
  const bytes = id.startsWith("z") ? base58Decode(id.slice(1)) : undefined;
  if (!bytes) return "its did:key is not base58btc multibase";
  const codec = MULTICODECS.find((m) => m.prefix.every((b, i) => bytes[i] === b));
  const key = codec && bytes.subarray(codec.prefix.length);
  if (!codec || !key || key.length !== codec.length) return "its did:key is not an Ed25519, P-256 or secp256k1 key";
  if (codec.curve === "Ed25519") return { kty: "OKP", crv: "Ed25519", x: Buffer.from(key).toString("base64url") };
  try {
    return ecJwk(codec.curve, key);
  } catch {
    return "its did:key is not a point on its curve";
  }
}

/** The key a `kid` names, resolved offline, with its curve; or why it cannot be. */
export function keyOfKid(kid: string | undefined): { key: KeyObject; curve: string } | { why: string } {
  if (!kid) return { why: "its header names no key (kid)" };
  const did = kid.split("#")[0]!;
  let jwk: Record<string, unknown> | string;
  if (did.startsWith("did:key:")) jwk = didKeyJwk(did.slice("did:key:".length));
  else if (did.startsWith("did:jwk:")) {
    const parsed = jsonPart(did.slice("did:jwk:".length));
    jwk = isRecord(parsed) ? parsed : "its did:jwk is not a JWK";
  } else if (did.startsWith("did:web:"))
    jwk = "its key is published on the seller's site (did:web), which is not fetched";
  else jwk = `its key ${kid.slice(0, 80)} is not a did:key or did:jwk`;
  if (typeof jwk === "string") return { why: jwk };
  if (typeof jwk.d === "string") return { why: "its kid carries a private key" };
  try {
    return {
      key: createPublicKey({ key: jwk as import("node:crypto").JsonWebKey, format: "jwk" }),
      curve: String(jwk.crv),
    };
  } catch {
    return { why: "its key is not a public key node:crypto reads" };
  }
}

/** What checking a JWS came to: its payload and signer, or why it does not hold (`unchecked`: nothing says it is wrong). */
export type JwsCheck =
  | { ok: true; payload: unknown; kid: string }
  | { ok: false; problem: "format" | "signature"; detail: string }
  | { ok: false; problem: "unchecked"; detail: string; payload: unknown; kid: string | null };

/** Verifies a compact JWS with the key its `kid` names (resolved offline). */
export function verifyJws(jws: string): JwsCheck {
  const d = decodeJws(jws);
  if (!d) return { ok: false, problem: "format", detail: "not a compact JWS with a JSON header and payload" };
  const alg = ALGORITHMS[d.header.alg as Algorithm] as (typeof ALGORITHMS)[Algorithm] | undefined;
  const kid = d.header.kid ?? null;
  if (!alg)
    return {
      ok: false,
      problem: "unchecked",
      detail: `its algorithm ${d.header.alg.slice(0, 20)}`,
      payload: d.payload,
      kid,
    };
  const found = keyOfKid(d.header.kid);
  if ("why" in found) return { ok: false, problem: "unchecked", detail: found.why, payload: d.payload, kid };
  if (found.curve !== alg.curve)
    return { ok: false, problem: "signature", detail: `an ${d.header.alg} signature by a ${found.curve} key` };
  let valid = false;
  try {
    const data = Buffer.from(d.signingInput, "ascii");
    valid =
      alg.digest === null
        ? verify(null, data, found.key, d.signature)
        : verify(alg.digest, data, { key: found.key, dsaEncoding: "ieee-p1363" }, d.signature);
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, problem: "signature", detail: `the signature does not verify with ${kid}` };
  return { ok: true, payload: d.payload, kid: kid! };
}
