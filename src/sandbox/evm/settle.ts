/**
 * Settling x402 exact payments on the EVM ledger, for the v1 service and the facilitator
 * alike: `@x402/evm`'s reference facilitator scheme (ExactEvmScheme) with a viem signer on the
 * sandbox's facilitator key, then the chain's word — an EIP-3009 authorization is identified
 * by (authorizer, nonce), and the token's AuthorizationUsed event says whether and where it
 * moved the money, whatever the scheme answered. Nothing is reported settled before the
 * chain's state that holds it is on disk (ledger.persist()), so a kill -9 can lose only what
 * nobody was told.
 */
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import type {
  PaymentPayload as X402PaymentPayload,
  PaymentRequirements as X402PaymentRequirements,
  SettleResponse,
  VerifyResponse,
} from "@x402/core/types";
import { keccak256, maxUint256, stringToHex, type Address, type Hex } from "viem";
import { EvmPaymentPayload, type Eip3009Authorization, type PaymentRequirements } from "../../domain/wire.js";
import { EVM_CHAIN_ID, EVM_NETWORK, EVM_USDC, EVM_USDC_DOMAIN, USDC_ABI, type EvmLedger } from "./ledger.js";

/** The identity of an EIP-3009 authorization: the token refuses a second use of (authorizer, nonce). */
export const authorizationId = (a: Pick<Eip3009Authorization, "from" | "nonce">) =>
  `eip3009:${a.from.toLowerCase()}:${a.nonce.toLowerCase()}`;

export const isEvmNetwork = (network: unknown) => network === EVM_NETWORK;

/** The network a base64 proof's `accepted` names, if it is readable at all. */
export function proofNetwork(proof: string): string | undefined {
  try {
    const json = JSON.parse(Buffer.from(proof, "base64").toString("utf8")) as { accepted?: { network?: unknown } };
    return typeof json.accepted?.network === "string" ? json.accepted.network : undefined;
  } catch {
    return undefined;
  }
}

/** Parses an EVM proof's JSON (already decoded from base64); undefined when it is not one. */
export function parseEvmPayload(json: unknown): EvmPaymentPayload | undefined {
  const parsed = EvmPaymentPayload.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

export type EvmSettleResult =
  { ok: true; transaction: string; payer: string } | { ok: false; reason: string; message?: string };

export class EvmSettler {
  private readonly scheme: ExactEvmScheme;

  constructor(private readonly ledger: EvmLedger) {
    const wallet = ledger.wallet(ledger.keys.facilitator);
    // The reference signer names its key by `address` (a viem wallet client keeps it in `account`).
    this.scheme = new ExactEvmScheme(toFacilitatorEvmSigner({ ...wallet, address: wallet.account.address } as never));
  }

  /** The facilitator key that pays the gas (what /supported names as its signer). */
  get signer(): string {
    return this.ledger.keys.facilitator.address;
  }

  /** Who the sandbox's own paid resources are paid to on this ledger. */
  get seller(): string {
    return this.ledger.keys.seller.address;
  }

  /** Who the v1 service's quotes are paid to on this ledger (and who refunds). */
  get treasury(): string {
    return this.ledger.keys.treasury.address;
  }

  get facilitatorScheme(): ExactEvmScheme {
    return this.scheme;
  }

  verify(payload: EvmPaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    return this.scheme.verify(
      payload as unknown as X402PaymentPayload,
      requirements as unknown as X402PaymentRequirements,
    );
  }

  /**
   * Settles through the reference scheme; the chain decides when the scheme did not report
   * success. A success is answered only once the chain's state holding it is on disk. The
   * scheme sends from the facilitator key: one settlement at a time (EvmLedger.inTurn).
   */
  async settle(
    payload: EvmPaymentPayload,
    requirements: PaymentRequirements,
    run: (payload: X402PaymentPayload, requirements: X402PaymentRequirements) => Promise<SettleResponse> = (p, r) =>
      this.scheme.settle(p, r),
  ): Promise<EvmSettleResult> {
    let result: SettleResponse | undefined;
    let thrown: string | undefined;
    try {
      result = await this.ledger.inTurn(this.ledger.keys.facilitator.address, () =>
        run(payload as unknown as X402PaymentPayload, requirements as unknown as X402PaymentRequirements),
      );
    } catch (e) {
      thrown = (e as Error).message;
    }
    const landed = await this.landed(payload.payload.authorization);
    if (landed) {
      await this.ledger.persist();
      return { ok: true, transaction: landed, payer: payload.payload.authorization.from };
    }
    return {
      ok: false,
      reason: result?.errorReason ?? (result?.success ? "transaction_failed" : "unexpected_settle_error"),
      ...(result?.errorMessage || thrown ? { message: result?.errorMessage ?? thrown } : {}),
    };
  }

  /** The transaction in which this authorization moved the money, if it did (a cancelled one did not). */
  async landed(a: Pick<Eip3009Authorization, "from" | "nonce">): Promise<string | undefined> {
    if (!(await this.ledger.authorizationUsed(a.from, a.nonce))) return undefined;
    const logs = await this.ledger.public.getContractEvents({
      address: EVM_USDC,
      abi: USDC_ABI,
      eventName: "AuthorizationUsed",
      args: { authorizer: a.from as Address, nonce: a.nonce as Hex },
      fromBlock: 0n,
    });
    return logs[0]?.transactionHash ?? undefined;
  }

  /**
   * Pays `amount` back from the treasury to `to` for an execution: a transferWithAuthorization
   * the treasury signs with a nonce derived from the execution, and sends itself. The nonce
   * makes it happen at most once, however often it is retried across crashes; a refund that
   * already landed is found and returned.
   */
  async refund(executionId: string, to: string, amount: bigint): Promise<string> {
    const treasury = this.ledger.keys.treasury;
    const nonce = keccak256(stringToHex(`paid-actions refund ${executionId}`));
    const done = await this.landed({ from: treasury.address, nonce });
    if (done) return done;
    const message = {
      from: treasury.address,
      to: to as Address,
      value: amount,
      validAfter: 0n,
      validBefore: maxUint256,
      nonce,
    };
    const signature = await treasury.signTypedData({
      domain: { ...EVM_USDC_DOMAIN, chainId: EVM_CHAIN_ID, verifyingContract: EVM_USDC },
      types: {
        TransferWithAuthorization: [
          { name: "from", type: "address" },
          { name: "to", type: "address" },
          { name: "value", type: "uint256" },
          { name: "validAfter", type: "uint256" },
          { name: "validBefore", type: "uint256" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "TransferWithAuthorization",
      message,
    });
    await this.ledger.callToken(treasury, {
      functionName: "transferWithAuthorization",
      args: [message.from, message.to, message.value, message.validAfter, message.validBefore, nonce, signature],
    });
    const landed = await this.landed({ from: treasury.address, nonce });
    if (!landed) throw new Error(`refund of ${executionId} did not land`);
    await this.ledger.persist();
    return landed;
  }

  /**
   * Submits a recorded authorization again (after a crash lost the chain's copy of it): the
   * facilitator key sends the same transferWithAuthorization. A used nonce makes it revert,
   * moving nothing; so does an expired authorization. Returns the transaction, or why not.
   */
  async resubmit(payload: EvmPaymentPayload): Promise<EvmSettleResult> {
    const a = payload.payload.authorization;
    try {
      await this.ledger.callToken(this.ledger.keys.facilitator, {
        functionName: "transferWithAuthorization",
        args: [
          a.from,
          a.to,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce,
          payload.payload.signature,
        ],
      });
    } catch (e) {
      return { ok: false, reason: "resubmission_failed", message: (e as Error).message };
    }
    const landed = await this.landed(a);
    if (!landed) return { ok: false, reason: "resubmission_failed" };
    await this.ledger.persist();
    return { ok: true, transaction: landed, payer: a.from };
  }
}
