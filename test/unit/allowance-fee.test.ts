/**
 * The fee check of `allowance submit`, on real wire transactions built and signed offline:
 * our own grant and revoke pass at 5,000 lamports; a unit limit and a unit price pass while
 * the whole fee stays within 0.00001 SOL; a priority fee above it (the 0.14 SOL grant), any
 * other compute-budget instruction, or one given twice is refused before anything is sent.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { getApproveCheckedInstruction } from "@solana-program/token";
import { beforeAll, describe, expect, it } from "vitest";
import { describeFee } from "../../src/engine/rails/solana/allowance.js";
import {
  allowanceTransaction,
  MAX_ALLOWANCE_FEE_LAMPORTS,
  readAllowanceTransaction,
} from "../../src/engine/rails/solana/delegate.js";

const BUDGET = address("ComputeBudget111111111111111111111111111111");
const LIFETIME = { blockhash: "4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM", lastValidHeight: 1_000n };

const le = (v: bigint, bytes: number) => Array.from({ length: bytes }, (_, i) => Number((v >> BigInt(8 * i)) & 0xffn));
const unitLimit = (units: number): Instruction => ({
  programAddress: BUDGET,
  data: new Uint8Array([2, ...le(BigInt(units), 4)]),
});
const unitPrice = (microLamports: bigint): Instruction => ({
  programAddress: BUDGET,
  data: new Uint8Array([3, ...le(microLamports, 8)]),
});
const heapFrame = (bytes: number): Instruction => ({
  programAddress: BUDGET,
  data: new Uint8Array([1, ...le(BigInt(bytes), 4)]),
});

let owner: KeyPairSigner;
let e: { owner: string; account: string; agent: string; mint: string };
beforeAll(async () => {
  owner = await generateKeyPairSigner();
  const [account, agent, mint] = await Promise.all([1, 2, 3].map(() => generateKeyPairSigner()));
  e = { owner: owner.address, account: account!.address, agent: agent!.address, mint: mint!.address };
});

/** A grant of 5 USDC to the agent key, signed by the owner, with these compute-budget instructions before it. */
async function grantWith(budget: Instruction[]): Promise<string> {
  const approve = getApproveCheckedInstruction({
    source: address(e.account),
    mint: address(e.mint),
    delegate: address(e.agent),
    owner,
    amount: 5_000_000n,
    decimals: 6,
  });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(owner, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash(LIFETIME.blockhash), lastValidBlockHeight: LIFETIME.lastValidHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions([...budget, approve], m),
  );
  return getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
}

describe("allowance submit: the compute budget and the fee", () => {
  it("the bound is 10,000 lamports (0.00001 SOL): twice what our own grant costs", () => {
    expect(MAX_ALLOWANCE_FEE_LAMPORTS).toBe(10_000n);
  });

  it.each([
    ["grant", { kind: "grant", amount: 7_500_000n }],
    ["revoke", { kind: "revoke" }],
  ] as const)(
    "our own %s (allowanceTransaction) costs 5,000 lamports: one signature, no priority fee",
    async (_n, change) => {
      const wire = await allowanceTransaction({ ...e, owner, change, lifetime: LIFETIME });
      const r = readAllowanceTransaction(wire, e);
      expect(r).toMatchObject({ ok: true, signed: true, change });
      if (!r.ok) return;
      expect(r.fee).toEqual({
        lamports: 5_000n,
        base: 5_000n,
        priority: 0n,
        signatures: 1,
        unitLimit: 200_000,
        microLamportsPerUnit: 0n,
      });
      expect(describeFee(r.fee)).toBe("0.000005 SOL (5000 lamports: 5000 for 1 signature, no priority fee)");
    },
  );

  it.each([
    ["a unit limit alone", [unitLimit(20_000)], 5_000n],
    [
      "the reference client's limit and price (20,000 units at 1 microlamport: rounded up)",
      [unitLimit(20_000), unitPrice(1n)],
      5_001n,
    ],
    ["a price alone, on the default 200,000 units, up to the bound", [unitPrice(25_000n)], 10_000n],
    ["a price in either order with its limit", [unitPrice(250_000n), unitLimit(20_000)], 10_000n],
  ])("passes: %s", async (_name, budget, lamports) => {
    const r = readAllowanceTransaction(await grantWith(budget), e);
    expect(
      r.ok,
      JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
    ).toBe(true);
    if (r.ok) expect(r.fee.lamports).toBe(lamports);
  });

  it.each([
    [
      "the 0.14 SOL grant: 1,400,000 units at 100,000,000 microlamports",
      [unitLimit(1_400_000), unitPrice(100_000_000n)],
      /^its fee would be 0\.140005 SOL \(140005000 lamports: 5000 for 1 signature, a priority fee of 140000000 lamports \(100000000 microlamports × 1400000 compute units\)\), above the 0\.00001 SOL/,
    ],
    ["one lamport over the bound", [unitPrice(25_001n)], /^its fee would be 0\.000010001 SOL/],
    [
      "a unit limit past the maximum counts as the maximum",
      [unitLimit(4_000_000), unitPrice(10_000n)],
      /× 1400000 compute units/,
    ],
    ["a heap frame", [heapFrame(256 * 1024)], /not only one unit limit and one unit price/],
    ["a limit given twice", [unitLimit(20_000), unitLimit(30_000)], /not only one unit limit and one unit price/],
    ["a price given twice", [unitPrice(1n), unitPrice(1n)], /not only one unit limit and one unit price/],
  ])("refuses: %s", async (_name, budget, problem) => {
    const r = readAllowanceTransaction(await grantWith(budget), e);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toMatch(problem);
  });
});
