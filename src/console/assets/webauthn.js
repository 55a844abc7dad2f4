// @ts-check
// Passkey ceremonies in the browser: approving a payment (an assertion whose challenge is the
// digest of the payment's terms, from the server), registering a passkey and removing one
// (the ceremonies a terminal's `passkey` command offers). User verification is required each
// time. WebAuthn refuses an IP address as relying party, so a page on 127.0.0.1 first moves to
// the console's localhost name with a fresh one-time link.
import { getApprovalChallenge, localhostLink } from "./api.js";

/** @param {ArrayBuffer | Uint8Array} buf */
export function toB64url(buf) {
  const bytes = buf instanceof Uint8Array ? buf : new Uint8Array(buf);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** @param {string} text */
export function fromB64url(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/**
 * True on localhost; else moves this page there (a fresh one-time link to the same path) and answers false.
 * @param {string} next
 */
export async function onLocalhost(next) {
  if (location.hostname === "localhost") return true;
  const { url } = await localhostLink(next);
  location.assign(url);
  return false;
}

/**
 * @param {string[]} ids
 * @returns {PublicKeyCredentialDescriptor[]}
 */
const descriptors = (ids) => ids.map((id) => ({ type: "public-key", id: fromB64url(id) }));

/**
 * An assertion's parts as the server reads them.
 * @param {Credential | null} cred
 */
function assertionParts(cred) {
  const c = /** @type {PublicKeyCredential | null} */ (cred);
  if (!c) throw new Error("The authenticator gave no answer.");
  const r = /** @type {AuthenticatorAssertionResponse} */ (c.response);
  return {
    credentialId: toB64url(c.rawId),
    authenticatorData: toB64url(r.authenticatorData),
    clientDataJSON: toB64url(r.clientDataJSON),
    signature: toB64url(r.signature),
  };
}

/**
 * Asks the person's passkey to sign a challenge (user verification required).
 * @param {string} challenge base64url
 * @param {string} rpId
 * @param {string[]} allow credential ids
 */
export async function assert(challenge, rpId, allow) {
  return assertionParts(
    await navigator.credentials.get({
      publicKey: {
        challenge: fromB64url(challenge),
        rpId,
        allowCredentials: descriptors(allow),
        userVerification: "required",
        timeout: 120_000,
      },
    }),
  );
}

/**
 * The passkey's assertion over an approval's terms, or undefined when the page is moving to localhost first.
 * @param {string} approvalId
 */
export async function approvalAssertion(approvalId) {
  if (!(await onLocalhost(location.pathname))) return undefined;
  const { challenge } = await getApprovalChallenge(approvalId);
  return assert(challenge.challenge, challenge.rpId, challenge.credentialIds);
}

/**
 * Creates a passkey for the terminal's `passkey add` ceremony.
 * @param {Extract<import("./wire.js").PasskeyCeremony, { kind: "add" }>} c
 */
export async function createPasskey(c) {
  const cred = /** @type {PublicKeyCredential | null} */ (
    await navigator.credentials.create({
      publicKey: {
        challenge: fromB64url(c.challenge),
        rp: { id: c.rpId, name: "paid-actions console" },
        user: { id: fromB64url(c.user.id), name: c.user.name, displayName: c.user.displayName },
        pubKeyCredParams: [
          { type: "public-key", alg: -7 },
          { type: "public-key", alg: -8 },
          { type: "public-key", alg: -257 },
        ],
        excludeCredentials: descriptors(c.excludeCredentials),
        authenticatorSelection: { residentKey: "preferred", userVerification: "required" },
        attestation: "none",
        timeout: 120_000,
      },
    })
  );
  if (!cred) throw new Error("The authenticator made no passkey.");
  const r = /** @type {AuthenticatorAttestationResponse} */ (cred.response);
  return { attestationObject: toB64url(r.attestationObject), clientDataJSON: toB64url(r.clientDataJSON) };
}
