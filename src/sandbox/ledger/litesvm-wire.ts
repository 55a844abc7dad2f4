/**
 * Transactions handed to LiteSVM as the bytes they arrived in. LiteSVM's public
 * `sendTransaction`/`simulateTransaction` take a kit `Transaction` and encode it back to
 * bytes each call (after kit decoded it from those bytes); its native handle (litesvm 1.5's
 * `inner`) takes the wire bytes themselves. The public API is used whenever the native one
 * is missing or the transaction is one the strict reader (domain/solana-wire.ts) does not take, and
 * for a transaction with an absent signature, which the public API refuses by throwing
 * (`assertIsFullySignedTransaction`) while signatures are verified: results are the same
 * either way.
 */
import type { FailedTransactionMetadata, LiteSVM, TransactionMetadata } from "litesvm";
import { decodeWireTransaction } from "./tx-wire.js";
import { fullySigned, readWireBase64, type WireTransaction } from "../../domain/solana-wire.js";

type SendResult = TransactionMetadata | FailedTransactionMetadata;
/** What a simulation answers: the transaction's meta, or its failure. */
export type SimulationResult = { meta(): TransactionMetadata } | FailedTransactionMetadata;

/** The part of LiteSVM's native handle used here. */
interface NativeTransactions {
  getSigverify(): boolean;
  setSigverify(sigverify: boolean): void;
  sendLegacyTransaction(bytes: Uint8Array): SendResult;
  sendVersionedTransaction(bytes: Uint8Array): SendResult;
  simulateLegacyTransaction(bytes: Uint8Array): SimulationResult;
  simulateVersionedTransaction(bytes: Uint8Array): SimulationResult;
}

const METHODS = [
  "getSigverify",
  "setSigverify",
  "sendLegacyTransaction",
  "sendVersionedTransaction",
  "simulateLegacyTransaction",
  "simulateVersionedTransaction",
] as const;

function nativeOf(svm: LiteSVM): NativeTransactions | undefined {
  const inner = (svm as unknown as { inner?: Record<string, unknown> }).inner;
  return inner && METHODS.every((m) => typeof inner[m] === "function")
    ? (inner as unknown as NativeTransactions)
    : undefined;
}

/** The wire transaction, when the native handle can take its bytes as the public API would. */
function nativeWire(svm: LiteSVM, wireBase64: string): { native: NativeTransactions; tx: WireTransaction } | undefined {
  const native = nativeOf(svm);
  const tx = native && readWireBase64(wireBase64);
  if (!native || !tx) return undefined;
  if (native.getSigverify() && !fullySigned(tx)) return undefined;
  return { native, tx };
}

/** Sends a base64 wire transaction to LiteSVM (throws only where the public API throws). */
export function sendWire(svm: LiteSVM, wireBase64: string): SendResult {
  const fast = nativeWire(svm, wireBase64);
  if (!fast) return svm.sendTransaction(decodeWireTransaction(wireBase64));
  return fast.tx.version === "legacy"
    ? fast.native.sendLegacyTransaction(fast.tx.bytes)
    : fast.native.sendVersionedTransaction(fast.tx.bytes);
}

/**
 * Simulates a base64 wire transaction on LiteSVM (throws only where the public API throws).
 * `checkSignatures: false` spares the signature checks in this simulation only, for a caller
 * that submits the transaction next, where they are made (a transaction whose signature fails
 * is refused before it is charged anything): the simulation then says whether it would run.
 */
export function simulateWire(svm: LiteSVM, wireBase64: string, checkSignatures = true): SimulationResult {
  const fast = nativeWire(svm, wireBase64);
  if (!fast) return svm.simulateTransaction(decodeWireTransaction(wireBase64));
  const { native, tx } = fast;
  // The native answer is what the public API wraps (SimulatedTransactionInfo.meta() is its meta()).
  const simulate = () =>
    tx.version === "legacy"
      ? native.simulateLegacyTransaction(tx.bytes)
      : native.simulateVersionedTransaction(tx.bytes);
  if (checkSignatures || !native.getSigverify()) return simulate();
  native.setSigverify(false);
  try {
    return simulate();
  } finally {
    native.setSigverify(true);
  }
}
