/**
 * Registering and removing passkeys, as `passkey add` and `passkey remove` do it through the
 * console's passkey page: a registration made on the console's origin for a challenge the
 * command chose, user verified, of a key we accept, becomes a registered passkey; a removal
 * needs an assertion of a registered passkey over the removal's own challenge (its counter
 * advancing), so that whoever removes one shows a passkey, as whoever approves does. The
 * owner's binding (evidence/owner.ts) is checked here before it is kept.
 */
import { createHash, randomBytes } from "node:crypto";
import { canonicalJson } from "../../domain/wire.js";
import { ownerStatement, verifyStatement } from "../evidence/owner.js";
import {
  consoleOrigin,
  counterAdvances,
  RP_ID,
  verifyAssertion,
  verifyRegistration,
  type AssertionParts,
  type Checked,
  type RegistrationParts,
} from "../evidence/webauthn.js";
import type { JournalStore, PasskeyRecord } from "../journal/port.js";
import { registeredPasskeys } from "./passkeys.js";

/** A fresh challenge for one ceremony (32 random bytes, base64url). */
export const newChallenge = () => randomBytes(32).toString("base64url");

/** Why a registration or removal did not happen, beyond the ceremony's own checks. */
export type AdminProblem = "already_registered" | "not_registered";

type Done<T> = Checked<T> | { ok: false; problem: AdminProblem };

/** The challenge of removing one passkey: the digest of what is removed, with a fresh nonce. */
export function removalChallenge(credentialId: string, nonce: string = newChallenge()): string {
  const statement = canonicalJson({ v: 1, op: "remove_passkey", rpId: RP_ID, credentialId, nonce });
  return createHash("sha256").update(statement, "utf8").digest("base64url");
}

/** Registers the passkey a registration made on `origin` (the console's) for `challenge`. */
export async function registerPasskey(
  journal: JournalStore,
  parts: RegistrationParts,
  o: { challenge: string; origin: string; label: string | null; now: number },
): Promise<Done<{ passkey: PasskeyRecord }>> {
  const checked = verifyRegistration(parts, {
    challenge: o.challenge,
    origin: (x) => x === o.origin && consoleOrigin(x),
  });
  if (!checked.ok) return checked;
  const c = checked.credential;
  if ((await journal.passkeys()).some((p) => p.credentialId === c.credentialId))
    return { ok: false, problem: "already_registered" };
  const passkey: PasskeyRecord = {
    credentialId: c.credentialId,
    publicKey: c.publicKey,
    algorithm: c.algorithm,
    rpId: RP_ID,
    signCount: c.signCount,
    label: o.label,
    owner: null,
    ownerSignature: null,
    createdAt: o.now,
    removedAt: null,
  };
  await journal.insertPasskey(passkey);
  return { ok: true, passkey };
}

/** Removes a registered passkey with an assertion of a registered passkey over `challenge` (removalChallenge). */
export async function removePasskey(
  journal: JournalStore,
  credentialId: string,
  assertion: AssertionParts,
  o: { challenge: string; origin: string; now: number },
): Promise<Done<{ removed: PasskeyRecord }>> {
  const keys = await registeredPasskeys(journal);
  const removed = keys.find((k) => k.credentialId === credentialId);
  if (!removed) return { ok: false, problem: "not_registered" };
  const by = keys.find((k) => k.credentialId === assertion.credentialId);
  if (!by) return { ok: false, problem: "credential" };
  const checked = verifyAssertion(assertion, by, {
    challenge: o.challenge,
    origin: (x) => x === o.origin && consoleOrigin(x),
  });
  if (!checked.ok) return checked;
  if (!counterAdvances(by.signCount, checked.signCount)) return { ok: false, problem: "counter" };
  const r = await journal.removePasskey(credentialId, by.credentialId, checked.signCount, o.now);
  if (r === "missing") return { ok: false, problem: "not_registered" };
  if (r === "counter") return { ok: false, problem: "counter" };
  return { ok: true, removed };
}

/** The statement the owner signs for a registered passkey. */
export function passkeyStatement(p: Pick<PasskeyRecord, "credentialId" | "publicKey" | "rpId">, owner: string): string {
  return ownerStatement({ credentialId: p.credentialId, publicKey: p.publicKey, owner, rpId: p.rpId });
}

/**
 * Keeps the owner's signature of a registered passkey's statement once it verifies with the
 * owner's address: false (nothing kept) when the passkey is not registered or the signature
 * is not the owner's.
 */
export async function bindOwner(
  journal: JournalStore,
  credentialId: string,
  owner: string,
  signature: string,
): Promise<"bound" | "not_registered" | "bad_signature"> {
  const p = (await registeredPasskeys(journal)).find((k) => k.credentialId === credentialId);
  if (!p) return "not_registered";
  if (!verifyStatement(passkeyStatement(p, owner), owner, signature)) return "bad_signature";
  return (await journal.bindPasskeyOwner(credentialId, owner, signature.trim())) ? "bound" : "not_registered";
}
