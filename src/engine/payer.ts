/**
 * The payer: builds x402 proofs with the x402 reference client (`@x402/svm`'s exact
 * scheme), from the configured keypair and Solana RPC. The proof is what a standard x402
 * client sends in `PAYMENT-SIGNATURE`: base64(JSON(PaymentPayload)).
 */
import {
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Blockhash,
} from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import type { PaymentRequirements } from "../domain/wire.js";
import { KeypairFileError, readKeypairFile } from "../domain/keypair.js";
import { PaidActionError } from "./errors.js";

export interface Payer {
  /** The wallet's address (base58). */
  address: string;
  createProof(requirements: PaymentRequirements, resourceUrl?: string): Promise<string>;
  /**
   * Whether a proof's transaction can never land any more: its blockhash has expired on
   * the cluster (asked of our own RPC, not the service). Undefined when that is unknown.
   */
  proofExpired(proof: string): Promise<boolean | undefined>;
}

/** Loads the wallet (refusing one readable by group or others) and returns a payer. */
export async function loadPayer(walletPath: string, rpcUrl: string | undefined): Promise<Payer> {
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
  const scheme = new ExactSvmScheme(signer, rpcUrl ? { rpcUrl } : undefined);
  return {
    address: signer.address,
    async createProof(requirements, resourceUrl) {
      let result;
      try {
        result = await scheme.createPaymentPayload(2, requirements as unknown as X402Requirements);
      } catch (e) {
        throw new PaidActionError(
          "payment_failed",
          `could not build the payment transaction: ${(e as Error).message.slice(0, 300)} (check SOLANA_RPC_URL and that the wallet holds USDC)`,
          {},
          true,
        );
      }
      const payload = {
        x402Version: 2,
        ...(resourceUrl ? { resource: { url: resourceUrl } } : {}),
        accepted: requirements,
        payload: result.payload,
      };
      return Buffer.from(JSON.stringify(payload)).toString("base64");
    },
    async proofExpired(proof) {
      if (!rpcUrl) return undefined;
      try {
        const payload = JSON.parse(Buffer.from(proof, "base64").toString("utf8")) as { payload: { transaction: string } };
        const tx = getTransactionDecoder().decode(getBase64Encoder().encode(payload.payload.transaction));
        const blockhash = getCompiledTransactionMessageDecoder().decode(tx.messageBytes).lifetimeToken as Blockhash;
        const valid = await createSolanaRpc(rpcUrl).isBlockhashValid(blockhash, { commitment: "processed" }).send({ abortSignal: AbortSignal.timeout(5_000) });
        return !valid.value;
      } catch {
        return undefined;
      }
    },
  };
}
