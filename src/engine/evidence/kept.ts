/**
 * The passkey assertion kept with an approval: self-contained, so that a receipt can carry it
 * and anyone can check it offline, with no journal and no network — the canonical terms and
 * their digest (the challenge), the credential's COSE public key, the authenticator data, the
 * client data and the signature, and, when the owner bound the passkey, the owner's
 * statement and signature (owner.ts).
 */
import { z } from "zod";
import { ownerStatement, verifyStatement } from "./owner.js";
import { termsChallenge } from "./terms.js";
import { consoleOrigin, RP_ID, verifyAssertion, type Checked } from "./webauthn.js";

const B64URL = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .max(16_384);

export const KeptAssertion = z.object({
  v: z.literal(1),
  rpId: z.string(),
  /** The console's origin the ceremony ran on. */
  origin: z.string(),
  /** The canonical terms (terms.ts) whose SHA-256 was the challenge. */
  terms: z.string().max(16_384),
  challenge: B64URL,
  credential: z.object({
    id: B64URL,
    /** COSE_Key, base64url. */
    publicKey: B64URL,
    algorithm: z.number(),
    /** The owner who signed the registration statement, with the signature (base58); null: not bound. */
    owner: z.string().nullable(),
    ownerSignature: z.string().nullable(),
  }),
  authenticatorData: B64URL,
  clientDataJSON: B64URL,
  signature: B64URL,
  signCount: z.number().int().nonnegative(),
  /** When the console verified it (ISO). */
  verifiedAt: z.string(),
});
export type KeptAssertion = z.infer<typeof KeptAssertion>;

/** A stored assertion's JSON as a KeptAssertion, or undefined when it is not one. */
export function parseKept(json: string | null | undefined): KeptAssertion | undefined {
  if (!json) return undefined;
  try {
    const r = KeptAssertion.safeParse(JSON.parse(json));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a kept assertion on its own: the challenge is the digest of the terms it carries, the
 * signature verifies with the key it carries, on a console origin and our RP ID, with the
 * person verified; and says whether the owner's signature binds the key to the owner.
 */
export function verifyKept(k: KeptAssertion): Checked<{ owner: "bound" | "unbound" | "invalid" }> {
  if (k.rpId !== RP_ID || termsChallenge(k.terms) !== k.challenge) return { ok: false, problem: "challenge" };
  const checked = verifyAssertion(
    {
      credentialId: k.credential.id,
      authenticatorData: k.authenticatorData,
      clientDataJSON: k.clientDataJSON,
      signature: k.signature,
    },
    { credentialId: k.credential.id, publicKey: k.credential.publicKey, signCount: 0 },
    { challenge: k.challenge, origin: (o) => o === k.origin && consoleOrigin(o), rpId: k.rpId },
  );
  if (!checked.ok) return checked;
  const { owner, ownerSignature } = k.credential;
  if (owner === null || ownerSignature === null) return { ok: true, owner: "unbound" };
  const statement = ownerStatement({
    credentialId: k.credential.id,
    publicKey: k.credential.publicKey,
    owner,
    rpId: k.rpId,
  });
  return { ok: true, owner: verifyStatement(statement, owner, ownerSignature) ? "bound" : "invalid" };
}
