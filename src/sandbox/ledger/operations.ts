/**
 * The operations the ledger logs, and how each applies to LiteSVM: a transaction, an
 * account write and an airdrop (genesis set-up), and a blockhash rotation. A payload is
 * the text the log keeps, so replaying the log applies exactly what was applied.
 */
import { FailedTransactionMetadata, type LiteSVM, type TransactionMetadata } from "litesvm";
import { address, getBase64Decoder, getBase64Encoder, lamports as toLamports } from "@solana/kit";
import { describeTxError } from "./tx-wire.js";
import { sendWire } from "./litesvm-wire.js";

export const SLOTS_PER_BLOCKHASH = 150n;

export type LogKind = "tx" | "set_account" | "airdrop" | "rotate";

const base64 = { encode: getBase64Encoder(), decode: getBase64Decoder() };

/** The payload of a `set_account` operation. */
export function setAccountPayload(account: {
  address: string;
  lamports: bigint;
  owner: string;
  executable?: boolean;
  data: Uint8Array;
}): string {
  return JSON.stringify({
    address: account.address,
    lamports: account.lamports.toString(),
    owner: account.owner,
    executable: account.executable ?? false,
    data: base64.decode.decode(account.data),
  });
}

/** The payload of an `airdrop` operation. */
export function airdropPayload(to: string, amount: bigint): string {
  return JSON.stringify({ address: to, lamports: amount.toString() });
}

/** Applies one operation to LiteSVM. Throws when a replayed operation does not apply. */
export function applyOperation(
  svm: LiteSVM,
  kind: LogKind,
  payload: string,
  replaying: boolean,
): TransactionMetadata | FailedTransactionMetadata | undefined {
  switch (kind) {
    case "tx": {
      const result = sendWire(svm, payload);
      if (replaying && result instanceof FailedTransactionMetadata) {
        const reason = describeTxError(result);
        // A transaction already in the snapshot's history is already applied.
        if (reason !== "AlreadyProcessed") throw new Error(`ledger replay failed: ${reason}`);
      }
      return result;
    }
    case "set_account": {
      const a = JSON.parse(payload) as {
        address: string;
        lamports: string;
        owner: string;
        executable: boolean;
        data: string;
      };
      const data = base64.encode.encode(a.data) as Uint8Array;
      svm.setAccount({
        address: address(a.address),
        lamports: toLamports(BigInt(a.lamports)),
        programAddress: address(a.owner),
        executable: a.executable,
        data,
        space: BigInt(data.length),
      });
      return undefined;
    }
    case "airdrop": {
      const a = JSON.parse(payload) as { address: string; lamports: string };
      const result = svm.airdrop(address(a.address), toLamports(BigInt(a.lamports)));
      if (!result || result instanceof FailedTransactionMetadata) {
        throw new Error(`airdrop failed: ${result ? describeTxError(result) : "no result"}`);
      }
      return undefined;
    }
    case "rotate": {
      const slot = svm.getClock().slot;
      svm.expireBlockhash();
      svm.warpToSlot(slot + SLOTS_PER_BLOCKHASH);
      return undefined;
    }
  }
}
