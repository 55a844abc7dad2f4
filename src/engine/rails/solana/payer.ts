/**
 * The Solana rail's payer: builds x402 `exact` proofs from the configured keypair (the agent
 * key). The proof (a secret) is what a standard x402 client sends in `PAYMENT-SIGNATURE`:
 * base64(JSON(PaymentPayload)).
 *
 * Two ways to pay. By default the agent key pays from its own USDC token account, with the
 * x402 reference client (`@x402/svm`'s exact scheme). In delegate mode (an `owner` is
 * configured) it pays from the owner's token account as that account's SPL Token delegate,
 * within the allowance the owner granted on chain (delegate.ts), in the same layout.
 *
 * The transaction's lifetime is ours: it is signed with the blockhash the caller got from
 * our own RPC, never with the `recentBlockhash` a challenge offers (a service could name one
 * that is not valid yet, and so choose when — and whether — our proof can still land). The
 * built transaction is checked to carry exactly that blockhash before the proof is returned.
 */
import {
  createKeyPairSignerFromBytes,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  signBytes,
  type KeyPairSigner,
} from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { KeypairFileError, readKeypairFile } from "../../../domain/keypair.js";
import { associatedTokenAddress } from "../../../domain/token.js";
import type { ProofOptions } from "../port.js";
import type { Lifetime } from "./chain.js";
import { delegateTransfer } from "./delegate.js";
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

/** Builds the transaction (base64) for a challenge: the reference client's, or the delegate's. */
type Builder = (requirements: PaymentRequirements, lifetime: Lifetime) => Promise<string>;

/**
 * Loads the agent key and returns a payer. `rpcUrl` may be a function when the RPC may move
 * (the embedded sandbox taken over on another port): it is read for every proof.
 */
export async function loadPayer(
  walletPath: string,
  rpcUrl: string | undefined | (() => string | undefined),
  o: PayerOptions,
): Promise<Payer> {
  const signer = await loadSigner(walletPath);
  const source = await associatedTokenAddress(o.owner ?? signer.address, o.mint);
  const build: Builder = o.owner
    ? delegateBuilder(signer, source)
    : referenceBuilder(signer, typeof rpcUrl === "function" ? rpcUrl : () => rpcUrl);
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
      if (proofBlockhash(transaction) !== lifetime.blockhash) {
        throw paidError("payment_failed", { problem: "blockhash", blockhash: lifetime.blockhash });
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

/** The x402 reference client, paying from the agent key's own account, with our lifetime in place of the service's hint. */
function referenceBuilder(signer: KeyPairSigner, currentUrl: () => string | undefined): Builder {
  let schemeUrl = currentUrl();
  let scheme = new ExactSvmScheme(signer, schemeUrl ? { rpcUrl: schemeUrl } : undefined);
  return async (requirements, lifetime) => {
    const url = currentUrl();
    if (url !== schemeUrl) {
      schemeUrl = url;
      scheme = new ExactSvmScheme(signer, url ? { rpcUrl: url } : undefined);
    }
    // The scheme signs with extra.recentBlockhash when there is one: ours, in place of the service's.
    const toSign = {
      ...requirements,
      extra: {
        ...requirements.extra,
        recentBlockhash: lifetime.blockhash,
        lastValidBlockHeight: lifetime.lastValidHeight.toString(),
      },
    };
    const result = await scheme.createPaymentPayload(2, toSign as unknown as X402Requirements);
    const transaction = (result.payload as { transaction?: unknown }).transaction;
    if (typeof transaction !== "string") throw new Error("the x402 client built no transaction");
    return transaction;
  };
}

/** The agent key as the owner's delegate: the same layout, from the owner's account. */
function delegateBuilder(signer: KeyPairSigner, source: string): Builder {
  return async (requirements, lifetime) =>
    delegateTransfer({
      agent: signer,
      source,
      payeeAccount: await associatedTokenAddress(requirements.payTo, requirements.asset),
      requirements,
      lifetime,
    });
}
