/**
 * The Solana rail's checks of a receipt (rails/port.ts RailVerifier), with no key, no journal
 * and no configuration: the receipt's own ed25519 signature, the wire transaction it carries
 * (every signature over its message, its id, its TransferChecked and memo against what the
 * receipt states), and — given any Solana RPC — that transaction on chain as stated.
 */
import {
  address,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Encoder,
  getPublicKeyFromAddress,
  getTransactionDecoder,
  verifySignature,
  type SignatureBytes,
} from "@solana/kit";
import { associatedTokenAddress } from "../../../domain/token.js";
import { verifyPayment, type ExpectedPayment } from "../../chain/chain.js";
import type { RailVerifier, StatedPayment, WireCheck } from "../port.js";
import { readingOf } from "./receipts.js";
import { createRpcChain, decodeRpcTransaction } from "./rpc.js";

/** Whether `signature` (64 bytes) is `signer`'s ed25519 signature of `message`; false for anything malformed. */
async function ed25519(signer: string, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  if (signature.length !== 64) return false;
  try {
    const key = await getPublicKeyFromAddress(address(signer));
    return await verifySignature(key, signature as SignatureBytes, message);
  } catch {
    return false;
  }
}

function fromBase58(text: string): Uint8Array | undefined {
  try {
    return new Uint8Array(getBase58Encoder().encode(text));
  } catch {
    return undefined;
  }
}

/** What the stated payment's transfer must be: the payee's associated token account of the asset, paid by the payer. */
async function expectedOf(s: StatedPayment): Promise<ExpectedPayment | string> {
  try {
    const payeeAta = await associatedTokenAddress(s.payee, s.asset);
    return { wallet: s.payer, walletAta: s.source, payeeAta, mint: s.asset, amount: s.amount, memo: s.memo };
  } catch {
    return `the payee ${s.payee.slice(0, 64)} or the asset ${s.asset.slice(0, 64)} is not a Solana address`;
  }
}

/** Decodes the wire transaction: its signatures (each checked over the message) and what it moved. */
async function checkWire(wire: string, stated: StatedPayment): Promise<WireCheck> {
  let decoded;
  try {
    decoded = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
  } catch {
    return { transaction: null, signatures: [], problems: ["the wire transaction does not decode"] };
  }
  const signatures: WireCheck["signatures"] = [];
  const problems: string[] = [];
  let id: string | null = null;
  for (const [signer, sig] of Object.entries(decoded.signatures)) {
    if (!sig) continue;
    id ??= getBase58Decoder().decode(sig); // the first signature (the fee payer's) is the transaction's id
    const valid = await ed25519(signer, sig, new Uint8Array(decoded.messageBytes));
    signatures.push({ signer, valid });
    if (!valid) problems.push(`the signature of ${signer} does not verify over the transaction's message`);
  }
  if (id !== stated.transaction)
    problems.push(`the wire transaction is ${id ?? "unsigned"}, not ${stated.transaction}`);
  if (!signatures.some((s) => s.signer === stated.payer && s.valid))
    problems.push(`the payer ${stated.payer} did not sign the wire transaction`);
  const exp = await expectedOf(stated);
  if (typeof exp === "string") return { transaction: id, signatures, problems: [...problems, exp] };
  try {
    const tx = await decodeRpcTransaction(id ?? "unsigned", {
      slot: 0,
      blockTime: null,
      meta: { err: null },
      transaction: [wire, "base64"],
    });
    problems.push(...verifyPayment(tx, exp));
  } catch (e) {
    problems.push(`the wire transaction's message does not read (${(e as Error).message.slice(0, 200)})`);
  }
  return { transaction: id, signatures, problems };
}

export const solanaVerifier: RailVerifier = {
  kind: "solana",

  async verifyMessage(scheme, message, signer, signature) {
    const sig = fromBase58(signature);
    return scheme === "ed25519" && sig !== undefined && ed25519(signer, sig, message);
  },

  checkWire,

  async onChain(rpcUrl, stated) {
    const exp = await expectedOf(stated);
    if (typeof exp === "string") return { kind: "unknown", why: exp };
    let raw;
    try {
      const chain = await createRpcChain(rpcUrl);
      raw = await chain.transactionEvidence(stated.transaction);
    } catch (e) {
      return { kind: "unknown", why: `the Solana RPC did not answer (${(e as Error).message.slice(0, 200)})` };
    }
    return readingOf(raw, exp);
  },
};
