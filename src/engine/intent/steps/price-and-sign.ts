/**
 * The fast path from `new`, taken right after the price arrives — an action's quote that
 * carries its payment challenge and echoes this very input, or a fetch's 402 — when the
 * limits let it through without a person: the price, the reservation and the signed proof
 * are journaled in one transaction — the step-by-step path's three commits (quoted, reserved,
 * signed) in one. The checks are that path's own, in its order (steps/decide.ts,
 * payment/challenge.ts, steps/sign.ts), and the state moves by the same three rows of the
 * transitions table. Nothing leaves the process before the transaction commits.
 *
 * Any check that does not pass, or a commit the budget refuses, leaves nothing written but
 * the price: the step-by-step path then runs from the recorded quote and refuses (or asks a
 * person) exactly as it always has.
 */
import type { PaymentRequirements, Quote } from "../../../domain/wire.js";
import type { Ctx } from "../../context.js";
import type { IntentIn } from "../../model/types.js";
import { challengeFresh, type CheckedChallenge } from "../../payment/challenge.js";
import { selfProvingChallenge } from "../answers.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { precheck, reservation } from "./decide.js";
import { signedNote, signProof } from "./sign.js";

/**
 * An action's quote that may take the fast path: it carries its challenge, young enough to
 * sign, and echoes this very input. Its challenge's requirements, or undefined.
 */
export function fastChallenge(
  c: Ctx,
  quote: Quote,
  input: unknown,
  quotedAt: number,
): PaymentRequirements[] | undefined {
  const accepts = selfProvingChallenge(quote, input);
  return accepts && challengeFresh(c, quotedAt) ? accepts : undefined; // else a fresher challenge is asked for first
}

/** The price recorded alone: the fast path was not taken (and why, when a check said so). */
function notTaken(quoted: Move, why: string | undefined): Move {
  return why === undefined ? quoted : { ...quoted, note: { step: "fast_path", data: { taken: false, why } } };
}

/**
 * The fast path for the intent as priced (`priced`, in memory only until the one commit) and
 * the challenge `challenge` checks against its price: the move from `new` to `signed` in one
 * commit; or `quoted`, the price alone, when any check does not pass (the step-by-step path
 * then runs from the recorded price) — and in its place when the journal refuses the commit.
 */
export async function priceAndSign(
  h: HeldIntent,
  priced: IntentIn<"quoted">,
  quoted: Move,
  challenge: () => Promise<CheckedChallenge>,
): Promise<Move> {
  const { c } = h;
  try {
    const pre = await precheck(c, priced);
    if (pre.needsApproval) return notTaken(quoted, "a person must approve first");
    const checked = await challenge();
    h.checkCancelled("before_reserve");
    const reserving = reservation(c, priced, pre, checked);
    const { proof, record } = await signProof(h, priced, checked.requirements);
    return {
      outcome: ["quote_recorded", "reserve", "sign"],
      patch: { ...quoted.patch, ...reserving.patch, proof },
      reserve: reserving.reserve,
      signed: record,
      note: {
        step: "signed",
        data: { ...signedNote(record), path: "fast: price, reservation and proof in one commit" },
      },
      boundaries: ["quote_recorded", "reserved", "signed"],
      // Refused by the budget (or frozen since): nothing was written, the proof never left; the
      // step-by-step path decides again. A memo another purchase's proof carries stops it here.
      otherwise: (refused) =>
        refused.code === "payment_unsupported" || refused.code === "quote_drift"
          ? refusal(h.intent.state, refused)
          : notTaken(quoted, refused.code === "frozen" ? undefined : refused.message.slice(0, 200)),
    };
  } catch (e) {
    return notTaken(quoted, (e as Error).message?.slice(0, 200));
  }
}
