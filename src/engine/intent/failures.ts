/**
 * How whatever a drive throws reaches the caller: as a PaidActionError with a stable code
 * (a lost lease and a busy journal as `busy`, a freeze as `frozen`, anything unforeseen as
 * `service_error`), and a cancellation as `cancelled`.
 */
import { PaidActionError } from "../errors.js";
import { frozenError } from "./freeze.js";
import { LeaseLost, PaymentsFrozen } from "../journal/port.js";
import type { IntentRecord } from "../model/types.js";

export function asError(e: unknown): PaidActionError {
  if (e instanceof PaidActionError) return e;
  if (e instanceof LeaseLost)
    return new PaidActionError(
      "busy",
      "another call is driving this purchase right now; call again in a few seconds with the same intentKey",
      { intentId: e.intentId },
      true,
    );
  if (e instanceof PaymentsFrozen) return frozenError(e.freeze);
  const code = (e as { code?: unknown })?.code;
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new PaidActionError(
      "busy",
      "the journal is busy with another process's write; retry in a moment with the same intentKey",
      {},
      true,
    );
  }
  return new PaidActionError(
    "service_error",
    `unexpected failure: ${(e as Error)?.message ?? String(e)}`.slice(0, 500),
  );
}

export function cancelled(intent: Pick<IntentRecord, "intentId">, what: string): PaidActionError {
  return new PaidActionError("cancelled", `the call was cancelled ${what}; nothing was paid`, {
    intentId: intent.intentId,
  });
}
