/**
 * verifyPayment (src/engine/chain/chain.ts): the settlement a service claims, read back as a
 * hand-built transaction, passes only when it is exactly the priced payment — and every
 * problem is named at once. Pure: no chain.
 */
import { describe, expect, it } from "vitest";
import { verifyPayment, type ChainTx } from "../../src/engine/chain/chain.js";
import { AMOUNT, EXPECTED, MEMO, MINT, payment, transfer, walletDelta } from "./chain.fixtures.js";

describe("verifyPayment", () => {
  it("passes the exact priced payment", () => {
    expect(verifyPayment(payment(), EXPECTED)).toEqual([]);
  });

  it.each<[string, Partial<ChainTx>]>([
    [
      "a plain Transfer (no mint named): the wallet's account fixes the mint",
      { transfers: [transfer({ mint: null })] },
    ],
    [
      "two transfers that add up to the price",
      { transfers: [transfer({ amount: 100_000n }), transfer({ amount: 150_000n })] },
    ],
    ["other memos beside the quote's", { memos: ["hello", MEMO] }],
    ["no balance entry for the wallet's account (the node did not report it)", { balanceChanges: [] }],
    [
      "other accounts' transfers beside ours",
      {
        transfers: [
          transfer(),
          { source: "Elsewhere", destination: "Other", authority: "Someone", mint: MINT, amount: 9n },
        ],
      },
    ],
  ])("passes %s", (_name, over) => {
    expect(verifyPayment(payment(over), EXPECTED)).toEqual([]);
  });

  it.each<[string, Partial<ChainTx>, RegExp[]]>([
    [
      "a failed transaction",
      { failed: true, balanceChanges: walletDelta(0n) },
      [/^transaction PaySig failed on chain$/],
    ],
    ["no memo", { memos: [] }, [/^it carries no memo q_target$/]],
    ["another memo", { memos: ["q_other"] }, [/^it carries no memo q_target$/]],
    ["a memo that only contains the quote id", { memos: ["q_target2"] }, [/^it carries no memo q_target$/]],
    [
      "a wrong destination",
      { transfers: [transfer({ destination: "OtherAta" })] },
      [/^it pays OtherAta, not the payee's token account PayeeAta$/],
    ],
    [
      "an authority that is not our wallet",
      { transfers: [transfer({ authority: "Delegate" })] },
      [/^its transfer is authorised by Delegate, not our wallet$/],
    ],
    ["another mint", { transfers: [transfer({ mint: "OtherMint" })] }, [/^it moves mint OtherMint, not Mint$/]],
    [
      "amount + 1 (the balance agrees)",
      { transfers: [transfer({ amount: AMOUNT + 1n })], balanceChanges: walletDelta(-AMOUNT - 1n) },
      [
        /^it moves 250001 atomic units, not the 250000 priced$/,
        /^the wallet's balance changed by -250001, not by -250000$/,
      ],
    ],
    [
      "amount - 1 (the balance agrees)",
      { transfers: [transfer({ amount: AMOUNT - 1n })], balanceChanges: walletDelta(-AMOUNT + 1n) },
      [
        /^it moves 249999 atomic units, not the 250000 priced$/,
        /^the wallet's balance changed by -249999, not by -250000$/,
      ],
    ],
    [
      "amount + 1 in the instruction only",
      { transfers: [transfer({ amount: AMOUNT + 1n })] },
      [/^it moves 250001 atomic units, not the 250000 priced$/],
    ],
    [
      "a balance change beyond the transfer (an inner instruction moved more)",
      { balanceChanges: walletDelta(-AMOUNT - 5n) },
      [/^the wallet's balance changed by -250005, not by -250000$/],
    ],
    [
      "a balance that went up",
      { balanceChanges: walletDelta(AMOUNT) },
      [/^the wallet's balance changed by 250000, not by -250000$/],
    ],
    [
      "the wallet's account holding another mint",
      { balanceChanges: walletDelta(-AMOUNT, "OtherMint") },
      [/^the wallet's token account holds mint OtherMint, not Mint$/],
    ],
    [
      "nothing moved out of the wallet's account",
      { transfers: [transfer({ source: "SomeoneElsesAta" })] },
      [/^it moves nothing out of the wallet's token account WalletAta$/],
    ],
    ["no transfer at all", { transfers: [] }, [/^it moves nothing out of the wallet's token account WalletAta$/]],
    [
      "an extra transfer out of our account to someone else",
      {
        transfers: [transfer(), transfer({ destination: "Thief", amount: 1n })],
        balanceChanges: walletDelta(-AMOUNT - 1n),
      },
      [
        /^it pays Thief, not the payee's token account PayeeAta$/,
        /^it moves 250001 atomic units/,
        /^the wallet's balance changed by -250001/,
      ],
    ],
  ])("reports %s", (_name, over, problems) => {
    const got = verifyPayment(payment(over), EXPECTED);
    expect(got).toHaveLength(problems.length);
    problems.forEach((p, i) => expect(got[i]).toMatch(p));
  });

  it("reports every problem at once, not just the first", () => {
    const tx = payment({
      failed: true,
      memos: ["q_other"],
      transfers: [transfer({ destination: "OtherAta", authority: "Delegate", mint: "OtherMint", amount: AMOUNT + 1n })],
      balanceChanges: walletDelta(0n, "OtherMint"),
    });
    expect(verifyPayment(tx, EXPECTED)).toEqual([
      "transaction PaySig failed on chain",
      "it carries no memo q_target",
      "it pays OtherAta, not the payee's token account PayeeAta",
      "its transfer is authorised by Delegate, not our wallet",
      "it moves mint OtherMint, not Mint",
      "it moves 250001 atomic units, not the 250000 priced",
      "the wallet's token account holds mint OtherMint, not Mint",
      // The balance delta is not judged on a failed transaction (it moved nothing).
    ]);
  });
});
