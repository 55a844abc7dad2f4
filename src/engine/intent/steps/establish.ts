/**
 * A proof the service refused, and the establish step (from `unsettled`) that follows it:
 * whether money moved is read from the chain (chain/settlement.ts), never taken from the
 * service — landed (paid once, the purchase goes on), never landed (nothing charged, a fresh
 * attempt), or not known yet (the budget stays reserved and the engine keeps checking).
 */
import { paidError } from "../../errors.js";
import { establishFate } from "../../chain/settlement.js";
import { MAX_AUTOMATIC_ATTEMPTS } from "../../model/transitions.js";
import type { Payee } from "../../error-contexts.js";
import type { IntentIn } from "../../model/types.js";
import type { HeldIntent } from "../held.js";
import { restart, type Move } from "../moves.js";

/**
 * The service (or the resource) did not settle a proof that left: the move that leaves it to
 * the chain — at once, in the same call (steps/establish.ts runs next), and later if need be.
 */
export function proofRefused(
  intent: IntentIn<"signed" | "paid">,
  status: number,
  error: { code: string; message: string; reason?: unknown },
  sentAt: number,
  patch?: Move["patch"],
): Move {
  const e = paidError("outcome_unknown", {
    problem: "not_settled",
    who: payee(intent),
    status,
    serviceCode: error.code,
    detail: error.message,
    reason: error.reason,
  });
  return {
    outcome: "proof_refused",
    error: e,
    ...(patch ? { patch } : {}),
    payment: { sentAt },
    note: { step: "unsettled", data: { serviceCode: error.code, message: error.message } },
  };
}

/** Who was handed the intent's proof. */
const payee = (intent: Pick<IntentIn<"signed" | "paid" | "unsettled">, "kind">): Payee =>
  intent.kind === "fetch" ? "resource" : "service";

export async function establish(h: HeldIntent, intent: IntentIn<"unsettled">): Promise<Move> {
  const { c } = h;
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
    if (fate.problems.length > 0) return landedNotAsPriced(intent, fate.tx.signature, fate.problems);
    const note = `${who} refused a payment that landed on chain in ${fate.tx.signature} (${refusal?.message ?? "no reason given"}); it was paid once and the purchase goes on`;
    return { outcome: "landed", patch: { paymentTx: fate.tx.signature, settlement: "verified", attention: note } };
  }
  if (fate.kind === "unknown") {
    const e = paidError("outcome_unknown", {
      problem: "chain_unsure",
      who: payee(intent),
      why: fate.why,
      quoteId: intent.quoteId,
    });
    return { outcome: "fate_unknown", error: e };
  }
  const serviceCode = refusal?.code === "outcome_unknown" ? refusal.context?.serviceCode : undefined;
  return neverLanded(intent, fate.why, serviceCode);
}

/** A transfer of the proof landed, and it is not what was priced: spent, and a human's case. */
export function landedNotAsPriced(
  intent: IntentIn<"signed" | "unsettled">,
  tx: string,
  problems: readonly string[],
): Move {
  const e = paidError("payment_failed", {
    problem: "landed",
    transaction: tx,
    detail: `a transfer for quote ${intent.quoteId} landed in ${tx} but is not what was priced (${problems.join("; ")}); a human should check`,
  });
  return { outcome: "settlement_mismatch", error: e, patch: { paymentTx: tx, settlement: "mismatch" } };
}

/**
 * The proof can never land: nothing was spent, the reservation goes back (the proof is still
 * watched: chain/released-watch.ts) and, for an action, one fresh attempt follows at once.
 */
export function neverLanded(intent: IntentIn<"signed" | "unsettled">, why: string, serviceCode?: string): Move {
  const e = paidError("payment_invalid", {
    problem: "never_landed",
    who: payee(intent),
    why,
    quoteId: intent.quoteId,
    ...(serviceCode !== undefined ? { serviceCode } : {}),
  });
  const failed: Move = { outcome: "never_landed", error: e };
  // A fetch is not sent again unasked: the agent's next call with the same intentKey starts afresh.
  if (intent.kind === "fetch" || intent.attempt >= MAX_AUTOMATIC_ATTEMPTS) return failed;
  const retry = { step: "retry", data: { decision: "the proof can never land: a fresh attempt" } };
  return { ...failed, then: restart(intent, retry) };
}
