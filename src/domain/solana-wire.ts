/**
 * Solana's wire format read straight from its bytes, for the hot paths that read
 * transactions — the sandbox's settlement, and the engine's check of a settlement on our RPC
 * (rails/solana/rpc.ts): the
 * signatures, the message's header, account keys, blockhash and instructions as views into
 * the transaction's bytes, and base58 names for the few that need one (cached: a ledger meets
 * the same accounts again and again). `@solana/kit`'s decoders name every account in base58
 * on every decode, which costs more than everything else a settlement does in JS.
 *
 * The reading is strict — legacy or v0 messages, as many signatures as the header requires,
 * no key named twice, every index in range, no byte left over — and answers undefined for anything else, so that
 * whatever it reads, kit's decoders read the same way; a caller falls back on kit (and on its
 * errors) for the rest.
 */
import { createHash } from "node:crypto";

export interface WireInstruction {
  programIndex: number;
  /** Indexes into the message's account keys. */
  accounts: Uint8Array;
  data: Uint8Array;
}

export interface WireTransaction {
  /** The whole transaction. */
  bytes: Uint8Array;
  /** One 64-byte signature per required signer, in the order of the account keys. */
  signatures: Uint8Array[];
  /** The signed message (the bytes after the signatures). */
  message: Uint8Array;
  version: "legacy" | 0;
  numRequiredSignatures: number;
  numReadonlySigned: number;
  numReadonlyUnsigned: number;
  /** The static account keys, 32 bytes each. */
  keys: Uint8Array[];
  blockhash: Uint8Array;
  instructions: WireInstruction[];
  /** Address lookup tables the message uses (v0): none are resolved here. */
  lookupTables: number;
}

class Reader {
  at = 0;
  constructor(private readonly bytes: Uint8Array) {}
  u8(): number {
    if (this.at >= this.bytes.length) throw new RangeError("short");
    return this.bytes[this.at++]!;
  }
  /** Solana's compact-u16 (shortvec), in its canonical form only. */
  shortU16(): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new RangeError("non-canonical shortvec");
        if (value > 0xffff) throw new RangeError("shortvec overflow");
        return value;
      }
    }
    throw new RangeError("shortvec too long");
  }
  take(n: number): Uint8Array {
    if (this.at + n > this.bytes.length) throw new RangeError("short");
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  get done(): boolean {
    return this.at === this.bytes.length;
  }
}

function readMessage(r: Reader): Omit<WireTransaction, "bytes" | "signatures" | "message"> | undefined {
  const first = r.u8();
  let version: "legacy" | 0 = "legacy";
  let numRequiredSignatures = first;
  if (first & 0x80) {
    if ((first & 0x7f) !== 0) return undefined;
    version = 0;
    numRequiredSignatures = r.u8();
  }
  const numReadonlySigned = r.u8();
  const numReadonlyUnsigned = r.u8();
  const keyCount = r.shortU16();
  const keys: Uint8Array[] = [];
  for (let i = 0; i < keyCount; i++) keys.push(r.take(32));
  if (numRequiredSignatures === 0 || numRequiredSignatures > keyCount) return undefined;
  // Kit keys signatures by address: with a key named twice its reading differs (and the runtime refuses it).
  if (new Set(keys.map((k) => Buffer.from(k.buffer, k.byteOffset, 32).toString("latin1"))).size !== keyCount)
    return undefined;
  if (numReadonlySigned >= numRequiredSignatures || numReadonlyUnsigned > keyCount - numRequiredSignatures)
    return undefined;
  const blockhash = r.take(32);
  const instructions: WireInstruction[] = [];
  const ixCount = r.shortU16();
  for (let i = 0; i < ixCount; i++) {
    const programIndex = r.u8();
    const accounts = r.take(r.shortU16());
    const data = r.take(r.shortU16());
    if (programIndex >= keyCount || accounts.some((a) => a >= keyCount)) return undefined;
    instructions.push({ programIndex, accounts, data });
  }
  let lookupTables = 0;
  if (version === 0) {
    lookupTables = r.shortU16();
    for (let i = 0; i < lookupTables; i++) {
      r.take(32);
      r.take(r.shortU16());
      r.take(r.shortU16());
    }
  }
  return {
    version,
    numRequiredSignatures,
    numReadonlySigned,
    numReadonlyUnsigned,
    keys,
    blockhash,
    instructions,
    lookupTables,
  };
}

/** Reads a wire transaction; undefined when it is not one this reader takes (see the header). */
export function readWireTransaction(bytes: Uint8Array): WireTransaction | undefined {
  try {
    const r = new Reader(bytes);
    const count = r.shortU16();
    const signatures: Uint8Array[] = [];
    for (let i = 0; i < count; i++) signatures.push(r.take(64));
    const start = r.at;
    const message = readMessage(r);
    if (!message || !r.done || message.numRequiredSignatures !== count) return undefined;
    return { bytes, signatures, message: bytes.subarray(start), ...message };
  } catch {
    return undefined;
  }
}

/** The last few transactions read from base64: a settlement meets the same proof more than once. */
const read = new Map<string, WireTransaction | null>();

/**
 * `readWireTransaction` of a base64 wire transaction in canonical base64 (Node reads base64
 * leniently, kit may not), remembered for the last few.
 */
export function readWireBase64(wireBase64: string): WireTransaction | undefined {
  const known = read.get(wireBase64);
  if (known !== undefined) return known ?? undefined;
  const bytes = Buffer.from(wireBase64, "base64");
  const tx = bytes.toString("base64") === wireBase64 ? readWireTransaction(new Uint8Array(bytes)) : undefined;
  read.set(wireBase64, tx ?? null);
  if (read.size > 32) read.delete(read.keys().next().value!);
  return tx;
}

/** sha256 of the message bytes, hex: the identity of a payment, whoever signs it last. */
export function wireMessageHash(tx: WireTransaction): string {
  return createHash("sha256").update(tx.message).digest("hex");
}

/** Whether a signature slot holds a signature: kit reads an all-zero slot as an absent one. */
export function isSigned(signature: Uint8Array): boolean {
  return signature.some((b) => b !== 0);
}

/** Whether every signature slot holds a signature. */
export function fullySigned(tx: WireTransaction): boolean {
  return tx.signatures.every(isSigned);
}

// ---- base58 ------------------------------------------------------------------------------

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Base58 (Bitcoin alphabet) of some bytes, as Solana names keys and signatures. */
export function base58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // log(256) / log(58) < 1.37: digits needed, least significant first.
  const digits = new Uint8Array(Math.ceil((bytes.length - zeros) * 1.37) + 1);
  let length = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < length; j++) {
      carry += digits[j]! << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits[length++] = carry % 58;
      carry = (carry / 58) | 0;
    }
  }
  let out = "1".repeat(zeros);
  for (let j = length - 1; j >= 0; j--) out += ALPHABET[digits[j]!];
  return out;
}

const names = new Map<string, string>();

/** The base58 name of a 32-byte key, remembered (a ledger meets the same few accounts). */
export function keyName(key: Uint8Array): string {
  const id = Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
  let name = names.get(id);
  if (name === undefined) {
    if (names.size >= 4096) names.clear();
    names.set(id, (name = base58(key)));
  }
  return name;
}

/** Whether two byte strings are equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
