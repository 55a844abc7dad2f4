/**
 * A software WebAuthn authenticator for tests: it makes registrations (attestation "none")
 * and assertions exactly as a browser hands them to the console's page (each part base64url),
 * with ES256, EdDSA or RS256 keys, a signature counter, and the flags a test chooses (user
 * present, user verified), over whatever challenge, origin and RP ID it is given. A small
 * CBOR encoder writes the attestation object and the COSE key.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";

type Cbor = number | string | Uint8Array | boolean | null | Cbor[] | Map<number | string, Cbor>;

function head(major: number, n: number): number[] {
  if (n < 24) return [(major << 5) | n];
  if (n < 0x100) return [(major << 5) | 24, n];
  if (n < 0x10000) return [(major << 5) | 25, n >> 8, n & 0xff];
  return [(major << 5) | 26, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
}

/** CBOR (preferred serialisation) of the few types WebAuthn uses. */
export function encodeCbor(v: Cbor): Uint8Array {
  const out: number[] = [];
  const put = (x: Cbor): void => {
    if (typeof x === "number") out.push(...(x >= 0 ? head(0, x) : head(1, -1 - x)));
    else if (typeof x === "string") {
      const b = Buffer.from(x, "utf8");
      out.push(...head(3, b.length), ...b);
    } else if (x instanceof Uint8Array) out.push(...head(2, x.length), ...x);
    else if (x === false) out.push(0xf4);
    else if (x === true) out.push(0xf5);
    else if (x === null) out.push(0xf6);
    else if (Array.isArray(x)) {
      out.push(...head(4, x.length));
      x.forEach(put);
    } else {
      out.push(...head(5, x.size));
      for (const [k, val] of x) {
        put(k);
        put(val);
      }
    }
  };
  put(v);
  return Uint8Array.from(out);
}

export type Alg = "ES256" | "EdDSA" | "RS256";

const b64u = (b: Uint8Array | Buffer) => Buffer.from(b).toString("base64url");
const sha256 = (d: Uint8Array | string) => createHash("sha256").update(d).digest();

function coseOf(alg: Alg, publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: "jwk" });
  const bytes = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? "", "base64url"));
  if (alg === "ES256")
    return encodeCbor(
      new Map<number, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, bytes(jwk.x)],
        [-3, bytes(jwk.y)],
      ]),
    );
  if (alg === "EdDSA")
    return encodeCbor(
      new Map<number, Cbor>([
        [1, 1],
        [3, -8],
        [-1, 6],
        [-2, bytes(jwk.x)],
      ]),
    );
  return encodeCbor(
    new Map<number, Cbor>([
      [1, 3],
      [3, -257],
      [-1, bytes(jwk.n)],
      [-2, bytes(jwk.e)],
    ]),
  );
}

export interface Ceremony {
  challenge: string;
  origin: string;
  rpId?: string;
  /** Flags: user present / verified (both true unless said). */
  up?: boolean;
  uv?: boolean;
  type?: string;
}

export interface SoftAuthenticator {
  credentialId: string;
  alg: Alg;
  /** The COSE key, base64url. */
  publicKey: string;
  counter: number;
  register(c: Ceremony): { attestationObject: string; clientDataJSON: string };
  assert(c: Ceremony & { keepCounter?: boolean }): {
    credentialId: string;
    authenticatorData: string;
    clientDataJSON: string;
    signature: string;
  };
}

export function softAuthenticator(alg: Alg = "ES256", o: { counter?: number } = {}): SoftAuthenticator {
  const pair =
    alg === "ES256"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : alg === "EdDSA"
        ? generateKeyPairSync("ed25519")
        : generateKeyPairSync("rsa", { modulusLength: 2048 });
  const id = randomBytes(32);
  const cose = coseOf(alg, pair.publicKey);
  const flags = (c: Ceremony, extra = 0) => (c.up === false ? 0 : 0x01) | (c.uv === false ? 0 : 0x04) | extra;
  const authData = (c: Ceremony, counter: number, extra = 0, tail: Uint8Array = new Uint8Array()) => {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    return Buffer.concat([sha256(c.rpId ?? "localhost"), Buffer.from([flags(c, extra)]), count, tail]);
  };
  const clientData = (c: Ceremony, type: string) =>
    Buffer.from(JSON.stringify({ type: c.type ?? type, challenge: c.challenge, origin: c.origin, crossOrigin: false }));
  const self: SoftAuthenticator = {
    credentialId: b64u(id),
    alg,
    publicKey: b64u(cose),
    counter: o.counter ?? 0,
    register(c) {
      const idLen = Buffer.from([id.length >> 8, id.length & 0xff]);
      const tail = Buffer.concat([Buffer.alloc(16), idLen, id, cose]);
      const auth = authData(c, self.counter, 0x40, tail);
      const att = encodeCbor(
        new Map<string, Cbor>([
          ["fmt", "none"],
          ["attStmt", new Map()],
          ["authData", auth],
        ]),
      );
      return { attestationObject: b64u(att), clientDataJSON: b64u(clientData(c, "webauthn.create")) };
    },
    assert(c) {
      if (!c.keepCounter && self.counter > 0) self.counter++;
      const auth = authData(c, self.counter);
      const cd = clientData(c, "webauthn.get");
      const data = Buffer.concat([auth, sha256(cd)]);
      const signature =
        alg === "EdDSA"
          ? sign(null, data, pair.privateKey)
          : sign("sha256", data, alg === "ES256" ? { key: pair.privateKey, dsaEncoding: "der" } : pair.privateKey);
      return {
        credentialId: b64u(id),
        authenticatorData: b64u(auth),
        clientDataJSON: b64u(cd),
        signature: b64u(signature),
      };
    },
  };
  return self;
}
