/**
 * The Solana rail's payer: builds x402 `exact` proofs from the configured keypair (the agent
 * key). The proof (a secret) is what a standard x402 client sends in `PAYMENT-SIGNATURE`:
 * base64(JSON(PaymentPayload)).
 *
 * Two ways to pay, one transaction layout: the x402 reference client's (`@x402/svm`'s exact
 * scheme: compute unit limit and price, TransferChecked, memo; the fee payer's signature left
 * to the facilitator), built by delegate.ts's `exactTransfer`. By default the agent key pays
 * from its own USDC token account; in delegate mode (an `owner` is configured) from the
 * owner's, as that account's SPL Token delegate, within the allowance the owner granted on
 * chain. Unlike the reference client, it derives no token account per proof: the source is
 * derived once at load and the payee's once per payee (domain/token.ts), and USDC's token
 * program and decimals are known, so no mint is read from the RPC. test/engine/payer.test.ts
 * checks the bytes are the reference client's own.
 *
 * The transaction's lifetime is ours: it is signed with the blockhash the caller got from
 * our own RPC, never with the `recentBlockhash` a challenge offers (a service could name one
 * that is not valid yet, and so choose when — and whether — our proof can still land).
 */
import {
  createKeyPairSignerFromBytes,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  signBytes,
  type KeyPairSigner,
} from "@solana/kit";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { KeypairFileError, readKeypairFile } from "../../../domain/keypair.js";
import { associatedTokenAddress } from "../../../domain/token.js";
import type { ProofOptions } from "../port.js";
import type { Lifetime } from "./chain.js";
import { exactTransfer } from "./transfer.js";
import { paidError } from "../../errors.js";

export interface Payer {
  /** The agent key's address (base58): the transfer's authority. */
  address: string;
  /** The USDC token account payments move money from: the agent key's own, or the owner's. */
  source: string;
  /** Delegate mode: the owner of `source`, whose allowance the agent key spends. */
  owner?: string;
  /** Signs the challenge's transfer with `lifetime` (from our RPC), whatever blockhash the challenge names. */
  createProof(requirements: PaymentRequirements, lifetime: Lifetime, o?: ProofOptions): Promise<{ proof: string }>;
  /** The agent key's ed25519 signature of `message` (a receipt's bytes: never a transaction). */
  signMessage(message: Uint8Array): Promise<Uint8Array>;
}

/** A key that signs Solana transactions (the owner's, for the allowance command). */
export type SolanaSigner = KeyPairSigner;

export interface PayerOptions {
  /** The USDC mint of the configured network. */
  mint: string;
  /** Delegate mode: the owner of the token account to pay from. */
  owner?: string;
}

/** The blockhash a proof's transaction was signed against. */
export function proofBlockhash(transaction: string): string | null {
  try {
    const tx = getTransactionDecoder().decode(getBase64Encoder().encode(transaction));
    return String(getCompiledTransactionMessageDecoder().decode(tx.messageBytes).lifetimeToken);
  } catch {
    return null;
  }
}

/** Loads a keypair file as a signer (refusing one readable by group or others), as `wallet_invalid` on any problem. */
export async function loadSigner(walletPath: string): Promise<KeyPairSigner> {
  let bytes: Uint8Array;
  try {
    bytes = readKeypairFile(walletPath);
  } catch (e) {
    if (e instanceof KeypairFileError)
      throw paidError("wallet_invalid", { walletPath, reason: e.reason, detail: e.message });
    throw e;
  }
  try {
    return await createKeyPairSignerFromBytes(bytes);
  } catch {
    throw paidError("wallet_invalid", { walletPath, reason: "malformed" });
  } finally {
    bytes.fill(0);
  }
}

/** Loads the agent key and returns a payer that pays from `source`: its own account, or the owner's. */
export async function loadPayer(walletPath: string, o: PayerOptions): Promise<Payer> {
  const signer = await loadSigner(walletPath);
  const source = await associatedTokenAddress(o.owner ?? signer.address, o.mint);
  const build = async (requirements: PaymentRequirements, lifetime: Lifetime) =>
    exactTransfer({
      authority: signer,
      source,
      payeeAccount: await associatedTokenAddress(requirements.payTo, requirements.asset),
      requirements,
      lifetime,
    });
  return {
    address: signer.address,
    source,
    ...(o.owner ? { owner: o.owner } : {}),
    signMessage: async (message) => new Uint8Array(await signBytes(signer.keyPair.privateKey, message)),
    async createProof(requirements, lifetime, o = {}) {
      let transaction: string;
      const toSign =
        o.memo !== undefined && requirements.extra?.memo === undefined
          ? { ...requirements, extra: { ...requirements.extra, memo: o.memo } }
          : requirements;
      try {
        transaction = await build(toSign, lifetime);
      } catch (e) {
        throw paidError("payment_failed", { problem: "build", detail: (e as Error).message.slice(0, 300) });
      }
      const payload = {
        x402Version: 2,
        ...(o.resource ? { resource: o.resource } : {}),
        // The challenge as the service gave it: it binds the payment, its blockhash hint does not.
        accepted: requirements,
        payload: { transaction },
        ...(o.extensions ? { extensions: o.extensions } : {}),
      };
      return { proof: Buffer.from(JSON.stringify(payload)).toString("base64") };
    },
  };
}
