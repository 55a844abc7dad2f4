/**
 * What the budget-policy tests share: USDC amounts in atomic units, two payees, and the
 * default limits with some changed.
 */
import type { Limits } from "../../src/engine/config/config.js";

export const usdc = (n: number) => BigInt(Math.round(n * 1_000_000));

export const PAYEE = "PayeeAddr1111111111111111111111111111111111";
export const OTHER_PAYEE = "OtherPayee111111111111111111111111111111111";

export function limits(over: Partial<Limits> = {}): Limits {
  return {
    maxPerCall: usdc(5),
    maxPerDay: usdc(25),
    maxTotal: undefined,
    approvalAbove: usdc(1),
    allowActions: ["*"],
    perAction: {},
    allowedPayees: undefined,
    ...over,
  };
}
