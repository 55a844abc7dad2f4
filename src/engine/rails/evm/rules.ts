/**
 * The EVM rail's rules, as pure functions of what they are given: which requirement of a 402
 * it pays (accepts), its checks of a service's challenge against the quote (the chain-neutral
 * ones are budget/policy.ts's), the lifetime it signs with, and — from the facts our own EVM
 * RPC established — when a proof has landed, can never land, or nobody can tell yet, and how
 * long a payment found unable to land is still watched. No I/O; table-tested.
 *
 * An EIP-3009 authorization's lifetime is ours: `validBefore` is now plus the shorter of our
 * bound and the requirement's `maxTimeoutSeconds`, journaled with its nonce before the proof
 * leaves. The token refuses it once a block's timestamp reaches `validBefore` (FiatToken:
 * `now < validBefore`) and refuses a used nonce: so "can never land" follows only from our
 * RPC's newest block being at or past `validBefore` with the nonce unused at that very block.
 */
import { parseAtomic, U64_MAX } from "../../../domain/money.js";
import type { PaymentRequirements } from "../../../domain/wire.js";
import type { Drift, PricedIntent, RailChecks } from "../../budget/policy.js";
import { EVM_ADDRESS, sameAddress, type EvmUsdc } from "./assets.js";

/** The longest an authorization of ours stays valid, whatever a requirement's timeout asks for (5 minutes). */
export const VALIDITY_BOUND_S = 300;

/** A payment found unable to land is watched until our newest block is this far past its validBefore (10 minutes). */
export const WATCH_MARGIN_S = 600n;

/** Why this rail cannot pay a requirement, or undefined when it can. */
export function unpayable(r: PaymentRequirements, network: string, usdc: EvmUsdc): string | undefined {
  if (r.scheme !== "exact") return "scheme";
  if (r.network !== network) return "network";
  if (!sameAddress(r.asset, usdc.address)) return "asset";
  const amount = parseAtomic(r.amount);
  if (amount === undefined || amount === 0n || amount > U64_MAX) return "amount";
  if (typeof r.payTo !== "string" || !EVM_ADDRESS.test(r.payTo)) return "payTo";
  if (!Number.isFinite(r.maxTimeoutSeconds) || r.maxTimeoutSeconds <= 0) return "maxTimeoutSeconds";
  // The permit2 transfer method is another proof altogether; only EIP-3009 is ours.
  const method = r.extra.assetTransferMethod;
  if (method !== undefined && method !== "eip3009") return "extra.assetTransferMethod";
  if (r.extra.name !== usdc.name || r.extra.version !== usdc.version) return "extra.name/version";
  return undefined;
}

/**
 * EVM's own checks of a service's challenge: x402's USDC on this chain and its EIP-712 domain
 * (`extra.name`, `extra.version`), EIP-3009 as the transfer method, payees compared whatever
 * their case, and a memo — when the challenge names one, as the v1 service binds a proof's
 * `accepted` to its quote with it — that is the quote's id.
 */
export function evmChecks(priced: PricedIntent, network: string, usdc: EvmUsdc): RailChecks {
  return {
    network,
    asset: (r) =>
      sameAddress(r.asset, usdc.address)
        ? []
        : [{ field: "asset", expected: usdc.address, actual: String(r.asset).slice(0, 64) }],
    samePayee: (a, b) => a === b || sameAddress(a, b),
    extra(r) {
      const drifts: Drift[] = [];
      const extra = r.extra ?? {};
      for (const field of ["name", "version"] as const) {
        if (extra[field] !== usdc[field])
          drifts.push({
            field: `extra.${field}`,
            expected: usdc[field],
            actual: JSON.stringify(extra[field] ?? null).slice(0, 80),
          });
      }
      if (extra.assetTransferMethod !== undefined && extra.assetTransferMethod !== "eip3009")
        drifts.push({
          field: "extra.assetTransferMethod",
          expected: "eip3009",
          actual: JSON.stringify(extra.assetTransferMethod).slice(0, 80),
        });
      if (!EVM_ADDRESS.test(String(r.payTo)))
        drifts.push({ field: "payTo", expected: "an EVM address", actual: String(r.payTo).slice(0, 64) });
      if (extra.memo !== undefined && extra.memo !== priced.quoteId)
        drifts.push({ field: "extra.memo", expected: priced.quoteId, actual: JSON.stringify(extra.memo).slice(0, 80) });
      return drifts;
    },
  };
}

/**
 * The validity window to sign with at `nowMs`: valid after 0 (as the x402 reference client
 * signs: never in the future), valid before now plus the shorter of our bound and the
 * requirement's timeout (at least a second), in unix seconds.
 */
export function validityWindow(
  nowMs: number,
  maxTimeoutSeconds: number,
  boundS = VALIDITY_BOUND_S,
): { validAfter: bigint; validBefore: bigint } {
  const timeout = Number.isFinite(maxTimeoutSeconds) ? Math.max(1, Math.floor(maxTimeoutSeconds)) : boundS;
  return { validAfter: 0n, validBefore: BigInt(Math.floor(nowMs / 1000) + Math.min(boundS, timeout)) };
}

/** Our RPC's newest block, as read first. */
export interface Head {
  number: bigint;
  /** Unix seconds. */
  timestamp: bigint;
}

/**
 * What our RPC says of an authorization: its nonce used at the head read first (undefined:
 * the RPC did not say), and — when used — what the token's logs show of it: the transfer found
 * (`landed`), a cancellation (`canceled`), or nothing found (`missing`: a node without those logs).
 */
export interface FateFacts {
  head: Head | undefined;
  used: boolean | undefined;
  validBefore: bigint;
  logs?: "landed" | "canceled" | "missing";
  /** Why the RPC could not answer, when it could not. */
  why?: string;
}

export type FateRuling = { kind: "landed" } | { kind: "never"; why: string } | { kind: "unknown"; why: string };

const when = (s: bigint) => new Date(Number(s) * 1000).toISOString();

/** The landed / never / unknown rule. */
export function fateRuling(f: FateFacts): FateRuling {
  if (f.head === undefined || f.used === undefined)
    return { kind: "unknown", why: `our EVM RPC did not answer (${f.why ?? "no reason given"})` };
  if (f.used) {
    if (f.logs === "landed") return { kind: "landed" };
    if (f.logs === "canceled")
      return { kind: "never", why: "its authorization was canceled on chain (by the key's holder) before it was used" };
    return {
      kind: "unknown",
      why: "its authorization's nonce is used on chain, but our EVM RPC returns no log of the transfer that used it",
    };
  }
  if (f.head.timestamp >= f.validBefore)
    return {
      kind: "never",
      why: `our EVM RPC's newest block (${f.head.number}, at ${when(f.head.timestamp)}) is past the authorization's validBefore (${when(f.validBefore)}) and its nonce is unused there`,
    };
  return {
    kind: "unknown",
    why: `its authorization is valid until ${when(f.validBefore)} and our EVM RPC's newest block is at ${when(f.head.timestamp)}, so the transfer may still land`,
  };
}

/** For a payment found unable to land: it landed after all, keep watching, or done watching. */
export type WatchRuling = "landed" | "watch" | "done";

export function watchRuling(f: FateFacts): WatchRuling {
  if (f.head === undefined || f.used === undefined) return "watch";
  if (f.used) return f.logs === "landed" ? "landed" : f.logs === "canceled" ? "done" : "watch";
  return f.head.timestamp >= f.validBefore + WATCH_MARGIN_S ? "done" : "watch";
}
