/**
 * The payer: builds x402 proofs with the x402 reference client (`@x402/svm`'s exact
 * scheme), from the configured keypair and Solana RPC. The proof is what a standard x402
 * client sends in `PAYMENT-SIGNATURE`: base64(JSON(PaymentPayload)).
 *
 * The transaction's lifetime is ours: it is signed with the blockhash the caller got from
 * our own RPC, never with the `recentBlockhash` a challenge offers (a service could name one
 * that is not valid yet, and so choose when — and whether — our proof can still land). The
 * built transaction is checked to carry exactly that blockhash before the proof is returned.
 */
import { createKeyPairSignerFromBytes, getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder } from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import type { PaymentRequirements } from "../domain/wire.js";
import { KeypairFileError, readKeypairFile } from "../domain/keypair.js";
import type { Lifetime } from "./chain.js";
import { PaidActionError } from "./errors.js";

export interface SignedProof {
  /** base64(JSON(x402 v2 PaymentPayload)): a secret. */
  proof: string;
}

export interface Payer {
  /** The wallet's address (base58). */
  address: string;
  /** Signs the challenge's transfer with `lifetime` (from our RPC), whatever blockhash the challenge names. */
  createProof(requirements: PaymentRequirements, lifetime: Lifetime, resourceUrl?: string): Promise<SignedProof>;
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

/**
 * Loads the wallet (refusing one readable by group or others) and returns a payer. `rpcUrl`
 * may be a function when the RPC may move (the embedded sandbox taken over on another
 * port): it is read for every proof.
 */
export async function loadPayer(walletPath: string, rpcUrl: string | undefined | (() => string | undefined)): Promise<Payer> {
  let bytes: Uint8Array;
  try {
    bytes = readKeypairFile(walletPath);
  } catch (e) {
    if (e instanceof KeypairFileError) throw new PaidActionError("wallet_invalid", e.message, { walletPath, reason: e.reason });
    throw e;
  }
  let signer;
  try {
    signer = await createKeyPairSignerFromBytes(bytes);
  } catch {
    throw new PaidActionError("wallet_invalid", `wallet file ${walletPath} does not hold a valid ed25519 keypair`, { walletPath, reason: "malformed" });
  } finally {
    bytes.fill(0);
  }
  const currentUrl = typeof rpcUrl === "function" ? rpcUrl : () => rpcUrl;
  let schemeUrl = currentUrl();
  let scheme = new ExactSvmScheme(signer, schemeUrl ? { rpcUrl: schemeUrl } : undefined);
  return {
    address: signer.address,
    async createProof(requirements, lifetime, resourceUrl) {
      const url = currentUrl();
      if (url !== schemeUrl) {
        schemeUrl = url;
        scheme = new ExactSvmScheme(signer, url ? { rpcUrl: url } : undefined);
      }
      // The scheme signs with extra.recentBlockhash when there is one: ours, in place of the service's.
      const toSign = { ...requirements, extra: { ...requirements.extra, recentBlockhash: lifetime.blockhash, lastValidBlockHeight: lifetime.lastValidHeight.toString() } };
      let result;
      try {
        result = await scheme.createPaymentPayload(2, toSign as unknown as X402Requirements);
      } catch (e) {
        throw new PaidActionError(
          "payment_failed",
          `could not build the payment transaction: ${(e as Error).message.slice(0, 300)} (check SOLANA_RPC_URL and that the wallet holds USDC)`,
          {},
          true,
        );
      }
      const transaction = (result.payload as { transaction?: unknown }).transaction;
      const signedWith = typeof transaction === "string" ? proofBlockhash(transaction) : null;
      if (signedWith !== lifetime.blockhash) {
        throw new PaidActionError("payment_failed", `the payment transaction was not built with the blockhash our Solana RPC gave (${lifetime.blockhash}); nothing was sent`);
      }
      const payload = {
        x402Version: 2,
        ...(resourceUrl ? { resource: { url: resourceUrl } } : {}),
        // The challenge as the service gave it: it binds the payment, its blockhash hint does not.
        accepted: requirements,
        payload: result.payload,
      };
      return { proof: Buffer.from(JSON.stringify(payload)).toString("base64") };
    },
  };
}
