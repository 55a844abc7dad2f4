/**
 * The RPC decoder (src/engine/rails/solana/rpc.ts) against real signed v0 transactions built with
 * @solana/kit: transfers, memos, balance changes, lookup tables, failed transactions. No
 * network, no ledger.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { getTransferCheckedInstruction, getTransferInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyPayment, type ChainTx } from "../../src/engine/chain/chain.js";
import { decodeRpcTransaction, type RpcTransaction } from "../../src/engine/rails/solana/rpc.js";

const MEMO_V2 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
const MEMO_V1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
const TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

describe("decodeRpcTransaction", () => {
  let feePayer: KeyPairSigner;
  let owner: KeyPairSigner;
  let mint: Address;
  let source: Address;
  let destination: Address;
  let payee: Address;
  let lookupTable: Address;
  let recentBlockhash: string;

  beforeAll(async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => generateKeyPairSigner()));
    [feePayer, owner] = [keys[0]!, keys[1]!];
    [mint, source, destination, payee, lookupTable] = keys.slice(2, 7).map((k) => k.address) as [
      Address,
      Address,
      Address,
      Address,
      Address,
    ];
    recentBlockhash = keys[7]!.address;
  });

  const memoIx = (text: string, program = MEMO_V2): Instruction => ({
    programAddress: address(program),
    accounts: [],
    data: new TextEncoder().encode(text),
  });
  const transferChecked = (amount: bigint, program: string = TOKEN_PROGRAM_ADDRESS) =>
    getTransferCheckedInstruction(
      { source, mint, destination, authority: owner, amount, decimals: 6 },
      { programAddress: address(program) },
    );

  /** Signs a v0 transaction; returns its base64 wire form and its static account keys. */
  async function signed(instructions: Instruction[], lookup?: Record<string, Address[]>) {
    const base = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: toBlockhash(recentBlockhash), lastValidBlockHeight: 1_000n },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const message = lookup
      ? compressTransactionMessageUsingAddressLookupTables(
          base,
          lookup as Parameters<typeof compressTransactionMessageUsingAddressLookupTables>[1],
        )
      : base;
    const tx = await signTransactionMessageWithSigners(message);
    const compiled = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    return { wire: getBase64EncodedWireTransaction(tx), keys: compiled.staticAccounts.map(String) };
  }

  const balance = (accountIndex: number, acctMint: string, acctOwner: string | undefined, amount: bigint) => ({
    accountIndex,
    mint: acctMint,
    ...(acctOwner !== undefined ? { owner: acctOwner } : {}),
    uiTokenAmount: { amount: amount.toString() },
  });

  function rpcAnswer(wire: string, meta: Partial<NonNullable<RpcTransaction["meta"]>> | null = {}): RpcTransaction {
    return {
      slot: 4242n,
      blockTime: 1_767_268_800n,
      meta:
        meta === null
          ? null
          : {
              err: null,
              preTokenBalances: [],
              postTokenBalances: [],
              loadedAddresses: { writable: [], readonly: [] },
              ...meta,
            },
      transaction: [wire, "base64"],
    };
  }

  it("reads a TransferChecked with a memo: transfer, memo, balance changes, fee payer", async () => {
    const { wire, keys } = await signed([transferChecked(250_000n), memoIx("q_abc")]);
    const at = (a: string) => keys.indexOf(a);
    const raw = rpcAnswer(wire, {
      preTokenBalances: [
        balance(at(source), mint, owner.address, 1_000_000n),
        balance(at(destination), mint, payee, 0n),
      ],
      postTokenBalances: [
        balance(at(source), mint, owner.address, 750_000n),
        balance(at(destination), mint, payee, 250_000n),
      ],
    });
    const tx = await decodeRpcTransaction("Sig1", raw);
    expect(tx).toEqual({
      signature: "Sig1",
      slot: 4242n,
      blockTime: 1_767_268_800,
      failed: false,
      feePayer: feePayer.address,
      transfers: [{ source, mint, destination, authority: owner.address, amount: 250_000n }],
      memos: ["q_abc"],
      balanceChanges: [
        { account: source, owner: owner.address, mint, delta: -250_000n },
        { account: destination, owner: payee, mint, delta: 250_000n },
      ],
    } satisfies ChainTx);
    // What the engine then checks passes on it.
    expect(
      verifyPayment(tx, {
        wallet: owner.address,
        walletAta: source,
        payeeAta: destination,
        mint,
        amount: 250_000n,
        memo: "q_abc",
      }),
    ).toEqual([]);
  });

  it("reads a failed transaction as failed (meta.err non-null), and one without meta as failed", async () => {
    const { wire } = await signed([transferChecked(1n), memoIx("q_abc")]);
    const failed = await decodeRpcTransaction(
      "Sig2",
      rpcAnswer(wire, { err: { InstructionError: [0, { Custom: 1 }] } }),
    );
    expect(failed.failed).toBe(true);
    expect(failed.transfers).toHaveLength(1); // still decoded: the rules ignore a failed one
    expect((await decodeRpcTransaction("Sig3", rpcAnswer(wire, null))).failed).toBe(true);
    expect((await decodeRpcTransaction("Sig4", rpcAnswer(wire, { err: undefined }))).failed).toBe(false);
  });

  it("reads a plain Transfer with no mint", async () => {
    const ix = getTransferInstruction({ source, destination, authority: owner, amount: 7n });
    const { wire } = await signed([ix]);
    const tx = await decodeRpcTransaction("Sig5", rpcAnswer(wire));
    expect(tx.transfers).toEqual([{ source, mint: null, destination, authority: owner.address, amount: 7n }]);
    expect(tx.memos).toEqual([]);
  });

  it("reads Token-2022 transfers and both memo programs, memos as UTF-8", async () => {
    const { wire } = await signed([
      transferChecked(2n ** 64n - 1n, TOKEN_2022),
      memoIx("q_é✓"),
      memoIx("second", MEMO_V1),
    ]);
    const tx = await decodeRpcTransaction("Sig6", rpcAnswer(wire));
    expect(tx.transfers).toEqual([{ source, mint, destination, authority: owner.address, amount: 2n ** 64n - 1n }]);
    expect(tx.memos).toEqual(["q_é✓", "second"]);
  });

  it("ignores token instructions that are not transfers or are too short", async () => {
    const truncated: Instruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [],
      data: new Uint8Array([12, 1, 2]),
    };
    const other: Instruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [],
      data: new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0, 0]),
    };
    const { wire } = await signed([truncated, other]);
    expect((await decodeRpcTransaction("Sig7", rpcAnswer(wire))).transfers).toEqual([]);
  });

  it("resolves accounts loaded from a lookup table, for instructions and balances", async () => {
    const { wire, keys } = await signed([transferChecked(3n), memoIx("q_lut")], { [lookupTable]: [destination] });
    expect(keys).not.toContain(destination);
    const loadedIndex = keys.length; // loaded writable addresses follow the static ones
    const tx = await decodeRpcTransaction(
      "Sig8",
      rpcAnswer(wire, {
        loadedAddresses: { writable: [destination], readonly: [] },
        preTokenBalances: [],
        postTokenBalances: [balance(loadedIndex, mint, payee, 3n)],
      }),
    );
    expect(tx.transfers).toEqual([{ source, mint, destination, authority: owner.address, amount: 3n }]);
    // An account that only appears after (created by the transaction) starts from zero.
    expect(tx.balanceChanges).toEqual([{ account: destination, owner: payee, mint, delta: 3n }]);
  });

  it("reads an account closed by the transaction (only a pre balance) as losing all of it; an unreported owner as null", async () => {
    const { wire, keys } = await signed([transferChecked(1n)]);
    const tx = await decodeRpcTransaction(
      "Sig9",
      rpcAnswer(wire, {
        preTokenBalances: [balance(keys.indexOf(source), mint, undefined, 5n)],
        postTokenBalances: null,
      }),
    );
    expect(tx.balanceChanges).toEqual([{ account: source, owner: null, mint, delta: -5n }]);
  });

  it("takes a null block time and numeric slot as they are", async () => {
    const { wire } = await signed([memoIx("x")]);
    const tx = await decodeRpcTransaction("Sig10", { ...rpcAnswer(wire), slot: 12, blockTime: null });
    expect({ slot: tx.slot, blockTime: tx.blockTime }).toEqual({ slot: 12n, blockTime: null });
  });

  it("refuses an answer that is not base64-encoded", async () => {
    await expect(decodeRpcTransaction("Sig11", { ...rpcAnswer(""), transaction: [] })).rejects.toThrow(/base64/);
  });

  it("reads the same from the bytes as kit's decoders do: a wire the byte reader does not take (a key named twice) goes to kit, which reads it alike", async () => {
    const { wire } = await signed([transferChecked(5n), memoIx("twice")]);
    const fast = await decodeRpcTransaction("Sig12", rpcAnswer(wire));
    // The same message with its second key written over by the first: the byte reader refuses it, kit reads it.
    const bytes = Buffer.from(wire, "base64");
    const messageAt = 1 + 64 * bytes[0]!;
    const keysAt = messageAt + (bytes[messageAt]! & 0x80 ? 1 : 0) + 3 + 1;
    bytes.copy(bytes, keysAt + 32, keysAt, keysAt + 32);
    const slow = await decodeRpcTransaction("Sig12", rpcAnswer(bytes.toString("base64")));
    expect(slow.feePayer).toBe(fast.feePayer);
    expect(slow.memos).toEqual(["twice"]);
    expect(slow.transfers).toHaveLength(1);
  });

  it("refuses a message version it does not read, through either reader", async () => {
    const { wire } = await signed([memoIx("v")]);
    const bytes = Buffer.from(wire, "base64");
    bytes[1 + 64 * bytes[0]!] = 0x81; // version 1
    await expect(decodeRpcTransaction("Sig13", rpcAnswer(bytes.toString("base64")))).rejects.toThrow();
  });
});
