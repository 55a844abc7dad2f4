/**
 * How whatever a drive throws reaches the caller: as a PaidActionError with a stable code
 * (a lost lease and a busy journal as `busy`, a freeze as `frozen`, anything unforeseen as
 * `service_error`), a cancellation as `cancelled`, and the limits' refusal (budget/policy.ts)
 * as the error of its code.
 */
import type { BudgetRefusal } from "../budget/policy.js";
import { PaidActionError, paidError, type CancelStage, type PurchaseContext } from "../errors.js";
import { frozenError } from "./freeze.js";
import { LeaseLost, PaymentsFrozen } from "../journal/port.js";
import type { IntentRecord } from "../model/types.js";

export function asError(e: unknown): PaidActionError {
  if (e instanceof PaidActionError) return e;
  if (e instanceof LeaseLost) return paidError("busy", { by: "call", intentId: e.intentId });
  if (e instanceof PaymentsFrozen) return frozenError(e.freeze);
  const code = (e as { code?: unknown })?.code;
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") return paidError("busy", { by: "journal" });
  return paidError("service_error", { problem: "unexpected", detail: (e as Error)?.message ?? String(e) });
}

/** The call's caller gave up at `stage` (nothing was paid by then). */
export function cancelled(intent: Pick<IntentRecord, "intentId">, stage: CancelStage): PaidActionError {
  return paidError("cancelled", { stage, intentId: intent.intentId });
}

/** The limits' refusal as the error of its code; `purchase` says which purchase it refused. */
export function budgetRefusal(refused: BudgetRefusal, purchase: PurchaseContext = {}): PaidActionError {
  switch (refused.code) {
    case "budget_exceeded":
      return paidError(refused.code, { ...purchase, ...refused.context });
    case "action_not_allowed":
      return paidError(refused.code, { ...purchase, ...refused.context });
    case "payee_not_allowed":
      return paidError(refused.code, { ...purchase, ...refused.context });
  }
}
