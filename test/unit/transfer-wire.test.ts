/**
 * rails/solana/transfer.ts: the transfer exactTransfer writes into its kept layout is the one
 * @solana/kit compiles and signs, byte for byte, whatever the amount, memo and blockhash.
 */
import {
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  partiallySignTransactionMessageWithSigners,
} from "@solana/kit";
import { describe, expect, it } from "vitest";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { exactTransfer, transferMessage, type TransferInput } from "../../src/engine/rails/solana/transfer.js";

const MINT = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
const BLOCKHASHES = ["EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N", "11111111111111111111111111111111"];

async function input(amount: string, memo: string, blockhash: string, authority?: TransferInput["authority"]) {
  const [a, payee, feePayer, source] = await Promise.all([
    authority ?? generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
  ]);
  const requirements = {
    scheme: "exact",
    network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    asset: MINT,
    amount,
    payTo: payee.address,
    maxTimeoutSeconds: 60,
    extra: { feePayer: feePayer.address, memo },
  } as PaymentRequirements;
  return {
    authority: a,
    source: source.address,
    payeeAccount: payee.address,
    requirements,
    lifetime: { blockhash, lastValidHeight: 100n },
  } satisfies TransferInput;
}

const kit = async (o: TransferInput) =>
  getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(transferMessage(o)));

describe("exactTransfer", () => {
  it.each<[string, string, string]>([
    ["1", "qt_abc", BLOCKHASHES[0]!],
    ["0", "q", BLOCKHASHES[1]!],
    ["18446744073709551615", "x".repeat(127), BLOCKHASHES[0]!],
    ["5000", "a memo of 128 bytes, whose length takes two bytes: " + "y".repeat(76), BLOCKHASHES[0]!],
    ["288000", "ünïcödé memo ✓ " + "z".repeat(300), BLOCKHASHES[1]!],
  ])("amount %s, memo %j: kit's bytes", async (amount, memo, blockhash) => {
    const o = await input(amount, memo, blockhash);
    expect(exactTransfer(o)).toBe(await kit(o));
  });

  it("the same accounts again, with another amount, memo and blockhash (the kept layout): kit's bytes", async () => {
    const first = await input("1", "qt_first", BLOCKHASHES[0]!);
    expect(exactTransfer(first)).toBe(await kit(first));
    const again: TransferInput = {
      ...first,
      requirements: { ...first.requirements, amount: "999", extra: { ...first.requirements.extra, memo: "qt_again" } },
      lifetime: { blockhash: BLOCKHASHES[1]!, lastValidHeight: 5n },
    };
    expect(exactTransfer(again)).toBe(await kit(again));
  });

  it.each<[string, (o: TransferInput) => TransferInput, RegExp]>([
    [
      "no memo",
      (o) => ({ ...o, requirements: { ...o.requirements, extra: { feePayer: o.requirements.extra.feePayer } } }),
      /names no memo/,
    ],
    [
      "no fee payer",
      (o) => ({ ...o, requirements: { ...o.requirements, extra: { memo: "m" } } }),
      /names no fee payer/,
    ],
    [
      "an amount past a u64",
      (o) => ({ ...o, requirements: { ...o.requirements, amount: "18446744073709551616" } }),
      /u64/,
    ],
    [
      "the agent key as the fee payer",
      (o) => ({
        ...o,
        requirements: { ...o.requirements, extra: { ...o.requirements.extra, feePayer: o.authority.address } },
      }),
      /not among the transfer's signers/,
    ],
  ])("refuses %s", async (_name, change, error) => {
    const o = change(await input("1", "m", BLOCKHASHES[0]!));
    expect(() => exactTransfer(o)).toThrow(error);
  });
});
