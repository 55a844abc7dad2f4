/**
 * Passkey ceremonies checked on the server (WebAuthn Level 2, §7.1 and §7.2), with nothing
 * but node:crypto and our own CBOR reader: a registration (attestation "none": the credential
 * is bound by the person's presence at the terminal, and optionally the owner's signature,
 * not by the authenticator's maker) and an assertion over a challenge we chose. Each check
 * that fails is named (PasskeyProblem), and nothing here throws on a hostile input.
 *
 * The relying party is the console on loopback: its RP ID is "localhost" (an IP address is
 * not a valid RP ID), its origin http://localhost:<port>.
 */
import { createHash } from "node:crypto";
import { CborError, decodeCbor, decodeCborPrefix, isCborMap } from "./cbor.js";
import { coseKey, coseVerify, type CoseAlgorithm } from "./cose.js";

/** The RP ID of every passkey this product registers. */
export const RP_ID = "localhost";

/** Whether an origin is one the console can have (http://localhost:<port>): what the engine accepts later. */
export const consoleOrigin = (origin: string) => /^http:\/\/localhost:[1-9][0-9]{0,4}$/.test(origin);

/** Why a ceremony's answer is refused, one word each. */
export type PasskeyProblem =
  /** Not base64url, not JSON, not CBOR, or missing a part. */
  | "format"
  /** clientDataJSON.type is not the ceremony's (webauthn.create / webauthn.get). */
  | "type"
  /** Signed over another challenge: other terms, another approval, or an old ceremony. */
  | "challenge"
  /** Made on another origin than the console's. */
  | "origin"
  /** The authenticator data names another RP ID. */
  | "rp_id"
  /** The user-present flag is not set. */
  | "user_presence"
  /** The user-verified flag is not set (a PIN or biometric is required). */
  | "user_verification"
  /** The signature does not verify with the credential's public key. */
  | "signature"
  /** Not a registered passkey (unknown, or removed). */
  | "credential"
  /** The signature counter did not increase: a replay, or a cloned authenticator. */
  | "counter"
  /** The credential's key is of an algorithm or curve we do not accept. */
  | "algorithm";

export type Checked<T> = ({ ok: true } & T) | { ok: false; problem: PasskeyProblem };

/** An assertion as the page sends it: each part base64url, as navigator.credentials.get gave it. */
export interface AssertionParts {
  credentialId: string;
  authenticatorData: string;
  clientDataJSON: string;
  signature: string;
}

/** A registration as the page sends it (navigator.credentials.create's response). */
export interface RegistrationParts {
  attestationObject: string;
  clientDataJSON: string;
}

/** A registered credential: what an assertion is verified with. */
export interface RegisteredKey {
  credentialId: string;
  /** The COSE_Key, base64url. */
  publicKey: string;
  signCount: number;
}

/** What the relying party expects of one ceremony. */
export interface Expected {
  challenge: string;
  /** Whether the origin is acceptable (the console's own, exactly, when it checks; any console origin later). */
  origin: (origin: string) => boolean;
  rpId?: string;
}

const B64URL = /^[A-Za-z0-9_-]*$/;
const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;
const FLAG_ED = 0x80;

/** Strict base64url: undefined for anything that is not exactly one encoding of some bytes. */
export function fromB64url(text: unknown, max = 16_384): Uint8Array | undefined {
  if (typeof text !== "string" || text.length > max || !B64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? new Uint8Array(bytes) : undefined;
}

const sha256 = (data: Uint8Array | string) => new Uint8Array(createHash("sha256").update(data).digest());
const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** clientDataJSON's checks shared by both ceremonies: its type, challenge and origin. */
function checkClientData(bytes: Uint8Array, type: string, e: Expected): PasskeyProblem | undefined {
  let c: unknown;
  try {
    c = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "format";
  }
  if (typeof c !== "object" || c === null) return "format";
  const d = c as Record<string, unknown>;
  if (d.type !== type) return "type";
  if (d.challenge !== e.challenge) return "challenge";
  if (typeof d.origin !== "string" || !e.origin(d.origin) || d.crossOrigin === true) return "origin";
  return undefined;
}

/** The fixed head of authenticator data: the RP ID hash, the flags, the signature counter. */
function authHead(auth: Uint8Array, e: Expected): Checked<{ flags: number; signCount: number }> {
  if (auth.length < 37) return { ok: false, problem: "format" };
  if (!equal(auth.subarray(0, 32), sha256(e.rpId ?? RP_ID))) return { ok: false, problem: "rp_id" };
  const flags = auth[32]!;
  if (!(flags & FLAG_UP)) return { ok: false, problem: "user_presence" };
  if (!(flags & FLAG_UV)) return { ok: false, problem: "user_verification" };
  const signCount = new DataView(auth.buffer, auth.byteOffset + 33, 4).getUint32(0);
  return { ok: true, flags, signCount };
}

/** A registered credential, as a registration proved it. */
export interface NewCredential {
  credentialId: string;
  publicKey: string;
  algorithm: CoseAlgorithm;
  signCount: number;
}

/** The attested credential data of a registration's authenticator data. */
function attested(auth: Uint8Array, flags: number): Checked<Omit<NewCredential, "signCount">> {
  if (!(flags & FLAG_AT) || auth.length < 55) return { ok: false, problem: "format" };
  const idLength = (auth[53]! << 8) | auth[54]!;
  if (idLength < 16 || idLength > 1023 || auth.length < 55 + idLength) return { ok: false, problem: "format" };
  const id = auth.subarray(55, 55 + idLength);
  const rest = auth.subarray(55 + idLength);
  const { length } = decodeCborPrefix(rest);
  const keyBytes = rest.subarray(0, length);
  // Extensions may follow (ED); without them the key is the end of the data.
  if (flags & FLAG_ED) decodeCbor(rest.subarray(length));
  else if (length !== rest.length) return { ok: false, problem: "format" };
  let algorithm: CoseAlgorithm;
  try {
    algorithm = coseKey(keyBytes).algorithm;
  } catch {
    return { ok: false, problem: "algorithm" };
  }
  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64url");
  return { ok: true, credentialId: b64(id), publicKey: b64(keyBytes), algorithm };
}

/** Checks a registration (navigator.credentials.create) made for our challenge on the console. */
export function verifyRegistration(r: RegistrationParts, e: Expected): Checked<{ credential: NewCredential }> {
  const clientData = fromB64url(r.clientDataJSON);
  const attestation = fromB64url(r.attestationObject, 65_536);
  if (!clientData || !attestation) return { ok: false, problem: "format" };
  const problem = checkClientData(clientData, "webauthn.create", e);
  if (problem) return { ok: false, problem };
  try {
    const object = decodeCbor(attestation);
    if (!isCborMap(object) || typeof object.get("fmt") !== "string" || !isCborMap(object.get("attStmt")))
      return { ok: false, problem: "format" };
    const auth = object.get("authData");
    if (!(auth instanceof Uint8Array)) return { ok: false, problem: "format" };
    const head = authHead(auth, e);
    if (!head.ok) return head;
    const cred = attested(auth, head.flags);
    if (!cred.ok) return cred;
    return {
      ok: true,
      credential: {
        credentialId: cred.credentialId,
        publicKey: cred.publicKey,
        algorithm: cred.algorithm,
        signCount: head.signCount,
      },
    };
  } catch (err) {
    if (err instanceof CborError) return { ok: false, problem: "format" };
    throw err;
  }
}

/**
 * Checks an assertion (navigator.credentials.get) against the registered key it names: the
 * client data's type, challenge and origin, the RP ID hash, user presence and verification,
 * and the signature over authenticatorData || SHA-256(clientDataJSON). The counter is the
 * caller's to compare (counterAdvances), with the value it keeps.
 */
export function verifyAssertion(a: AssertionParts, key: RegisteredKey, e: Expected): Checked<{ signCount: number }> {
  if (a.credentialId !== key.credentialId) return { ok: false, problem: "credential" };
  const auth = fromB64url(a.authenticatorData);
  const clientData = fromB64url(a.clientDataJSON);
  const signature = fromB64url(a.signature);
  const publicKey = fromB64url(key.publicKey);
  if (!auth || !clientData || !signature || !publicKey) return { ok: false, problem: "format" };
  const problem = checkClientData(clientData, "webauthn.get", e);
  if (problem) return { ok: false, problem };
  const head = authHead(auth, e);
  if (!head.ok) return head;
  let k;
  try {
    k = coseKey(publicKey);
  } catch {
    return { ok: false, problem: "algorithm" };
  }
  const signed = new Uint8Array(auth.length + 32);
  signed.set(auth);
  signed.set(sha256(clientData), auth.length);
  if (!coseVerify(k, signed, signature)) return { ok: false, problem: "signature" };
  return { ok: true, signCount: head.signCount };
}

/**
 * Whether an assertion's counter may follow the one kept: an authenticator that keeps no
 * counter says 0 every time (then 0 is accepted); one that keeps one must go up.
 */
export function counterAdvances(kept: number, got: number): boolean {
  return (kept === 0 && got === 0) || got > kept;
}
