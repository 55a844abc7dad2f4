/**
 * The Solana rail's part in a receipt (rails/port.ts evidence, signReceipt): what our RPC
 * shows of a payment's transaction when the receipt is made — its slot, its finality, the
 * transfer out of the paying account, and the wire transaction itself, so that anyone can
 * check the payer's signature offline — and the receipt's own signature by the agent key,
 * which the chain shows as the transfer's authority.
 */
import { getBase58Decoder } from "@solana/kit";
import { verifyPayment } from "../../chain/chain.js";
import type { ExpectedPayment } from "../../chain/chain.js";
import type { EvidenceReading, Rail } from "../port.js";
import type { RawEvidence } from "./chain.js";
import type { SolanaDeps } from "./rail.js";
import { expected } from "./truth.js";

const rpcFailure = (e: unknown) => (e as Error).message.slice(0, 200);

/** What our RPC's reading of a transaction shows against the payment expected (receipts and their verification). */
export function readingOf(raw: RawEvidence | null, exp: ExpectedPayment): EvidenceReading {
  if (!raw) return { kind: "missing" };
  const { tx } = raw;
  return {
    kind: "found",
    evidence: {
      transaction: tx.signature,
      slot: tx.slot,
      blockHash: null,
      blockTime: tx.blockTime,
      finality: raw.finality,
      failed: tx.failed,
      transfer: tx.transfers.find((x) => x.source === exp.walletAta) ?? null,
      memos: tx.memos,
      wire: raw.wire,
      problems: verifyPayment(tx, exp),
    },
  };
}

/** The port's evidence and signReceipt, on Solana. */
export function solanaReceipts(d: SolanaDeps): Pick<Rail, "evidence" | "signReceipt"> {
  return {
    async evidence(p, signature) {
      const exp = await expected(d, p);
      let raw;
      try {
        const chain = await d.chain();
        if (!chain.transactionEvidence) return { kind: "unknown", why: "this chain port reads no wire transactions" };
        raw = await chain.transactionEvidence(signature);
      } catch (e) {
        return { kind: "unknown", why: `the Solana RPC did not answer (${rpcFailure(e)})` };
      }
      return readingOf(raw, exp);
    },

    async signReceipt(payer, message) {
      const key = await d.payer();
      // Only the key the chain shows as the transfer's authority may speak for the payment.
      if (key.address !== payer) return { problem: "key_changed" };
      const signature = await key.signMessage(message);
      return { scheme: "ed25519", signer: key.address, value: getBase58Decoder().decode(signature) };
    },
  };
}
