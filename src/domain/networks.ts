/**
 * The networks x402 v2 names (CAIP-2) that this server knows, and the USDC each one pays
 * with: on a Solana cluster, a mint; on an EVM chain, the token contract of x402's
 * default-asset table (what a stock seller's `$` price means there) and its EIP-712 domain,
 * which an EIP-3009 authorization is signed over.
 */

export const SOLANA_MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
export const SOLANA_DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

export const USDC_MINT: Readonly<Record<string, string>> = {
  [SOLANA_MAINNET]: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
  [SOLANA_DEVNET]: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
};

/** x402 v1 network names and their CAIP-2 ids. */
export const NETWORK_ALIASES: Readonly<Record<string, string>> = {
  solana: SOLANA_MAINNET,
  "solana-devnet": SOLANA_DEVNET,
};

/** Resolves `solana`, `solana-devnet` or a known CAIP-2 id; undefined otherwise. */
export function resolveNetwork(name: string): string | undefined {
  const caip2 = NETWORK_ALIASES[name] ?? name;
  return USDC_MINT[caip2] ? caip2 : undefined;
}

export const BASE_MAINNET = "eip155:8453";
export const BASE_SEPOLIA = "eip155:84532";

/** USDC on an EVM chain: the token contract (checksummed) and the EIP-712 domain its authorizations are signed over. */
export interface EvmUsdc {
  chainId: number;
  address: string;
  name: string;
  version: string;
}

/** x402's default assets (@x402/evm DEFAULT_ASSETS) on the EVM chains this server pays on. */
export const EVM_USDC: Readonly<Record<string, EvmUsdc>> = {
  [BASE_MAINNET]: {
    chainId: 8453,
    address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    name: "USD Coin",
    version: "2",
  },
  [BASE_SEPOLIA]: { chainId: 84532, address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", name: "USDC", version: "2" },
};

/** The USDC a network pays in (a Solana mint, an EVM token contract); undefined for a network this server does not know. */
export function usdcOf(network: string): string | undefined {
  return USDC_MINT[network] ?? EVM_USDC[network]?.address;
}
