/**
 * Solana keypairs as 64 bytes (32-byte ed25519 seed + 32-byte public key), the layout of a
 * Solana CLI keypair file (a JSON array of 64 numbers).
 */
import { generateKeyPairSync } from "node:crypto";
import { readFileSync, statSync, writeFileSync, chmodSync, renameSync } from "node:fs";
import { createKeyPairSignerFromBytes, type KeyPairSigner } from "@solana/kit";

/** Generates a fresh ed25519 keypair as 64 Solana CLI bytes. */
export function generateKeypairBytes(): Uint8Array {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
  const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  const bytes = new Uint8Array(64);
  bytes.set(seed, 0);
  bytes.set(pub, 32);
  return bytes;
}

export function parseKeypairJson(text: string): Uint8Array | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 64) return undefined;
  if (!parsed.every((n) => Number.isInteger(n) && n >= 0 && n <= 255)) return undefined;
  return Uint8Array.from(parsed as number[]);
}

/** Writes a keypair file with mode 0600, atomically (temp file, then rename). */
export function writeKeypairFile(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(Array.from(bytes)), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export class KeypairFileError extends Error {
  constructor(
    message: string,
    readonly reason: "missing" | "unreadable" | "malformed" | "permissions",
  ) {
    super(message);
    this.name = "KeypairFileError";
  }
}

/**
 * Reads a Solana CLI keypair file. Refuses a file that group or others can read,
 * saying how to fix it. Never puts the file's content in an error.
 */
export function readKeypairFile(path: string, opts: { checkMode?: boolean } = {}): Uint8Array {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    throw new KeypairFileError(`wallet file ${path} does not exist`, "missing");
  }
  if ((opts.checkMode ?? true) && (mode & 0o077) !== 0) {
    throw new KeypairFileError(
      `wallet file ${path} is readable by group or others (mode ${(mode & 0o777).toString(8)}); ` +
        `run: chmod 600 ${path}`,
      "permissions",
    );
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new KeypairFileError(`wallet file ${path} cannot be read`, "unreadable");
  }
  const bytes = parseKeypairJson(text);
  if (!bytes) {
    throw new KeypairFileError(
      `wallet file ${path} is not a Solana CLI keypair (a JSON array of 64 numbers 0-255)`,
      "malformed",
    );
  }
  return bytes;
}

export function signerFromBytes(bytes: Uint8Array): Promise<KeyPairSigner> {
  return createKeyPairSignerFromBytes(bytes);
}
