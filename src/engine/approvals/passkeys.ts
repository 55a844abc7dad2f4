/**
 * Approvals given with a passkey. Once a person has registered one (`passkey add`), an
 * approval counts only with a WebAuthn assertion whose challenge is the digest of the
 * canonical terms (evidence/terms.ts) of the intent it is for: the console asks the passkey
 * for it (approvalChallenge), the engine verifies it before it records the approval
 * (approveWithPasskey: signature, challenge, user verification, the console's exact origin,
 * a registered credential, a counter that advances) and keeps it whole with the approval; and
 * before an approved approval is used to sign, the kept assertion is verified again against
 * the terms of the intent being signed — read from the intent, never from what a page sent
 * (passkeyAtUse). Anything missing or refused fails closed.
 */
import { parseKept, type KeptAssertion } from "../evidence/kept.js";
import { canonicalTerms, termsChallenge, termsOf, type Terms, type TermsSource } from "../evidence/terms.js";
import {
  consoleOrigin,
  counterAdvances,
  RP_ID,
  verifyAssertion,
  type AssertionParts,
  type PasskeyProblem,
} from "../evidence/webauthn.js";
import { paidError } from "../errors.js";
import type { JournalStore, PasskeyRecord } from "../journal/port.js";
import type { Approval } from "../model/types.js";

/** The passkeys registered now (not removed), oldest first. */
export async function registeredPasskeys(journal: Pick<JournalStore, "passkeys">): Promise<PasskeyRecord[]> {
  return (await journal.passkeys()).filter((p) => p.removedAt === null);
}

/** What the terms are read from, of an intent in any state: undefined until it is priced. */
type Priced = Omit<TermsSource, "amount" | "quoteExpiresAt" | "payee" | "quote" | "requirements"> & {
  amount?: bigint | null;
  quoteExpiresAt?: number | null;
  payee?: string | null;
  quote?: TermsSource["quote"];
  requirements?: TermsSource["requirements"];
};

function sourceOf(intent: Priced | undefined): TermsSource | undefined {
  if (!intent || intent.amount == null || intent.quoteExpiresAt == null) return undefined;
  return {
    kind: intent.kind,
    action: intent.action,
    input: intent.input,
    fingerprint: intent.fingerprint,
    amount: intent.amount,
    payee: intent.payee ?? null,
    quote: intent.quote ?? null,
    requirements: intent.requirements ?? null,
    quoteExpiresAt: intent.quoteExpiresAt,
  };
}

/** The terms of paying for an intent under an approval, canonical, and their challenge. */
export function signedTerms(intent: Priced | undefined, approvalId: string) {
  const source = sourceOf(intent);
  if (!source) return undefined;
  const terms = termsOf(source, approvalId);
  const canonical = canonicalTerms(terms);
  return { terms, canonical, challenge: termsChallenge(canonical) };
}

/** What the console's page hands navigator.credentials.get for one approval. */
export interface ApprovalChallenge {
  approvalId: string;
  terms: Terms;
  /** SHA-256 of the canonical terms, base64url. */
  challenge: string;
  rpId: string;
  /** The registered passkeys' credential ids (allowCredentials). */
  credentialIds: string[];
}

/** The challenge for an approval, or undefined when there is no such approval, its intent is not priced, or no passkey is registered. */
export async function approvalChallenge(
  journal: JournalStore,
  approvalId: string,
): Promise<ApprovalChallenge | undefined> {
  const approval = await journal.approval(approvalId);
  const keys = await registeredPasskeys(journal);
  if (!approval || keys.length === 0) return undefined;
  const signed = signedTerms(await journal.intent(approval.intentId), approvalId);
  if (!signed) return undefined;
  return {
    approvalId,
    terms: signed.terms,
    challenge: signed.challenge,
    rpId: RP_ID,
    credentialIds: keys.map((k) => k.credentialId),
  };
}

const refused = (approvalId: string, passkey: PasskeyProblem) =>
  paidError("approval_invalid", { approvalId, problem: "passkey_invalid", passkey });

/**
 * Approves a pending approval with a person's passkey assertion made on the console at
 * `origin`: verified against the terms of its intent and a registered passkey, then kept
 * with the approval while the passkey's counter advances (one transaction). Throws
 * approval_invalid (passkey_invalid, changed, mismatch) and approves nothing otherwise.
 */
export async function approveWithPasskey(
  journal: JournalStore,
  approval: Approval,
  assertion: AssertionParts,
  origin: string,
  now: number,
): Promise<PasskeyRecord> {
  const { approvalId } = approval;
  const key = (await registeredPasskeys(journal)).find((k) => k.credentialId === assertion.credentialId);
  if (!key) throw refused(approvalId, "credential");
  const signed = signedTerms(await journal.intent(approval.intentId), approvalId);
  if (!signed) throw paidError("approval_invalid", { approvalId, problem: "mismatch" });
  const checked = verifyAssertion(assertion, key, {
    challenge: signed.challenge,
    origin: (o) => o === origin && consoleOrigin(o),
  });
  if (!checked.ok) throw refused(approvalId, checked.problem);
  if (!counterAdvances(key.signCount, checked.signCount)) throw refused(approvalId, "counter");
  const kept: KeptAssertion = {
    v: 1,
    rpId: RP_ID,
    origin,
    terms: signed.canonical,
    challenge: signed.challenge,
    credential: {
      id: key.credentialId,
      publicKey: key.publicKey,
      algorithm: key.algorithm,
      owner: key.owner,
      ownerSignature: key.ownerSignature,
    },
    authenticatorData: assertion.authenticatorData,
    clientDataJSON: assertion.clientDataJSON,
    signature: assertion.signature,
    signCount: checked.signCount,
    verifiedAt: new Date(now).toISOString(),
  };
  const r = await journal.approveWithAssertion(
    approvalId,
    now,
    JSON.stringify(kept),
    key.credentialId,
    checked.signCount,
  );
  if (r === "changed") throw paidError("approval_invalid", { approvalId, problem: "changed" });
  if (r === "counter") throw refused(approvalId, "counter");
  return key;
}

/** Why an approved approval may not be used to sign for `intent`, or undefined when it may. */
export type AtUse = { problem: "passkey_required" } | { problem: "passkey_invalid"; passkey: PasskeyProblem };

/**
 * The check before an approved approval is used (fail closed): with no passkey registered,
 * nothing to check; else its kept assertion must be one of a registered passkey, made over
 * the terms of this intent (from the intent, now), on a console origin, with the person
 * verified, and its counter already recorded.
 */
export async function passkeyAtUse(
  journal: JournalStore,
  intent: Priced,
  approvalId: string,
): Promise<AtUse | undefined> {
  const keys = await registeredPasskeys(journal);
  if (keys.length === 0) return undefined;
  const kept = parseKept(await journal.approvalAssertion(approvalId));
  if (!kept) return { problem: "passkey_required" };
  const invalid = (passkey: PasskeyProblem): AtUse => ({ problem: "passkey_invalid", passkey });
  const key = keys.find((k) => k.credentialId === kept.credential.id);
  if (!key || key.publicKey !== kept.credential.publicKey) return invalid("credential");
  const signed = signedTerms(intent, approvalId);
  if (!signed || kept.terms !== signed.canonical || kept.challenge !== signed.challenge) return invalid("challenge");
  const checked = verifyAssertion(
    {
      credentialId: kept.credential.id,
      authenticatorData: kept.authenticatorData,
      clientDataJSON: kept.clientDataJSON,
      signature: kept.signature,
    },
    key,
    { challenge: signed.challenge, origin: consoleOrigin },
  );
  if (!checked.ok) return invalid(checked.problem);
  // Kept only as the counter advanced to it: a later counter was never recorded.
  if (checked.signCount > key.signCount) return invalid("counter");
  return undefined;
}
