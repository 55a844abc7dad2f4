/**
 * A small, strict CBOR decoder (RFC 8949) for what WebAuthn hands us: the attestation object
 * and the credential's COSE key. Only definite lengths, the major types 0–5 and the simple
 * values false, true and null; no tags, no floats, no indefinite lengths, no duplicate map
 * keys, integers within JavaScript's safe range, and bounded depth and sizes. Anything else
 * is refused with a CborError: what we verify a person's approval with is read one way only.
 */

export class CborError extends Error {
  constructor(message: string) {
    super(`CBOR: ${message}`);
    this.name = "CborError";
  }
}

/** A decoded value: map keys are integers or text (COSE uses both). */
export type CborValue = number | string | Uint8Array | boolean | null | CborValue[] | CborMap;
export type CborMap = Map<number | string, CborValue>;

const MAX_DEPTH = 8;
const MAX_ITEMS = 1_024;

class Reader {
  pos = 0;
  constructor(private readonly bytes: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.bytes.length) throw new CborError("the data ends early");
    return this.bytes[this.pos++]!;
  }

  take(n: number): Uint8Array {
    if (n > this.bytes.length - this.pos) throw new CborError("the data ends early");
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** The argument of an initial byte's additional information (a length or a value). */
  argument(info: number): number {
    if (info < 24) return info;
    let width: number;
    if (info === 24) width = 1;
    else if (info === 25) width = 2;
    else if (info === 26) width = 4;
    else if (info === 27) width = 8;
    else throw new CborError(info === 31 ? "indefinite lengths are not accepted" : "reserved additional information");
    let value = 0n;
    for (const b of this.take(width)) value = (value << 8n) | BigInt(b);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new CborError("an integer beyond 2^53");
    // Preferred serialisation only: a value that fits a shorter form must use it.
    const min = width === 1 ? 24n : width === 2 ? 0x100n : width === 4 ? 0x10000n : 0x100000000n;
    if (value < min) throw new CborError("an integer not in its shortest form");
    return Number(value);
  }

  item(depth: number): CborValue {
    if (depth > MAX_DEPTH) throw new CborError("nested too deeply");
    const initial = this.byte();
    const major = initial >> 5;
    const info = initial & 0x1f;
    switch (major) {
      case 0:
        return this.argument(info);
      case 1:
        return -1 - this.argument(info);
      case 2:
        return this.take(this.argument(info)).slice();
      case 3:
        return decodeText(this.take(this.argument(info)));
      case 4: {
        const n = count(this.argument(info));
        const out: CborValue[] = [];
        for (let i = 0; i < n; i++) out.push(this.item(depth + 1));
        return out;
      }
      case 5: {
        const n = count(this.argument(info));
        const out: CborMap = new Map();
        for (let i = 0; i < n; i++) {
          const key = this.item(depth + 1);
          if (typeof key !== "number" && typeof key !== "string")
            throw new CborError("a map key that is not an integer or text");
          if (out.has(key)) throw new CborError(`a duplicate map key ${JSON.stringify(key)}`);
          out.set(key, this.item(depth + 1));
        }
        return out;
      }
      case 6:
        throw new CborError("tags are not accepted");
      default:
        if (info === 20) return false;
        if (info === 21) return true;
        if (info === 22) return null;
        throw new CborError("floats and other simple values are not accepted");
    }
  }
}

function count(n: number): number {
  if (n > MAX_ITEMS) throw new CborError(`more than ${MAX_ITEMS} items`);
  return n;
}

function decodeText(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new CborError("text that is not UTF-8");
  }
}

/** The first CBOR item of `bytes`, and how many bytes it took (authenticator data goes on after a COSE key). */
export function decodeCborPrefix(bytes: Uint8Array): { value: CborValue; length: number } {
  const r = new Reader(bytes);
  const value = r.item(0);
  return { value, length: r.pos };
}

/** The one CBOR item that is the whole of `bytes`. */
export function decodeCbor(bytes: Uint8Array): CborValue {
  const { value, length } = decodeCborPrefix(bytes);
  if (length !== bytes.length) throw new CborError("bytes left after the item");
  return value;
}

export function isCborMap(v: CborValue | undefined): v is CborMap {
  return v instanceof Map;
}
