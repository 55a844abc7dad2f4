/**
 * Reading Solana wire transactions: decoding, the ids a transaction is known by (its
 * signature, the hash of its message), the accounts it names, its blockhash, and its memos
 * formatted as a Solana node reports them.
 */
import { createHash } from "node:crypto";
import { FailedTransactionMetadata } from "litesvm";
import {
  getBase58Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type Transaction,
} from "@solana/kit";

const TX_ERRORS = [
  "AccountInUse",
  "AccountLoadedTwice",
  "AccountNotFound",
  "ProgramAccountNotFound",
  "InsufficientFundsForFee",
  "InvalidAccountForFee",
  "AlreadyProcessed",
  "BlockhashNotFound",
  "CallChainTooDeep",
  "MissingSignatureForFee",
  "InvalidAccountIndex",
  "SignatureFailure",
  "InvalidProgramForExecution",
  "SanitizeFailure",
  "ClusterMaintenance",
  "AccountBorrowOutstanding",
  "WouldExceedMaxBlockCostLimit",
  "UnsupportedVersion",
  "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit",
  "WouldExceedAccountDataBlockLimit",
  "TooManyAccountLocks",
  "AddressLookupTableNotFound",
  "InvalidAddressLookupTableOwner",
  "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex",
  "InvalidRentPayingAccount",
  "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit",
  "MaxLoadedAccountsDataSizeExceeded",
  "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit",
  "UnbalancedTransaction",
  "ProgramCacheHitMaxLimit",
  "CommitCancelled",
] as const;

/** The SPL Memo program, v1 and current: a node reports the memos of both. */
const MEMO_PROGRAMS = new Set([
  "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
  "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
]);

const base64 = getBase64Encoder();
const base58 = getBase58Decoder();
const txDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();
const utf8 = new TextDecoder("utf-8", { fatal: true });
type CompiledMessage = ReturnType<typeof messageDecoder.decode>;

/**
 * The last few transactions and messages decoded: a settlement reads the same transaction
 * several times (the proof, its co-signed form simulated and then submitted: one message),
 * and decoding names every account in base58, which is slow in JS. Decoded values are
 * treated as read-only.
 */
const decoded = new Map<string, Transaction>();
const compiled = new Map<string, CompiledMessage>();
const REMEMBERED = 32;

function remember<V>(map: Map<string, V>, key: string, value: V): V {
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
  return value;
}

export function decodeWireTransaction(wireBase64: string): Transaction {
  return decoded.get(wireBase64) ?? remember(decoded, wireBase64, txDecoder.decode(base64.encode(wireBase64)));
}

/** Remembers a transaction built here as what its wire form decodes to. */
export function rememberDecoded(wireBase64: string, tx: Transaction): void {
  remember(decoded, wireBase64, tx);
}

function messageOf(tx: Transaction): CompiledMessage {
  const key = Buffer.from(tx.messageBytes.buffer, tx.messageBytes.byteOffset, tx.messageBytes.byteLength).toString(
    "latin1",
  );
  return compiled.get(key) ?? remember(compiled, key, messageDecoder.decode(tx.messageBytes));
}

/** sha256 of the message bytes: the identity of a payment, whoever signs it last. */
export function messageHashOf(tx: Transaction): string {
  return createHash("sha256")
    .update(tx.messageBytes as unknown as Uint8Array)
    .digest("hex");
}

/** The transaction's id on Solana: its first signature (the fee payer's), base58. */
export function signatureOf(tx: Transaction): string {
  const first = Object.values(tx.signatures)[0];
  return first ? base58.decode(first) : "";
}

/** The blockhash the transaction was signed against (its lifetime). */
export function blockhashOf(tx: Transaction): string {
  return String(messageOf(tx).lifetimeToken);
}

export function describeTxError(failed: FailedTransactionMetadata): string {
  const err = failed.err();
  if (typeof err === "number") return TX_ERRORS[err] ?? `TransactionError(${err})`;
  return err.toString();
}

/** The account keys the message names itself (address lookup tables are not resolved). */
export function staticAccountsOf(tx: Transaction): Address[] {
  return [...messageOf(tx).staticAccounts];
}

/**
 * The memos of a transaction as a Solana node reports them in getSignaturesForAddress:
 * each top-level Memo instruction as `[<byte length>] <text>` ("(unparseable)" when not
 * UTF-8), joined with "; "; null without one.
 */
export function memoOf(tx: Transaction): string | null {
  const message = messageOf(tx);
  // Only legacy and v0 messages carry instructions in this form.
  if (message.version !== "legacy" && message.version !== 0) return null;
  const memos: string[] = [];
  for (const ix of message.instructions) {
    if (!MEMO_PROGRAMS.has(String(message.staticAccounts[ix.programAddressIndex] ?? ""))) continue;
    const data = new Uint8Array(ix.data ?? []);
    let text: string;
    try {
      text = utf8.decode(data);
    } catch {
      text = "(unparseable)";
    }
    memos.push(`[${data.length}] ${text}`);
  }
  return memos.length > 0 ? memos.join("; ") : null;
}
