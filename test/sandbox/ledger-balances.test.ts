/**
 * The balances a landed transaction's meta reports (src/sandbox/ledger/balances.ts) are read
 * through LiteSVM's native handle on the hot path: the same lamports and token balances as
 * LiteSVM's public `getAccount` and the SPL token decoder give, and the fast path really is
 * the one taken with the litesvm this project pins (an upgrade that moves it fails here).
 */
import { describe, expect, it } from "vitest";
import { LiteSVM } from "litesvm";
import { address, generateKeyPairSigner, lamports, type Address } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS, getTokenDecoder, getTokenEncoder } from "@solana-program/token";
import { BalanceReader } from "../../src/sandbox/ledger/balances.js";

const MINT = address("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
const MEMO = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

async function ledgerWithAccounts() {
  const svm = new LiteSVM();
  const owner = (await generateKeyPairSigner()).address;
  const tokenAccount = (await generateKeyPairSigner()).address;
  const plain = (await generateKeyPairSigner()).address;
  const missing = (await generateKeyPairSigner()).address;
  const data = new Uint8Array(
    getTokenEncoder().encode({
      mint: MINT,
      owner,
      amount: 123_456_789n,
      delegate: null,
      state: 1,
      isNative: null,
      delegatedAmount: 0n,
      closeAuthority: null,
    }),
  );
  svm.setAccount({
    address: tokenAccount,
    lamports: lamports(2_039_280n),
    programAddress: TOKEN_PROGRAM_ADDRESS,
    executable: false,
    data,
    space: BigInt(data.length),
  });
  svm.airdrop(plain, lamports(5_000_000n));
  return { svm, owner, accounts: [plain, tokenAccount, TOKEN_PROGRAM_ADDRESS, MEMO, missing] as Address[] };
}

describe("the balances of a transaction's accounts", () => {
  it("read through the native handle: the public getAccount's lamports and the token decoder's balances", async () => {
    const { svm, owner, accounts } = await ledgerWithAccounts();
    const reader = new BalanceReader(svm);
    expect(reader.fast).toBe(true);
    const publicOnly = new BalanceReader({ getAccount: (a: Address) => svm.getAccount(a) } as unknown as LiteSVM);
    expect(publicOnly.fast).toBe(false);

    const expected = accounts.map((a) => {
      const acc = svm.getAccount(a);
      return acc.exists ? acc.lamports : 0n;
    });
    const stored = svm.getAccount(accounts[1]!);
    if (!stored.exists) throw new Error("the token account was not written");
    const token = getTokenDecoder().decode(stored.data);
    for (const r of [reader, publicOnly]) {
      // Twice: the second time, the programs' lamports come from memory.
      for (let i = 0; i < 2; i++) {
        const read = r.balances(accounts);
        expect(read.lamports).toEqual(expected);
        expect(read.tokens).toEqual([{ accountIndex: 1, mint: token.mint, owner: token.owner, amount: token.amount }]);
        expect(read.tokens[0]).toMatchObject({ mint: MINT, owner, amount: 123_456_789n });
      }
    }
  });
});
