/**
 * Whether a settlement that failed may have sent its transaction, read from the reference
 * facilitator's answer: the service's settlement and the facilitator's both ask it.
 */
import type { SettleResponse } from "@x402/core/types";

/**
 * Failure reasons of `@x402/svm`'s exact `settle()` that it returns after it has sent the
 * transaction (or when an earlier call of it did): the money may have moved.
 */
const AFTER_SEND_REASONS = new Set([
  "settlement_pending",
  "duplicate_settlement",
  "post_settlement_transfer_not_confirmed",
]);

/**
 * Whether a failed facilitator settle may have sent its transaction. Reading the exact
 * scheme's settle(): every verification failure (the `invalid_exact_svm_*` reasons) returns
 * before signing, with `transaction: ""`; a send that throws returns `transaction_failed`
 * with `transaction: ""` (on this ledger that is a refusal: LiteSVM applies a transaction or
 * refuses it, synchronously). Once the transaction is sent, every failure carries its
 * signature in `transaction` (an on-chain failure, a confirmation failure reported as
 * `settlement_pending`), or is one of AFTER_SEND_REASONS.
 */
export function mayHaveBeenSent(result: Pick<SettleResponse, "errorReason" | "transaction">): boolean {
  return (
    (typeof result.transaction === "string" && result.transaction !== "") ||
    AFTER_SEND_REASONS.has(result.errorReason ?? "")
  );
}
