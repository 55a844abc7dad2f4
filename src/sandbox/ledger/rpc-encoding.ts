/**
 * How a Solana node encodes accounts and transactions in JSON-RPC answers (base64,
 * base58, "json", "jsonParsed"), for the sandbox's RPC endpoint.
 */
import {
  getBase58Decoder,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import { getMintDecoder, getTokenDecoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import type { Ledger, LandedTransaction, TokenBalance } from "./ledger.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json } | bigint;

/** An error a JSON-RPC call answers with: code, message, data. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Json,
  ) {
    super(message);
  }
}

const base64 = getBase64Decoder();
const base64Encode = getBase64Encoder();
const base58Decode = getBase58Decoder();
const txDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

export function encodeAccount(ledger: Ledger, addr: string, encoding: unknown) {
  const account = ledger.account(addr);
  if (!account) return null;
  let data: Json;
  if (encoding === "base58") data = [base58Decode.decode(account.data), "base58"];
  else if (encoding === "jsonParsed")
    data = parsedTokenData(ledger, account.owner, account.data) ?? [base64.decode(account.data), "base64"];
  else if (encoding === undefined || encoding === "base64") data = [base64.decode(account.data), "base64"];
  else throw new RpcError(-32602, `Invalid params: unsupported encoding ${String(encoding)}`);
  return {
    data,
    executable: account.executable,
    lamports: account.lamports,
    owner: account.owner,
    rentEpoch: 18446744073709551615n,
    space: BigInt(account.data.length),
  };
}

const optional = <T>(o: { __option: "Some"; value: T } | { __option: "None" }): T | null =>
  o.__option === "Some" ? o.value : null;
const TOKEN_STATES = ["uninitialized", "initialized", "frozen"] as const;

/**
 * The "jsonParsed" data of an SPL Token account or mint, as a node gives it (program
 * "spl-token"): a token account's balance, and its delegate and delegated amount when it
 * has one; a mint's decimals and authorities. Anything else: undefined (base64 instead).
 */
function parsedTokenData(ledger: Ledger, owner: string, bytes: Uint8Array): Json | undefined {
  if (owner !== TOKEN_PROGRAM_ADDRESS) return undefined;
  if (bytes.length === 165) {
    const t = getTokenDecoder().decode(bytes);
    const mint = ledger.account(t.mint);
    const decimals = mint && mint.data.length === 82 ? getMintDecoder().decode(mint.data).decimals : 6;
    const delegate = optional(t.delegate);
    const native = optional(t.isNative);
    const closeAuthority = optional(t.closeAuthority);
    const info: Record<string, Json> = {
      isNative: native !== null,
      mint: t.mint,
      owner: t.owner,
      state: TOKEN_STATES[t.state] ?? "initialized",
      tokenAmount: uiTokenAmount(t.amount, decimals),
      ...(delegate !== null ? { delegate, delegatedAmount: uiTokenAmount(t.delegatedAmount, decimals) } : {}),
      ...(closeAuthority !== null ? { closeAuthority } : {}),
    };
    return { program: "spl-token", parsed: { type: "account", info }, space: 165n };
  }
  if (bytes.length === 82) {
    const m = getMintDecoder().decode(bytes);
    const info: Record<string, Json> = {
      decimals: m.decimals,
      freezeAuthority: optional(m.freezeAuthority),
      isInitialized: m.isInitialized,
      mintAuthority: optional(m.mintAuthority),
      supply: m.supply.toString(),
    };
    return { program: "spl-token", parsed: { type: "mint", info }, space: 82n };
  }
  return undefined;
}

export function uiTokenAmount(amount: bigint, decimals = 6) {
  const scale = 10n ** BigInt(decimals);
  const whole = amount / scale;
  const frac = (amount % scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  const uiAmountString = frac ? `${whole}.${frac}` : `${whole}`;
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

function tokenBalances(list: TokenBalance[]) {
  return list.map((t) => ({
    accountIndex: t.accountIndex,
    mint: t.mint,
    owner: t.owner,
    programId: "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    uiTokenAmount: uiTokenAmount(t.amount),
  }));
}

export function encodeTransaction(landed: LandedTransaction, encoding: unknown) {
  const meta = {
    err: null,
    status: { Ok: null },
    fee: landed.fee,
    preBalances: landed.preBalances,
    postBalances: landed.postBalances,
    preTokenBalances: tokenBalances(landed.preTokenBalances),
    postTokenBalances: tokenBalances(landed.postTokenBalances),
    innerInstructions: [],
    logMessages: landed.logs,
    rewards: [],
    loadedAddresses: { readonly: [], writable: [] },
    computeUnitsConsumed: landed.computeUnits,
  };
  const decoded = decodeLanded(landed.wire);
  let transaction: Json;
  if (encoding === "base58") {
    transaction = [base58Decode.decode(Buffer.from(landed.wire, "base64")), "base58"];
  } else if (encoding === "base64") {
    transaction = [landed.wire, "base64"];
  } else if (encoding === undefined || encoding === "json" || encoding === "jsonParsed") {
    // "json" is a Solana node's default encoding; a standard client reads it as an object.
    transaction = jsonTransaction(decoded, encoding === "jsonParsed") ?? [landed.wire, "base64"];
  } else {
    throw new RpcError(-32602, `Invalid params: unsupported encoding ${String(encoding)}`);
  }
  return {
    slot: landed.slot,
    blockTime: BigInt(landed.blockTime),
    version: decoded.message.version,
    transaction,
    meta,
  };
}

export function decodeLanded(wire: string) {
  const tx = txDecoder.decode(base64Encode.encode(wire));
  return { tx, message: messageDecoder.decode(tx.messageBytes) };
}

/**
 * A transaction in the "json" encoding of a Solana node ({signatures, message}); with
 * `parsed`, the "jsonParsed" shape, where instructions are given by program id and
 * accounts (the partially decoded form a node uses for programs it has no parser for).
 */
function jsonTransaction({ tx, message }: ReturnType<typeof decodeLanded>, parsed: boolean): Json | undefined {
  // Only legacy and v0 messages have a JSON form here; anything newer stays in base64.
  if (message.version !== "legacy" && message.version !== 0) return undefined;
  const keys = message.staticAccounts.map(String);
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  const signatures = Object.values(tx.signatures).map((s) => (s ? base58Decode.decode(s) : "1".repeat(64)));
  const data = (ix: { data?: ArrayLike<number> }) => base58Decode.decode(new Uint8Array(ix.data ?? []));
  const lookups: Json[] | undefined =
    "addressTableLookups" in message && message.addressTableLookups
      ? message.addressTableLookups.map((l) => ({
          accountKey: l.lookupTableAddress as string,
          writableIndexes: [...l.writableIndexes],
          readonlyIndexes: [...l.readonlyIndexes],
        }))
      : undefined;
  const writable = (i: number) =>
    i < numSignerAccounts
      ? i < numSignerAccounts - numReadonlySignerAccounts
      : i < keys.length - numReadonlyNonSignerAccounts;
  const instructions = message.instructions.map((ix): Json =>
    parsed
      ? {
          programId: keys[ix.programAddressIndex] ?? "",
          accounts: (ix.accountIndices ?? []).map((i) => keys[i] ?? ""),
          data: data(ix),
          stackHeight: null,
        }
      : {
          programIdIndex: ix.programAddressIndex,
          accounts: [...(ix.accountIndices ?? [])],
          data: data(ix),
          stackHeight: null,
        },
  );
  return {
    signatures,
    message: {
      accountKeys: parsed
        ? keys.map((pubkey, i) => ({
            pubkey,
            signer: i < numSignerAccounts,
            writable: writable(i),
            source: "transaction",
          }))
        : keys,
      header: {
        numRequiredSignatures: numSignerAccounts,
        numReadonlySignedAccounts: numReadonlySignerAccounts,
        numReadonlyUnsignedAccounts: numReadonlyNonSignerAccounts,
      },
      recentBlockhash: String(message.lifetimeToken),
      instructions,
      ...(lookups ? { addressTableLookups: lookups } : {}),
    },
  };
}
