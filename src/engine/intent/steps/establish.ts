/**
 * A proof the service refused, and the establish step (from `unsettled`) that follows it:
 * whether money moved is read from the chain (chain/settlement.ts), never taken from the
 * service — landed (paid once, the purchase goes on), never landed (nothing charged, a fresh
 * attempt), or not known yet (the budget stays reserved and the engine keeps checking).
 */
import { PaidActionError, toStored } from "../../errors.js";
import { establishFate } from "../../chain/settlement.js";
import { MAX_AUTOMATIC_ATTEMPTS } from "../../model/transitions.js";
import type { HeldIntent } from "../held.js";

/** The service did not settle a proof that left: the chain decides (now, in the same call). */
export async function proofRefused(
  h: HeldIntent,
  status: number,
  error: { code: string; message: string; reason?: unknown },
  sentAt: number,
): Promise<void> {
  const reason = typeof error.reason === "string" ? `: ${error.reason.slice(0, 120)}` : "";
  const who = h.intent.kind === "fetch" ? "the resource" : "the service";
  const e = new PaidActionError(
    "outcome_unknown",
    `${who} did not settle the payment (HTTP ${status} ${error.code}${reason}: ${error.message}); whether money moved is being established from the chain, and the budget stays reserved`,
    { serviceCode: error.code, reason: error.reason },
    true,
  );
  await h.advance("proof_refused", { error: toStored(e) }, { sentAt });
  h.c.transcript(h.intent, "unsettled", { serviceCode: error.code, message: error.message });
}

export async function establish(h: HeldIntent): Promise<void> {
  const { c, intent } = h;
  const who = intent.kind === "fetch" ? "the resource" : "the service";
  const refusal = intent.error;
  const fate = await establishFate(c, intent);
  c.transcript(intent, "fate", {
    fate: fate.kind,
    ...(fate.kind === "landed"
      ? { transaction: fate.tx.signature, problems: fate.problems }
      : fate.kind === "unknown"
        ? { why: fate.why }
        : {}),
  });
  if (fate.kind === "landed") {
    if (fate.problems.length > 0) {
      const e = new PaidActionError(
        "payment_failed",
        `a transfer for quote ${intent.quoteId} landed in ${fate.tx.signature} but is not what was priced (${fate.problems.join("; ")}); a human should check`,
        { transaction: fate.tx.signature },
      );
      await h.settle("settlement_mismatch", e, { paymentTx: fate.tx.signature, settlement: "mismatch" });
      return;
    }
    const note = `${who} refused a payment that landed on chain in ${fate.tx.signature} (${refusal?.message ?? "no reason given"}); it was paid once and the purchase goes on`;
    await h.settle("landed", null, { paymentTx: fate.tx.signature, settlement: "verified", attention: note });
    return;
  }
  if (fate.kind === "unknown") {
    await h.settle(
      "fate_unknown",
      new PaidActionError(
        "outcome_unknown",
        `${who} did not settle the payment and the chain cannot tell yet whether it landed (${fate.why}); the budget stays reserved and the engine keeps checking — call again with the same intentKey`,
        { quoteId: intent.quoteId },
        true,
      ),
    );
    return;
  }
  const serviceCode = refusal?.code === "outcome_unknown" ? refusal.context?.serviceCode : undefined;
  const e = new PaidActionError(
    "payment_invalid",
    `${who} refused the payment (${serviceCode ?? "refused"}) and its transfer can never land (our Solana RPC's finalized block height is past the last one its blockhash is valid for, and the wallet's history holds no transfer for quote ${intent.quoteId}): nothing was charged`,
    { quoteId: intent.quoteId, serviceCode },
  );
  await h.settle("never_landed", e);
  // Its blockhash may be why it could not land: the next proof is signed with a fresh one.
  c.lifetimes.drop();
  // A fetch is not sent again unasked: the agent's next call with the same intentKey starts afresh.
  if (intent.kind === "action" && intent.attempt < MAX_AUTOMATIC_ATTEMPTS) {
    c.transcript(h.intent, "retry", { decision: "the refused proof can never land: a fresh attempt" });
    await h.restart();
  }
}
