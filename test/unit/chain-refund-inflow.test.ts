/**
 * refundInflow (src/engine/chain/chain.ts): how much of a transaction's money came back to
 * the wallet from the payee, judged by the balance changes. Pure: no chain.
 */
import { describe, expect, it } from "vitest";
import { refundInflow, type ChainTx } from "../../src/engine/chain/chain.js";
import { AMOUNT, MINT, PAYEE, PAYEE_ATA, payment, WALLET, WALLET_ATA } from "./chain.fixtures.js";

describe("refundInflow", () => {
  const O = { walletAta: WALLET_ATA, payee: PAYEE, mint: MINT };
  const refund = (balanceChanges: ChainTx["balanceChanges"], over: Partial<ChainTx> = {}): ChainTx =>
    payment({ signature: "RefundSig", memos: [], transfers: [], balanceChanges, ...over });
  const wallet = (delta: bigint, mint = MINT) => ({ account: WALLET_ATA, owner: WALLET, mint, delta });
  const payeeAcct = (delta: bigint, account = PAYEE_ATA, mint = MINT) => ({ account, owner: PAYEE, mint, delta });

  it.each<[string, ChainTx["balanceChanges"], bigint | "not_from_payee"]>([
    ["the payee's account loses what the wallet gains", [payeeAcct(-AMOUNT), wallet(AMOUNT)], AMOUNT],
    [
      "the wallet gains less than the payee lost: the wallet's gain",
      [payeeAcct(-AMOUNT), wallet(AMOUNT - 10n), { account: "Fee", owner: "Other", mint: MINT, delta: 10n }],
      AMOUNT - 10n,
    ],
    [
      "the payee lost less than the wallet gained: the payee's loss",
      [payeeAcct(-100n), wallet(AMOUNT), { account: "OtherAta", owner: "Other", mint: MINT, delta: -(AMOUNT - 100n) }],
      100n,
    ],
    [
      "the payee's loss spread over two of its accounts",
      [payeeAcct(-100n), payeeAcct(-150n, "PayeeAta2"), wallet(250n)],
      250n,
    ],
    [
      "inflow from someone other than the payee",
      [{ account: "OtherAta", owner: "Other", mint: MINT, delta: -AMOUNT }, wallet(AMOUNT)],
      "not_from_payee",
    ],
    [
      "a payee account whose owner the node did not report",
      [{ account: PAYEE_ATA, owner: null, mint: MINT, delta: -AMOUNT }, wallet(AMOUNT)],
      "not_from_payee",
    ],
    ["no inflow: the wallet's balance unchanged", [payeeAcct(0n), wallet(0n)], "not_from_payee"],
    [
      "no inflow: the wallet paid (our own payment, not a refund)",
      [wallet(-AMOUNT), payeeAcct(AMOUNT)],
      "not_from_payee",
    ],
    ["no balance entries at all", [], "not_from_payee"],
    ["another mint", [payeeAcct(-AMOUNT, PAYEE_ATA, "OtherMint"), wallet(AMOUNT, "OtherMint")], "not_from_payee"],
  ])("%s", (_name, balanceChanges, expected) => {
    expect(refundInflow(refund(balanceChanges), O)).toBe(expected);
  });

  it("a failed transaction brought nothing back", () => {
    expect(refundInflow(refund([payeeAcct(-AMOUNT), wallet(AMOUNT)], { failed: true }), O)).toBe("not_from_payee");
  });
});
