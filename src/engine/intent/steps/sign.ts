/**
 * The sign step (from `reserved`): the last checks (expiry, the tightest cap, the ceiling
 * the chain enforces, the freeze), then the proof, signed by the rail of the requirement's
 * network with a lifetime of ours (Solana: a blockhash from our own RPC, fetched beside the
 * quote) and recorded with its payment record before it can leave.
 */
import { formatDecimal } from "../../../domain/money.js";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { paidError } from "../../errors.js";
import { refuseIfFrozen } from "../freeze.js";
import { callCeiling } from "../../budget/policy.js";
import { paidResourceUrl } from "../../service/api.js";
import type { IntentIn, PaymentRecord } from "../../model/types.js";
import type { ProofOptions } from "../../rails/port.js";
import { redactUrl } from "../../x402-http/request.js";
import type { HeldIntent } from "../held.js";
import type { Move } from "../moves.js";

/** An intent priced and about to be signed: reserved (the sign step), or reserving with it (the fast path). */
type Signing = IntentIn<"quoted" | "awaiting_approval" | "reserved">;

/** An action's proof names the v1 service's paid resource; a fetch's, the resource's own, with our memo. */
function proofOptions(baseUrl: string | undefined, intent: Signing): ProofOptions {
  if (intent.kind === "fetch")
    return {
      resource: intent.offer.resource ?? { url: redactUrl(intent.request.url) },
      memo: intent.quoteId,
      ...(intent.offer.extensions ? { extensions: intent.offer.extensions } : {}),
    };
  return baseUrl ? { resource: { url: paidResourceUrl(baseUrl) } } : {};
}

/** A proof signed in memory, with the payment record it is journaled with before it may leave. */
export interface SignedProof {
  proof: string;
  record: PaymentRecord;
}

/**
 * The last checks (expiry, the tightest cap, the ceiling the chain enforces, the freeze),
 * then the proof for the intent's checked requirements, signed with a lifetime of ours.
 * Records nothing: the caller journals it before it can leave.
 */
export async function signProof(
  h: HeldIntent,
  intent: Signing,
  requirements: PaymentRequirements,
): Promise<SignedProof> {
  const { c } = h;
  h.checkCancelled("before_sign");
  if (c.now() >= intent.quoteExpiresAt) throw paidError("quote_expired", { quoteId: intent.quoteId, stage: "sign" });
  // The lowest budget any call on this intent gave applies, even to a reservation made earlier.
  const origin = intent.kind === "fetch" ? intent.origin : undefined;
  const { ceiling, by } = callCeiling(c.config.limits, intent.action, intent.agentBudget ?? undefined, origin);
  if (intent.amount > ceiling) {
    throw paidError("budget_exceeded", {
      limit: by,
      amount: formatDecimal(intent.amount),
      ceiling: formatDecimal(ceiling),
      stage: "sign",
    });
  }
  const rail = await c.rails.rail(requirements.network);
  // A price the ceiling left on chain cannot cover (Solana's delegate allowance) is refused unsigned.
  await rail.admit(intent.amount);
  // The lifetime is ours (Solana: a blockhash our own RPC gave, fetched beside the quote), never the challenge's hint.
  const lifetime = await rail.lifetime(requirements);
  // Last look before anything is signed (the journal looks again when it records the proof).
  await refuseIfFrozen(c.journal);
  const { proof, record: onRail } = await rail.sign(requirements, lifetime, proofOptions(c.config.baseUrl, intent));
  c.d.transcripts.addSecret(proof, { ephemeral: true });
  const record: PaymentRecord = {
    quoteId: intent.quoteId,
    intentId: intent.intentId,
    attempt: intent.attempt,
    amount: intent.amount,
    payee: requirements.payTo,
    ...onRail,
    signedAt: c.now(),
    sentAt: null,
    fate: "pending",
    tx: null,
    claimedTx: null,
    checkedAt: null,
    watch: false,
  };
  return { proof, record };
}

/** What the transcript says of a proof once it is journaled: the lifetime it was signed with, on its rail. */
export function signedNote(record: PaymentRecord): Record<string, unknown> {
  const lifetime =
    record.nonce !== undefined
      ? { network: record.network, nonce: record.nonce, validBefore: String(record.validBefore) }
      : { blockhash: record.blockhash, lastValidHeight: String(record.lastValidHeight) };
  return { amount: formatDecimal(record.amount), payTo: record.payee, wallet: record.payer, ...lifetime };
}

/** Signs the reserved intent's proof; the move records it with its payment record, in one transaction. */
export async function sign(h: HeldIntent, intent: IntentIn<"reserved">): Promise<Move> {
  const { proof, record } = await signProof(h, intent, intent.requirements);
  return {
    outcome: "sign",
    patch: { proof },
    signed: record,
    note: { step: "signed", data: signedNote(record) },
    boundaries: ["signed"],
  };
}
