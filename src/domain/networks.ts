/**
 * Solana clusters as x402 v2 names them (CAIP-2), and the USDC mint each one pays with.
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
