/**
 * The USDC the EVM rail pays in, per chain: x402's default-asset table (domain/networks.ts,
 * checked against @x402/evm's own in evm-rules.test.ts) — the token contract and the EIP-712
 * domain an EIP-3009 authorization is signed over — and how EVM addresses compare (the same
 * address, whatever the case of its hex letters). Pure.
 */
import { EVM_USDC, type EvmUsdc } from "../../../domain/networks.js";

export type { EvmUsdc } from "../../../domain/networks.js";

export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const NONCE = /^0x[0-9a-f]{64}$/;

/** The USDC of an EVM network this server pays on; throws for one it does not know (the configuration refuses it first). */
export function usdcOn(network: string): EvmUsdc {
  const usdc = EVM_USDC[network];
  if (!usdc) throw new Error(`${network} is not an EVM network this server knows`);
  return usdc;
}

/** One EVM address, however its letters are cased. */
export function sameAddress(a: unknown, b: unknown): boolean {
  return (
    typeof a === "string" &&
    typeof b === "string" &&
    EVM_ADDRESS.test(a) &&
    EVM_ADDRESS.test(b) &&
    a.toLowerCase() === b.toLowerCase()
  );
}

/** EIP-3009's TransferWithAuthorization, the typed data an x402 "exact" EVM proof signs (@x402/evm authorizationTypes). */
export const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;
