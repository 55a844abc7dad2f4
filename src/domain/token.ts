/**
 * SPL token addresses: the associated token account of an owner for a mint. Deriving one
 * searches for a program address off the ed25519 curve (a square root per bump tried, in
 * JavaScript), which is most of a paid call's signing and verification CPU when done on
 * every call; the answer never changes, so each (owner, mint) is derived once and kept,
 * up to MAX_KEPT pairs (then the oldest goes).
 */
import { address, type Address } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS, findAssociatedTokenPda } from "@solana-program/token";

/** About 150 bytes a pair: a server paying 4,096 distinct payees holds well under 1 MB of them. */
export const MAX_KEPT = 4_096;
const kept = new Map<string, Promise<Address>>();

async function derive(owner: string, mint: string): Promise<Address> {
  const [ata] = await findAssociatedTokenPda({
    owner: address(owner),
    mint: address(mint),
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  return ata;
}

export function associatedTokenAddress(owner: string, mint: string): Promise<Address> {
  const key = `${owner}:${mint}`;
  const known = kept.get(key);
  if (known) return known;
  const derived = derive(owner, mint);
  kept.set(key, derived);
  // A bad address is not kept: the next caller gets its own error.
  derived.catch(() => kept.delete(key));
  if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
  return derived;
}
