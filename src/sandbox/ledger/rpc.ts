/**
 * A Solana JSON-RPC 2.0 endpoint over the sandbox ledger: what a standard Solana client
 * (@solana/kit) and the x402 client need, answered from the ledger's real state.
 */
import { getBase58Encoder } from "@solana/kit";
import type { Ledger } from "./ledger.js";
import { decodeLanded, encodeAccount, encodeTransaction, RpcError, uiTokenAmount, type Json } from "./rpc-encoding.js";

const VERSION = { "solana-core": "2.2.0-litesvm", "feature-set": 0 };
const GENESIS_HASH = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const MAX_BATCH = 100;

interface RpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

const base58Encode = getBase58Encoder();

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
  // Own methods only: never Object.prototype's (constructor, toString, __proto__, ...).
  const method = METHODS.get(req.method);
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

/** Checks `commitment`: methods reading history serve confirmed and finalized only, as a node does. */
function historyCommitment(config: Record<string, unknown>): void {
  const c = config.commitment;
  if (c === undefined || c === "confirmed" || c === "finalized") return;
  if (c === "processed") throw new RpcError(-32602, "Method does not support commitment below `confirmed`");
  throw new RpcError(-32602, `Invalid params: unknown commitment ${JSON.stringify(String(c).slice(0, 32))}`);
}

function minContextSlot(ledger: Ledger, config: Record<string, unknown>): void {
  const min = config.minContextSlot;
  if (min === undefined) return;
  if (typeof min !== "number" || !Number.isInteger(min) || min < 0)
    throw new RpcError(-32602, "Invalid params: minContextSlot must be a slot");
  if (BigInt(min) > ledger.slot()) {
    throw new RpcError(-32016, "Minimum context slot has not been reached", { contextSlot: ledger.slot() });
  }
}

function optionalSignature(config: Record<string, unknown>, key: "before" | "until"): string | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  try {
    if (typeof value === "string" && base58Encode.encode(value).length === 64) return value;
  } catch {
    // fall through
  }
  throw new RpcError(-32602, `Invalid param: ${key} is not a transaction signature`);
}

const MAX_SIGNATURES = 1000;

function validAddress(text: string): string {
  try {
    if (base58Encode.encode(text).length === 32) return text;
  } catch {
    // fall through
  }
  throw new RpcError(-32602, `Invalid param: Invalid pubkey ${JSON.stringify(text.slice(0, 64))}`);
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

type Method = (ledger: Ledger, params: unknown[]) => unknown;

const METHODS = new Map<string, Method>(
  Object.entries({
    getHealth: () => "ok",
    getVersion: () => VERSION,
    getGenesisHash: () => GENESIS_HASH,
    getSlot: (ledger) => ledger.blockHeight(),
    getBlockHeight: (ledger) => ledger.blockHeight(),
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
      if (!Array.isArray(list) || list.length > 100)
        throw new RpcError(-32602, "Invalid params: expected up to 100 pubkeys");
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
      if (!Array.isArray(list) || list.length > 256)
        throw new RpcError(-32602, "Invalid params: expected up to 256 signatures");
      return {
        context: context(ledger),
        value: list.map((sig) => {
          const landed = typeof sig === "string" ? ledger.transaction(sig) : undefined;
          if (!landed) return null;
          return {
            slot: landed.slot,
            confirmations: null,
            err: null,
            status: { Ok: null },
            confirmationStatus: "finalized",
          };
        }),
      };
    },
    getTransaction: (ledger, params) => {
      const config = configParam(params, 1);
      historyCommitment(config);
      const landed = ledger.transaction(stringParam(params, 0, "signature"));
      if (!landed) return null;
      const version = decodeLanded(landed.wire).message.version;
      const max = config.maxSupportedTransactionVersion;
      if (version !== "legacy" && (typeof max !== "number" || max < version)) {
        // What a node answers a client that did not say it reads versioned transactions.
        throw new RpcError(
          -32015,
          `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`,
        );
      }
      return encodeTransaction(landed, config.encoding);
    },
    /**
     * Landed transactions naming the address among their account keys, newest first:
     * `[address, {limit (1-1000, default 1000), before, until, commitment, minContextSlot}]`.
     */
    getSignaturesForAddress: (ledger, params) => {
      const addr = validAddress(stringParam(params, 0, "address"));
      const config = configParam(params, 1);
      historyCommitment(config);
      minContextSlot(ledger, config);
      const limit = config.limit ?? MAX_SIGNATURES;
      if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_SIGNATURES) {
        throw new RpcError(-32602, `Invalid limit; max ${MAX_SIGNATURES}`);
      }
      const entries = ledger.signaturesForAddress(addr, {
        limit,
        before: optionalSignature(config, "before"),
        until: optionalSignature(config, "until"),
      });
      return entries.map((e) => ({
        signature: e.signature,
        slot: e.slot,
        err: null,
        memo: e.memo,
        blockTime: BigInt(e.blockTime),
        confirmationStatus: "finalized",
      }));
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
  }),
);
