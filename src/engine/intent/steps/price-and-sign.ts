/**
 * The fast path from `new`, taken right after the price arrives — an action's quote that
 * carries its payment challenge and echoes this very input, or a fetch's 402 — when the
 * limits let it through without a person: the price, the reservation and the signed proof
 * are journaled in one transaction —
 * the step-by-step path's three commits (quoted, reserved, signed) in one. The checks are that
 * path's own, in its order (steps/decide.ts, payment/challenge.ts, steps/sign.ts), and the
 * state moves by the same three rows of the transitions table. Nothing leaves the process
 * before the transaction commits.
 *
 * Any check that does not pass, or a commit the budget refuses, leaves nothing written: the
 * step-by-step path then runs from the recorded quote and refuses (or asks a person) exactly
 * as it always has.
 */
import type { PaymentRequirements, Quote } from "../../../domain/wire.js";
import { challengeFresh } from "../../payment/challenge.js";
import { LeaseLost, PaymentsFrozen } from "../../journal/port.js";
import { transition } from "../../model/transitions.js";
import type { Intent, IntentPatch } from "../../model/types.js";
import { selfProvingChallenge } from "../answers.js";
import type { HeldIntent } from "../held.js";
import { precheck, reserveFor } from "./decide.js";
import { signedNote, signProof } from "./sign.js";

/** The state the table's rows quote_recorded, reserve and sign lead to from `state`, in turn. */
function pricedAndSigned(state: Intent["state"]): Intent["state"] {
  return transition(transition(transition(state, "quote_recorded").state, "reserve").state, "sign").state;
}

/**
 * An action's quote that may take the fast path: it carries its challenge, young enough to
 * sign, and echoes this very input. Its challenge's requirements, or undefined.
 */
export function fastChallenge(h: HeldIntent, quote: Quote, quotedAt: number): PaymentRequirements[] | undefined {
  const accepts = selfProvingChallenge(quote, h.intent.input);
  return accepts && challengeFresh(h.c, quotedAt) ? accepts : undefined; // else a fresher challenge is asked for first
}

/**
 * Takes the fast path for the price in `pricePatch` and the challenge `challenge` checks
 * against it: true once the intent is `signed`; false, with nothing written, when any check
 * does not pass (the step-by-step path then runs from the recorded price).
 */
export async function priceAndSign(
  h: HeldIntent,
  pricePatch: IntentPatch,
  challenge: () => Promise<PaymentRequirements>,
): Promise<boolean> {
  const { c } = h;
  const recorded = h.intent;
  // What the checks read, in memory only until the one commit.
  h.intent = { ...recorded, ...pricePatch };
  try {
    const pre = await precheck(h);
    if (pre.needsApproval) throw new Error("a person must approve first");
    const requirements = await challenge();
    h.checkCancelled("before the payment was reserved");
    h.intent = { ...h.intent, requirements, payee: h.intent.payee ?? requirements.payTo };
    const { proof, record } = await signProof(h);
    await reserveFor(h, pre, requirements, { ...pricePatch, state: pricedAndSigned(recorded.state), proof }, record);
    c.transcript(h.intent, "signed", {
      ...signedNote(record),
      path: "fast: price, reservation and proof in one commit",
    });
    for (const step of ["quote_recorded", "reserved", "signed"] as const) c.step(step, h.intent);
    return true;
  } catch (e) {
    if (e instanceof LeaseLost) throw e;
    // Not the fast path after all (or frozen since): nothing was written, the proof never left.
    h.intent = recorded;
    if (!(e instanceof PaymentsFrozen))
      c.transcript(recorded, "fast_path", { taken: false, why: (e as Error).message?.slice(0, 200) });
    return false;
  }
}
