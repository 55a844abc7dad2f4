/**
 * An x402 "exact" proof on an EVM chain, as the reference client (@x402/evm's
 * exact/client, eip3009.ts) lays it out: an EIP-3009 TransferWithAuthorization from the agent
 * key to the payee, of exactly the amount, signed as EIP-712 typed data over the USDC
 * contract's domain — but with the lifetime ours (rules.ts validityWindow: validBefore bounded
 * whatever the requirement's timeout) and a fresh random nonce chosen here, which the
 * reference client picks itself and would not let us journal before the proof leaves.
 *
 * The proof (a secret) is base64(JSON(PaymentPayload)): `{x402Version: 2, resource?,
 * accepted: <the requirement as given>, payload: {authorization, signature}, extensions?}`.
 */
import { getAddress, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { PaymentRequirements } from "../../../domain/wire.js";
import type { ProofOptions } from "../port.js";
import { AUTHORIZATION_TYPES, type EvmUsdc } from "./assets.js";

/** The EIP-712 domain an EIP-3009 authorization of `usdc` is signed over (and recovered from). */
export function usdcDomain(usdc: EvmUsdc) {
  return { name: usdc.name, version: usdc.version, chainId: usdc.chainId, verifyingContract: getAddress(usdc.address) };
}

/** What an authorization is signed with: ours, journaled before the proof leaves. */
export interface Validity {
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
}

/** Signs `requirement` with `key` as an EIP-3009 authorization; returns the proof (base64). */
export async function signAuthorization(
  key: PrivateKeyAccount,
  requirement: PaymentRequirements,
  usdc: EvmUsdc,
  v: Validity,
  o: ProofOptions = {},
): Promise<string> {
  const authorization = {
    from: key.address,
    to: getAddress(requirement.payTo),
    value: BigInt(requirement.amount).toString(),
    validAfter: v.validAfter.toString(),
    validBefore: v.validBefore.toString(),
    nonce: v.nonce,
  };
  const signature = await key.signTypedData({
    domain: usdcDomain(usdc),
    types: AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: {
      from: authorization.from,
      to: authorization.to,
      value: BigInt(authorization.value),
      validAfter: v.validAfter,
      validBefore: v.validBefore,
      nonce: v.nonce as Hex,
    },
  });
  const payload = {
    x402Version: 2,
    ...(o.resource ? { resource: o.resource } : {}),
    // The requirement as the seller gave it: a stock resource server wants it back deep-equal.
    accepted: requirement,
    payload: { authorization, signature },
    ...(o.extensions ? { extensions: o.extensions } : {}),
  };
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}
