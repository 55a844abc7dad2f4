/**
 * The owner's word on a passkey: a short statement naming the credential (its id and its
 * public key's digest), the RP ID and the owner's Solana address, signed with the owner's
 * ed25519 key (a keypair file here, or a wallet's "sign message" for `passkey submit`). A
 * receipt that carries the statement and its signature shows, to anyone with the owner's
 * address, that the approving passkey is one the wallet's owner registered.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify } from "node:crypto";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Base58 (Bitcoin's alphabet, as Solana writes addresses and signatures). */
export function base58Encode(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)]! + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = "1" + out;
  }
  return out;
}

/** Base58 to bytes; undefined for a character outside the alphabet or a text over 200 characters. */
export function base58Decode(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length > 200) return undefined;
  let n = 0n;
  for (const ch of text) {
    const i = ALPHABET.indexOf(ch);
    if (i < 0) return undefined;
    n = n * 58n + BigInt(i);
  }
  const body: number[] = [];
  while (n > 0n) {
    body.unshift(Number(n & 0xffn));
    n >>= 8n;
  }
  let zeros = 0;
  while (text[zeros] === "1") zeros++;
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...body]);
}

/** What the owner signs for one passkey. */
export interface OwnerStatementInput {
  credentialId: string;
  /** The credential's COSE key, base64url. */
  publicKey: string;
  owner: string;
  rpId: string;
}

/** The statement's text (UTF-8 is what is signed): stable, line by line, readable in a wallet's prompt. */
export function ownerStatement(s: OwnerStatementInput): string {
  const keyDigest = createHash("sha256").update(Buffer.from(s.publicKey, "base64url")).digest("base64url");
  return [
    "paid-actions-mcp: this passkey approves payments for my wallet",
    `owner: ${s.owner}`,
    `rp: ${s.rpId}`,
    `credential: ${s.credentialId}`,
    `public key sha256: ${keyDigest}`,
  ].join("\n");
}

const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");

/** Signs a statement with a Solana keypair's 64 bytes (seed, then public key): base58. */
export function signStatement(statement: string, keypair: Uint8Array): string {
  const key = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, keypair.subarray(0, 32)]),
    format: "der",
    type: "pkcs8",
  });
  return base58Encode(sign(null, Buffer.from(statement, "utf8"), key));
}

/** A 64-byte ed25519 signature given as base58 (a wallet's) or base64; undefined otherwise. */
export function signatureBytes(text: string): Uint8Array | undefined {
  const t = text.trim();
  const b58 = base58Decode(t);
  if (b58?.length === 64) return b58;
  if (/^[A-Za-z0-9+/]{86}={0,2}$/.test(t)) {
    const b = Buffer.from(t, "base64");
    if (b.length === 64) return new Uint8Array(b);
  }
  return undefined;
}

/** Whether `signature` (base58 or base64) is the owner address's ed25519 signature of the statement. */
export function verifyStatement(statement: string, owner: string, signature: string): boolean {
  const pub = base58Decode(owner);
  const sig = signatureBytes(signature);
  if (pub?.length !== 32 || !sig) return false;
  try {
    const key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, pub]), format: "der", type: "spki" });
    return verify(null, Buffer.from(statement, "utf8"), key, sig);
  } catch {
    return false;
  }
}

/** A Solana address from a keypair's 64 bytes. */
export function addressOfKeypair(keypair: Uint8Array): string {
  return base58Encode(keypair.subarray(32, 64));
}
