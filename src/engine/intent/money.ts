/**
 * Where a purchase's money is when the engine answers a call about it — none, in flight or
 * settled — from the journal, not from the refusal's code: the state's word (model/states.ts)
 * and the fate of every proof signed for the intent, over all its attempts. What the agent is
 * told to do follows it (error-table.ts): "nothing was paid" only where no proof of the
 * purchase has landed or can still land.
 */
import type { Ctx } from "../context.js";
import { fromStored, type PaidActionError } from "../errors.js";
import { STATES, type Money } from "../model/states.js";
import type { IntentState, PaymentFate } from "../model/types.js";

/** What one proof's fate says of the money: never landing is nothing; not known yet is in flight; landed is spent. */
const BY_FATE = { never: "none", pending: "in_flight", landed: "settled" } as const satisfies Record<
  PaymentFate,
  Money
>;
const RANK = { none: 0, in_flight: 1, settled: 2 } as const satisfies Record<Money, number>;

/**
 * The purchase's money: the worst of what its state says and what each of its proofs' fates
 * says — a proof that landed makes it settled whatever the state (a late landing after a
 * fresh attempt), one whose fate is not known keeps it in flight.
 */
export function purchaseMoney(state: IntentState, fates: readonly PaymentFate[]): Money {
  let money: Money = STATES[state].money;
  for (const fate of fates) if (RANK[BY_FATE[fate]] > RANK[money]) money = BY_FATE[fate];
  return money;
}

/**
 * The refusal with where its purchase's money is (`money` in its context), read from the
 * journal now; as it was when it names no intent the journal knows, or the journal cannot be
 * read (its hint then follows the state it names). Its words are kept.
 */
export async function withMoney(c: Pick<Ctx, "journal">, e: PaidActionError): Promise<PaidActionError> {
  const intentId = e.context.intentId;
  if (typeof intentId !== "string") return e;
  try {
    const intent = await c.journal.intent(intentId);
    if (!intent) return e;
    const fates = (await c.journal.paymentsOf(intentId)).map((p) => p.fate);
    const money = purchaseMoney(intent.state, fates);
    return e.context.money === money ? e : fromStored(e.code, e.message, { ...e.context, money }, e.retryable);
  } catch {
    return e;
  }
}
