/**
 * Pure decisions, no I/O: whether a priced intent may be paid under the human's limits,
 * and whether a payment challenge is exactly what was priced — the checks every rail makes
 * (checkChallengeWith) and Solana's own (solanaChecks; EVM's are rails/evm/rules.ts's).
 * Table-tested.
 */
import { formatDecimal, parseAtomic, parseDecimal } from "../../domain/money.js";
import type { PaymentRequirements } from "../../domain/wire.js";
import { actionAllowed } from "../config/action-names.js";
import type { Limits } from "../config/config.js";
import type { ErrorContexts } from "../errors.js";

export interface Usage {
  /** Reserved + spent in the rolling 24 h window, atomic units. */
  day: bigint;
  /** Reserved + spent ever (refunds credited back), atomic units. */
  total: bigint;
}

/** The codes the limits refuse with. */
type BudgetCode = "budget_exceeded" | "action_not_allowed" | "payee_not_allowed";

/**
 * A refusal: its code and that code's context. Its words are the error table's, from the
 * context (error-table.ts); intent/failures.ts makes the error.
 */
export type BudgetRefusal = { [C in BudgetCode]: { ok: false; code: C; context: ErrorContexts[C] } }[BudgetCode];

export type BudgetDecision = { ok: true; ceiling: bigint; needsApproval: boolean } | BudgetRefusal;

/**
 * The highest price this one call may pay: maxPerCall, lowered by every perAction key that
 * matches the action (an exact name or a pattern; the lowest wins, an exact name on a tie) —
 * or, for a fetch (`origin` given), by its origin's perOrigin cap — then by the agent's
 * budget. `by` names what set it: `maxPerCall`, `perAction[<key>]`, `perOrigin[<origin>]` or
 * `budget`.
 */
export function callCeiling(
  limits: Limits,
  action: string,
  agentBudget?: bigint,
  origin?: string,
): { ceiling: bigint; by: string } {
  let ceiling = limits.maxPerCall;
  let by = "maxPerCall";
  if (origin !== undefined) {
    const cap = limits.perOrigin?.[origin];
    if (cap !== undefined && cap < ceiling) {
      ceiling = cap;
      by = `perOrigin[${origin}]`;
    }
    return lowerToBudget(ceiling, by, agentBudget);
  }
  const exact = limits.perAction[action];
  if (exact !== undefined && exact < ceiling) {
    ceiling = exact;
    by = `perAction[${action}]`;
  }
  for (const [key, cap] of Object.entries(limits.perAction)) {
    if (key !== action && cap < ceiling && key.includes("*") && actionAllowed([key], action)) {
      ceiling = cap;
      by = `perAction[${key}]`;
    }
  }
  return lowerToBudget(ceiling, by, agentBudget);
}

function lowerToBudget(ceiling: bigint, by: string, agentBudget: bigint | undefined): { ceiling: bigint; by: string } {
  return agentBudget !== undefined && agentBudget < ceiling ? { ceiling: agentBudget, by: "budget" } : { ceiling, by };
}

/**
 * May `amount` be paid for `action` to `payee`, given what is already spent or reserved?
 * The agent's budget can only lower the per-call ceiling, never raise any limit.
 */
export function evaluateBudget(
  limits: Limits,
  usage: Usage,
  charge: { action: string; amount: bigint; payee?: string; agentBudget?: bigint; origin?: string },
): BudgetDecision {
  const usdc = formatDecimal;
  // A fetch is allowed by its origin (x402-http/origins.ts, checked before anything is sent), not by action name.
  if (charge.origin === undefined && !actionAllowed(limits.allowActions, charge.action)) {
    return {
      ok: false,
      code: "action_not_allowed",
      context: { action: charge.action, allowActions: limits.allowActions },
    };
  }
  if (
    charge.payee !== undefined &&
    limits.allowedPayees &&
    !limits.allowedPayees.some((p) => samePayee(p, charge.payee!))
  ) {
    return {
      ok: false,
      code: "payee_not_allowed",
      context: { payee: charge.payee },
    };
  }
  const { ceiling, by } = callCeiling(limits, charge.action, charge.agentBudget, charge.origin);
  if (charge.amount > ceiling) {
    return {
      ok: false,
      code: "budget_exceeded",
      context: { limit: by, amount: usdc(charge.amount), ceiling: usdc(ceiling) },
    };
  }
  if (usage.day + charge.amount > limits.maxPerDay) {
    return {
      ok: false,
      code: "budget_exceeded",
      context: {
        limit: "maxPerDay",
        amount: usdc(charge.amount),
        maxPerDay: usdc(limits.maxPerDay),
        spentLast24h: usdc(usage.day),
        remaining: usdc(limits.maxPerDay > usage.day ? limits.maxPerDay - usage.day : 0n),
      },
    };
  }
  if (limits.maxTotal !== undefined && usage.total + charge.amount > limits.maxTotal) {
    return {
      ok: false,
      code: "budget_exceeded",
      context: {
        limit: "maxTotal",
        amount: usdc(charge.amount),
        maxTotal: usdc(limits.maxTotal),
        spentTotal: usdc(usage.total),
        remaining: usdc(limits.maxTotal > usage.total ? limits.maxTotal - usage.total : 0n),
      },
    };
  }
  return { ok: true, ceiling, needsApproval: charge.amount > limits.approvalAbove };
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** One payee, however written: an EVM address whatever its letters' case, anything else exactly. */
export function samePayee(a: string, b: string): boolean {
  return a === b || (EVM_ADDRESS.test(a) && EVM_ADDRESS.test(b) && a.toLowerCase() === b.toLowerCase());
}

/** What the quote fixed, against which every challenge is checked. */
export interface PricedIntent {
  quoteId: string;
  /** Atomic units, from the quote's decimal amount. */
  amount: bigint;
  expiresAt: number;
  /** The payee the quote named (accepts[0].payTo), or the first challenge's when it named none. */
  payee?: string;
}

export interface Drift {
  field: string;
  expected: string;
  actual: string;
}

export type ChallengeCheck = { ok: true; requirements: PaymentRequirements } | { ok: false; drifts: Drift[] };

/** Who must never pay a payment's fee: the key that signs (our wallet) and, in delegate mode, the owner whose account pays. */
export interface OurKeys {
  wallet: string;
  owner?: string;
}

/**
 * The fee-payer rule, on every path (a quote's challenge, checkChallenge; a resource's 402,
 * x402-http/challenge.ts): the fee payer (`extra.feePayer`) is named and is neither our
 * wallet nor the owner. A transaction whose fee payer is our wallet is whole once we sign
 * it: the seller could send it to the chain itself, our wallet paying the fee, with no
 * facilitator's check in between. The owner's SOL is not this server's to spend either.
 * The drift, or undefined when the fee payer may be used.
 */
export function feePayerDrift(feePayer: unknown, ours: OurKeys): Drift | undefined {
  if (typeof feePayer !== "string" || feePayer.length === 0)
    return { field: "extra.feePayer", expected: "the service's fee payer", actual: "missing" };
  if (feePayer === ours.wallet)
    return { field: "extra.feePayer", expected: "an address other than our wallet", actual: feePayer };
  if (feePayer === ours.owner)
    return { field: "extra.feePayer", expected: "an address other than the wallet's owner", actual: feePayer };
  return undefined;
}

/**
 * What a rail checks of the entry on its network, beside the chain-neutral checks: its asset,
 * how its addresses compare (Solana's base58 exactly, EVM's hex whatever the case), and what
 * its scheme needs in `extra` (Solana: the memo and fee payer; EVM: the EIP-712 domain).
 */
export interface RailChecks {
  network: string;
  asset(r: PaymentRequirements): Drift[];
  samePayee(quoted: string, challenged: string): boolean;
  extra(r: PaymentRequirements): Drift[];
}

/**
 * Is this challenge exactly what was priced? The chain-neutral checks — the quote has not
 * expired, an entry `exact` on the rail's network, the quoted atomic amount, the quote's
 * payee, a positive timeout — with the rail's own (`RailChecks`) in their place among them.
 * Returns every drift, not just the first, so a human sees the whole picture.
 */
export function checkChallengeWith(
  priced: PricedIntent,
  accepts: readonly PaymentRequirements[],
  rail: RailChecks,
  now: number,
): ChallengeCheck {
  const candidates = accepts.filter((a) => a.scheme === "exact" && a.network === rail.network);
  const drifts: Drift[] = [];
  if (now >= priced.expiresAt) {
    drifts.push({
      field: "expiresAt",
      expected: `after ${new Date(now).toISOString()}`,
      actual: new Date(priced.expiresAt).toISOString(),
    });
  }
  const requirements = candidates[0];
  if (!requirements) {
    const first = accepts[0];
    drifts.push({
      field: "scheme/network",
      expected: `exact on ${rail.network}`,
      actual: first ? `${String(first.scheme)} on ${String(first.network)}` : "no payment option",
    });
    return { ok: false, drifts };
  }
  const amount = parseAtomic(requirements.amount);
  if (amount === undefined || amount !== priced.amount) {
    drifts.push({
      field: "amount",
      expected: `${priced.amount} (${formatDecimal(priced.amount)} USDC)`,
      actual:
        amount === undefined
          ? JSON.stringify(requirements.amount).slice(0, 64)
          : `${amount} (${formatDecimal(amount)} USDC)`,
    });
  }
  drifts.push(...rail.asset(requirements));
  if (priced.payee !== undefined && !rail.samePayee(priced.payee, requirements.payTo)) {
    drifts.push({ field: "payTo", expected: priced.payee, actual: String(requirements.payTo).slice(0, 64) });
  }
  drifts.push(...rail.extra(requirements));
  if (typeof requirements.maxTimeoutSeconds !== "number" || !(requirements.maxTimeoutSeconds > 0)) {
    drifts.push({
      field: "maxTimeoutSeconds",
      expected: "a positive number",
      actual: JSON.stringify(requirements.maxTimeoutSeconds ?? null),
    });
  }
  return drifts.length === 0 ? { ok: true, requirements } : { ok: false, drifts };
}

/** Solana's own checks: the cluster's USDC mint, memo = quote id, a fee payer the fee-payer rule allows. */
export function solanaChecks(priced: PricedIntent, expected: { network: string; mint: string } & OurKeys): RailChecks {
  return {
    network: expected.network,
    asset: (r) =>
      r.asset === expected.mint
        ? []
        : [{ field: "asset", expected: expected.mint, actual: String(r.asset).slice(0, 64) }],
    samePayee: (a, b) => a === b,
    extra(r) {
      const drifts: Drift[] = [];
      const extra = r.extra ?? {};
      if (extra.memo !== priced.quoteId) {
        drifts.push({
          field: "extra.memo",
          expected: priced.quoteId,
          actual: JSON.stringify(extra.memo ?? null).slice(0, 80),
        });
      }
      const feePayer = feePayerDrift(extra.feePayer, expected);
      if (feePayer) drifts.push(feePayer);
      return drifts;
    },
  };
}

/**
 * Is this challenge exactly what was priced, on Solana? Scheme `exact`, the configured
 * network and USDC mint, the quoted atomic amount, the quote's payee, memo = quote id, a fee
 * payer the fee-payer rule allows (feePayerDrift), and a quote that has not expired. Every drift.
 */
export function checkChallenge(
  priced: PricedIntent,
  accepts: readonly PaymentRequirements[],
  expected: { network: string; mint: string } & OurKeys,
  now: number,
): ChallengeCheck {
  return checkChallengeWith(priced, accepts, solanaChecks(priced, expected), now);
}

/** Parses a quote's decimal amount; undefined unless a plain non-negative decimal within u64. */
export function quoteAmount(text: unknown): bigint | undefined {
  return typeof text === "string" ? parseDecimal(text) : undefined;
}

export function describeDrifts(drifts: readonly Drift[]): string {
  return drifts.map((d) => `${d.field}: expected ${d.expected}, got ${d.actual}`).join("; ");
}
