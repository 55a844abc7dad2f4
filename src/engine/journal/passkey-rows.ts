/**
 * Passkeys as both stores keep them (table `passkeys`, migration 8): one row per credential,
 * kept after removal (removed_at) so that what it signed stays checkable; and how a row reads
 * back. The SQL that writes them is each store's (sqlite-records.ts, pg-records.ts).
 */
import type { PasskeyRecord } from "./port.js";

export function toPasskey(row: Record<string, unknown>): PasskeyRecord {
  return {
    credentialId: row.credential_id as string,
    publicKey: row.public_key as string,
    algorithm: Number(row.algorithm),
    rpId: row.rp_id as string,
    signCount: Number(row.sign_count),
    label: (row.label as string | null) ?? null,
    owner: (row.owner as string | null) ?? null,
    ownerSignature: (row.owner_signature as string | null) ?? null,
    createdAt: Number(row.created_at),
    removedAt: row.removed_at === null || row.removed_at === undefined ? null : Number(row.removed_at),
  };
}

/** The row's values in the columns' order (INSERT below). */
export const PASSKEY_INSERT = `INSERT INTO passkeys (credential_id, public_key, algorithm, rp_id, sign_count, label, owner, owner_signature, created_at, removed_at)`;

export function passkeyValues(p: PasskeyRecord): unknown[] {
  return [
    p.credentialId,
    p.publicKey,
    p.algorithm,
    p.rpId,
    p.signCount,
    p.label,
    p.owner,
    p.ownerSignature,
    p.createdAt,
    p.removedAt,
  ];
}

/**
 * The counter's compare-and-set: a credential still registered, whose kept counter the new one
 * advances (an authenticator that keeps none says 0 each time: webauthn.ts counterAdvances).
 * Parameters: the new count, the credential id.
 */
export const ADVANCE_WHERE = (count: string, id: string) =>
  `credential_id = ${id} AND removed_at IS NULL AND (sign_count < ${count} OR (sign_count = 0 AND ${count} = 0))`;
