/**
 * A Solana JSON-RPC 2.0 endpoint over the sandbox ledger: what a standard Solana client
 * (@solana/kit) and the x402 client need, answered from the ledger's real state.
 */
import {
  getBase58Encoder,
  getBase64Decoder,
  getBase58Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import type { Ledger, LandedTransaction, TokenBalance } from "./ledger.js";

const VERSION = { "solana-core": "2.2.0-litesvm", "feature-set": 0 };
const GENESIS_HASH = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const MAX_BATCH = 100;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json } | bigint;

interface RpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

class RpcError extends Error {
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
const base58Encode = getBase58Encoder();
const txDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

/** Serializes with u64 values as bare JSON integers, as a Solana node does. */
export function stringifyRpc(value: unknown): string {
  const marker = "__u64__";
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${marker}${v}${marker}` : v));
  return text.replace(new RegExp(`"${marker}(-?\\d+)${marker}"`, "g"), "$1");
}

export function handleRpc(ledger: Ledger, body: unknown): unknown {
  if (Array.isArray(body)) {
    if (body.length === 0) return errorResponse(null, -32600, "Invalid request: empty batch");
    if (body.length > MAX_BATCH) return errorResponse(null, -32600, `Invalid request: batch over ${MAX_BATCH}`);
    return body.map((one) => handleOne(ledger, one));
  }
  return handleOne(ledger, body);
}

function errorResponse(id: unknown, code: number, message: string, data?: Json) {
  return { jsonrpc: "2.0", id: id ?? null, error: data === undefined ? { code, message } : { code, message, data } };
}

function handleOne(ledger: Ledger, raw: unknown) {
  const req = (raw ?? {}) as RpcRequest;
  const id = typeof req.id === "string" || typeof req.id === "number" ? req.id : null;
  if (typeof raw !== "object" || raw === null || req.jsonrpc !== "2.0" || typeof req.method !== "string") {
    return errorResponse(id, -32600, "Invalid request");
  }
  const params = req.params === undefined ? [] : req.params;
  if (!Array.isArray(params)) return errorResponse(id, -32602, "Invalid params: expected an array");
  const method = METHODS[req.method];
  if (!method) return errorResponse(id, -32601, "Method not found");
  try {
    return { jsonrpc: "2.0", id, result: method(ledger, params) };
  } catch (e) {
    if (e instanceof RpcError) return errorResponse(id, e.code, e.message, e.data);
    return errorResponse(id, -32603, "Internal error");
  }
}

function context(ledger: Ledger) {
  return { apiVersion: VERSION["solana-core"], slot: ledger.slot() };
}

function stringParam(params: unknown[], index: number, what: string): string {
  const value = params[index];
  if (typeof value !== "string") throw new RpcError(-32602, `Invalid params: ${what} must be a string`);
  return value;
}

function configParam(params: unknown[], index: number): Record<string, unknown> {
  const value = params[index];
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function validAddress(text: string): string {
  try {
    if (base58Encode.encode(text).length === 32) return text;
  } catch {
    // fall through
  }
  throw new RpcError(-32602, `Invalid param: Invalid pubkey ${JSON.stringify(text.slice(0, 64))}`);
}

function encodeAccount(ledger: Ledger, addr: string, encoding: unknown) {
  const account = ledger.account(addr);
  if (!account) return null;
  let data: Json;
  if (encoding === "base58") data = [base58Decode.decode(account.data), "base58"];
  else if (encoding === undefined || encoding === "base64" || encoding === "jsonParsed") data = [base64.decode(account.data), "base64"];
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

function uiTokenAmount(amount: bigint, decimals = 6) {
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

function encodeTransaction(landed: LandedTransaction, encoding: unknown) {
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
  return { slot: landed.slot, blockTime: BigInt(landed.blockTime), version: decoded.message.version, transaction, meta };
}

function decodeLanded(wire: string) {
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
    i < numSignerAccounts ? i < numSignerAccounts - numReadonlySignerAccounts : i < keys.length - numReadonlyNonSignerAccounts;
  const instructions = message.instructions.map((ix): Json =>
    parsed
      ? {
          programId: keys[ix.programAddressIndex] ?? "",
          accounts: (ix.accountIndices ?? []).map((i) => keys[i] ?? ""),
          data: data(ix),
          stackHeight: null,
        }
      : { programIdIndex: ix.programAddressIndex, accounts: [...(ix.accountIndices ?? [])], data: data(ix), stackHeight: null },
  );
  return {
    signatures,
    message: {
      accountKeys: parsed
        ? keys.map((pubkey, i) => ({ pubkey, signer: i < numSignerAccounts, writable: writable(i), source: "transaction" }))
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

function wireFromParam(params: unknown[]): string {
  const tx = stringParam(params, 0, "transaction");
  const encoding = configParam(params, 1).encoding ?? "base58";
  if (encoding === "base64") return tx;
  if (encoding === "base58") {
    try {
      return Buffer.from(base58Encode.encode(tx)).toString("base64");
    } catch {
      throw new RpcError(-32602, "Invalid params: transaction is not base58");
    }
  }
  throw new RpcError(-32602, `Invalid params: unsupported encoding ${String(encoding)}`);
}

const METHODS: Record<string, (ledger: Ledger, params: unknown[]) => unknown> = {
  getHealth: () => "ok",
  getVersion: () => VERSION,
  getGenesisHash: () => GENESIS_HASH,
  getSlot: (ledger) => ledger.slot(),
  getBlockHeight: (ledger) => ledger.slot(),
  getEpochInfo: (ledger) => ({
    absoluteSlot: ledger.slot(),
    blockHeight: ledger.slot(),
    epoch: ledger.slot() / 432000n,
    slotIndex: ledger.slot() % 432000n,
    slotsInEpoch: 432000n,
    transactionCount: null,
  }),
  getLatestBlockhash: (ledger) => {
    const latest = ledger.latestBlockhash();
    return {
      context: context(ledger),
      value: { blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight },
    };
  },
  isBlockhashValid: (ledger, params) => ({
    context: context(ledger),
    value: ledger.isBlockhashValid(stringParam(params, 0, "blockhash")),
  }),
  getMinimumBalanceForRentExemption: (_ledger, params) => {
    const size = params[0];
    if (typeof size !== "number" || !Number.isInteger(size) || size < 0) {
      throw new RpcError(-32602, "Invalid params: data length must be a non-negative integer");
    }
    return (BigInt(size) + 128n) * 6960n;
  },
  getAccountInfo: (ledger, params) => {
    const addr = validAddress(stringParam(params, 0, "pubkey"));
    return { context: context(ledger), value: encodeAccount(ledger, addr, configParam(params, 1).encoding) };
  },
  getMultipleAccounts: (ledger, params) => {
    const list = params[0];
    if (!Array.isArray(list) || list.length > 100) throw new RpcError(-32602, "Invalid params: expected up to 100 pubkeys");
    const encoding = configParam(params, 1).encoding;
    return {
      context: context(ledger),
      value: list.map((a) => encodeAccount(ledger, validAddress(String(a)), encoding)),
    };
  },
  getBalance: (ledger, params) => ({
    context: context(ledger),
    value: ledger.lamports(validAddress(stringParam(params, 0, "pubkey"))),
  }),
  getTokenAccountBalance: (ledger, params) => {
    const addr = validAddress(stringParam(params, 0, "pubkey"));
    const token = ledger.tokenAccount(addr);
    if (!token) throw new RpcError(-32602, "Invalid param: could not find account");
    return { context: context(ledger), value: uiTokenAmount(token.amount) };
  },
  getSignatureStatuses: (ledger, params) => {
    const list = params[0];
    if (!Array.isArray(list) || list.length > 256) throw new RpcError(-32602, "Invalid params: expected up to 256 signatures");
    return {
      context: context(ledger),
      value: list.map((sig) => {
        const landed = typeof sig === "string" ? ledger.transaction(sig) : undefined;
        if (!landed) return null;
        return { slot: landed.slot, confirmations: null, err: null, status: { Ok: null }, confirmationStatus: "finalized" };
      }),
    };
  },
  getTransaction: (ledger, params) => {
    const landed = ledger.transaction(stringParam(params, 0, "signature"));
    if (!landed) return null;
    return encodeTransaction(landed, configParam(params, 1).encoding);
  },
  sendTransaction: (ledger, params) => {
    const result = ledger.submit(wireFromParam(params));
    if (!result.ok) {
      throw new RpcError(-32002, `Transaction simulation failed: ${result.error}`, {
        err: result.error,
        logs: result.logs,
      });
    }
    return result.signature;
  },
  simulateTransaction: (ledger, params) => {
    const result = ledger.simulate(wireFromParam(params));
    return {
      context: context(ledger),
      value: result.ok
        ? { err: null, logs: result.logs, unitsConsumed: result.unitsConsumed, accounts: null, returnData: null }
        : { err: result.error, logs: result.logs, accounts: null, returnData: null },
    };
  },
};
