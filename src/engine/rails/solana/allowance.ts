/**
 * The on-chain ceiling of delegate mode: what the owner's USDC token account still lets the
 * agent key move, read through our own RPC. Before anything is signed, a price above it is
 * refused (`allowance_exhausted`, addressed to the person: only the owner can grant more).
 * The token program enforces the same ceiling whatever this check says; the check only
 * spares a proof that could never land.
 *
 * Also the fee an owner's allowance transaction costs, as a person reads it.
 *
 * The allowance is cached briefly: each price admitted is counted off the cached value until
 * the next read, and a price the cached value cannot cover is checked against a fresh read
 * before it is refused.
 */
import { formatDecimal } from "../../../domain/money.js";
import type { ChainPort } from "./chain.js";
import { paidError } from "../../errors.js";
import type { Payer } from "./payer.js";

/** What the chain says of the agent key's allowance on the owner's account. */
export interface AllowanceView {
  owner: string;
  /** The agent key: the delegate this server pays as. */
  delegate: string;
  /** The owner's USDC token account. */
  tokenAccount: string;
  /** What the agent key may still move (0 when another key, or none, is the account's delegate). */
  allowance: bigint;
  ownerBalance: bigint;
  /** The account's delegate on chain, whoever it is (null: none). */
  onChainDelegate: string | null;
  /** The owner's token account does not exist (yet). */
  missing: boolean;
}

/** Reads the allowance of a delegate-mode payer; throws when the RPC does not answer. */
export async function readAllowance(
  chain: ChainPort,
  payer: Pick<Payer, "address" | "source" | "owner">,
): Promise<AllowanceView> {
  if (!payer.owner) throw new Error("not in delegate mode: no owner is configured");
  const account = await chain.tokenAccount(payer.source);
  const base = { owner: payer.owner, delegate: payer.address, tokenAccount: payer.source };
  if (!account) return { ...base, allowance: 0n, ownerBalance: 0n, onChainDelegate: null, missing: true };
  if (account.owner !== payer.owner)
    throw new Error(`token account ${payer.source} belongs to ${account.owner}, not to the owner ${payer.owner}`);
  return {
    ...base,
    allowance: account.delegate === payer.address ? account.delegatedAmount : 0n,
    ownerBalance: account.amount,
    onChainDelegate: account.delegate,
    missing: false,
  };
}

/** Why the allowance cannot cover a price, in words for the person. */
export function shortfall(v: AllowanceView, price: bigint): string | undefined {
  if (v.missing) return `the owner ${v.owner} has no USDC token account (${v.tokenAccount}) yet`;
  if (v.onChainDelegate === null)
    return `the owner's USDC account grants this server's key ${v.delegate} no allowance (it names no delegate: revoked, or never granted)`;
  if (v.onChainDelegate !== v.delegate)
    return `the owner's USDC account names another delegate (${v.onChainDelegate}), not this server's key ${v.delegate}`;
  if (v.allowance < price)
    return `the allowance left for this server's key is ${formatDecimal(v.allowance)} USDC, less than the price ${formatDecimal(price)} USDC`;
  if (v.ownerBalance < price)
    return `the owner's USDC account holds ${formatDecimal(v.ownerBalance)} USDC, less than the price ${formatDecimal(price)} USDC`;
  return undefined;
}

export const ALLOWANCE_CACHE_MS = 5_000;

export class AllowanceGate {
  private cached: { view: AllowanceView; at: number } | undefined;

  constructor(private readonly now: () => number) {}

  /** Admits a price against the allowance, or throws `allowance_exhausted` (nothing signed). */
  async admit(chain: ChainPort, payer: Payer, price: bigint): Promise<void> {
    const c = this.cached;
    if (c && this.now() - c.at < ALLOWANCE_CACHE_MS && shortfall(c.view, price) === undefined) {
      c.view = { ...c.view, allowance: c.view.allowance - price, ownerBalance: c.view.ownerBalance - price };
      return;
    }
    let view: AllowanceView;
    try {
      view = await readAllowance(chain, payer);
    } catch (e) {
      this.cached = undefined;
      const detail = (e as Error).message.slice(0, 200);
      throw paidError("payment_failed", { problem: "rpc", what: "allowance", detail });
    }
    const short = shortfall(view, price);
    if (short) {
      this.cached = { view, at: this.now() };
      throw paidError("allowance_exhausted", {
        owner: view.owner,
        delegate: view.delegate,
        allowance: formatDecimal(view.allowance),
        amount: formatDecimal(price),
        detail: short,
      });
    }
    this.cached = {
      view: { ...view, allowance: view.allowance - price, ownerBalance: view.ownerBalance - price },
      at: this.now(),
    };
  }

  /** Forgets the cached value (the chain moved: a payment landed, a grant was made). */
  forget(): void {
    this.cached = undefined;
  }
}

/** What sending an allowance transaction costs its fee payer (the owner), in lamports. */
export interface AllowanceFee {
  lamports: bigint;
  /** 5,000 lamports per signature the transaction needs. */
  base: bigint;
  /** Unit price × unit limit (rounded up to a lamport). */
  priority: bigint;
  signatures: number;
  unitLimit: number;
  microLamportsPerUnit: bigint;
}

/** A fee for a person: SOL, and how it adds up. */
export function describeFee(f: AllowanceFee): string {
  const priority =
    f.priority === 0n
      ? "no priority fee"
      : `a priority fee of ${f.priority} lamports (${f.microLamportsPerUnit} microlamports × ${f.unitLimit} compute units)`;
  return `${formatDecimal(f.lamports, 9)} SOL (${f.lamports} lamports: ${f.base} for ${f.signatures} signature${f.signatures === 1 ? "" : "s"}, ${priority})`;
}
