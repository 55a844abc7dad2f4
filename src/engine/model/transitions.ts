/**
 * The rules of an intent's state machine, as pure functions: what each outcome does to an
 * intent's state and its budget reservation, when an intent may start a fresh attempt,
 * what a refund credits back, when a human is needed. No I/O; table-tested.
 *
 * The one rule everything else follows: once a proof has left the process, the money is
 * possibly spent. Its reservation stays held and no second proof is signed until the
 * chain (our own RPC, never the service) shows that the transfer landed — then it is
 * spent — or that it can never land.
 */
import type { ExecutionStatus } from "../../domain/wire.js";
import { STATES, type IntentState } from "./states.js";
import type { BudgetState, PaymentFate } from "./types.js";

/** What happened at a step. */
export type Outcome =
  /** The service's quote was recorded. */
  | "quote_recorded"
  /** A person must approve first: a pending approval was recorded. */
  | "approval_pending"
  /** A person's approval was used for this quote. */
  | "approval_used"
  /** Within the limits: the amount was reserved (with the challenge, checked). */
  | "reserve"
  /** The proof was signed and journaled: from now on it may leave the process. */
  | "sign"
  /** A fresh attempt after a stop with nothing spent (a new quote, a new key). */
  | "restart"
  /** A payment the chain had shown could never land landed after all (chain/released-watch.ts). */
  | "landed_late"
  /** A definite refusal before anything was signed: limits, drift, declined approval, bad input. */
  | "refused"
  /** Retryable trouble: the service away, a timeout, a settlement still running, another driver. */
  | "transient"
  /** The caller cancelled the call. */
  | "cancelled"
  /** The service refused, or could not settle, a proof that has left the process. */
  | "proof_refused"
  /** The service says the payment settled, as priced. */
  | "settled"
  /** The service settled something other than what was priced, or the chain disagrees with its claim. */
  | "settlement_mismatch"
  /** The chain shows the transfer landed. */
  | "landed"
  /** The chain shows the transfer can never land: its blockhash expired and no transfer carries its memo. */
  | "never_landed"
  /** The chain cannot tell yet (the blockhash is still valid, or our RPC did not answer). */
  | "fate_unknown"
  /** After settlement: the service asked to be paid again, or refused the execution. */
  | "refused_after_payment"
  /**
   * After a payment our RPC shows landed: the service has still not answered the execution
   * request, longer than the reconciler's bound (its `unansweredAttentionMs`). Still followed.
   */
  | "unanswered"
  /** The execution was created. */
  | "executed";

/** What happens to the intent's budget reservation. */
export type ReservationEffect =
  | "none" // nothing was reserved, nothing changes
  | "reserve" // the amount is reserved: it counts against the caps from now on
  | "hold" // stays as it is (reserved or spent): still counts against the caps
  | "release" // nothing was spent: the reservation is given back
  | "spend"; // the money left the wallet

export interface Transition {
  state: IntentState;
  reservation: ReservationEffect;
  /** The intent still needs driving: the reconciler resumes it later. */
  follow: boolean;
  /** A human should look (the intent is marked for attention). */
  human: boolean;
}

const t = (state: IntentState, reservation: ReservationEffect, follow = false, human = false): Transition => ({
  state,
  reservation,
  follow,
  human,
});

/** Every state has a row, even a resting one (the compiler checks): its outcomes, and where each leads. */
type Table = Record<IntentState, Partial<Record<Outcome, Transition>>>;

const BEFORE_RESERVATION = {
  refused: t("refused", "none"),
  // Nothing was reserved or signed: this attempt ends; a retry with the same key starts afresh.
  transient: t("failed", "none"),
  cancelled: t("refused", "none"),
} satisfies Partial<Record<Outcome, Transition>>;

const PRICED = {
  ...BEFORE_RESERVATION,
  // Above the approval threshold: wait for a person (again, when an earlier approval expired).
  approval_pending: t("awaiting_approval", "none"),
  approval_used: t("quoted", "none"),
  reserve: t("reserved", "reserve"),
} satisfies Partial<Record<Outcome, Transition>>;

/** After a stop with nothing spent, a call may start afresh; a late landing makes it spent and a human's. */
const STOPPED_WITH_NOTHING_SPENT = {
  restart: t("new", "none"),
  landed_late: t("attention", "spend", false, true),
} satisfies Partial<Record<Outcome, Transition>>;

const TABLE: Table = {
  new: { ...BEFORE_RESERVATION, quote_recorded: t("quoted", "none") },
  quoted: PRICED,
  awaiting_approval: PRICED,
  reserved: {
    refused: t("failed", "release"),
    transient: t("failed", "release"),
    cancelled: t("failed", "release"),
    sign: t("signed", "hold"),
  },
  signed: {
    // The proof may be on its way: keep everything held and find out later.
    transient: t("signed", "hold", true),
    cancelled: t("signed", "hold", true),
    proof_refused: t("unsettled", "hold", true),
    settled: t("paid", "spend"),
    settlement_mismatch: t("attention", "spend", false, true),
    // A service without /payments/confirm settles with the execution request...
    executed: t("executed", "spend"),
    // ...and may answer it with an execution that is not ours: the money may have moved.
    refused_after_payment: t("attention", "hold", false, true),
    // No answer to the execution request, so a resume asks the chain: landed, it is spent and
    // the execution is asked for again; it can never land, nothing was spent.
    landed: t("paid", "spend"),
    never_landed: t("failed", "release"),
  },
  unsettled: {
    transient: t("unsettled", "hold", true),
    cancelled: t("unsettled", "hold", true),
    fate_unknown: t("unsettled", "hold", true),
    // The service refused a proof that landed: it is spent, the purchase goes on, a human is told.
    landed: t("paid", "spend", false, true),
    never_landed: t("failed", "release"),
    settlement_mismatch: t("attention", "spend", false, true),
  },
  paid: {
    transient: t("paid", "hold", true),
    cancelled: t("paid", "hold", true),
    proof_refused: t("attention", "hold", false, true),
    refused_after_payment: t("attention", "hold", false, true),
    settlement_mismatch: t("attention", "hold", false, true),
    // Paid, and the service still silent past the bound: a person is told, and it is asked again.
    unanswered: t("paid", "hold", true, true),
    executed: t("executed", "hold"),
  },
  // Resting states: nothing drives them, but the chain may still speak.
  executed: { landed_late: t("executed", "spend", false, true) },
  refused: STOPPED_WITH_NOTHING_SPENT,
  failed: STOPPED_WITH_NOTHING_SPENT,
  attention: { landed_late: t("attention", "spend", false, true) },
};

/** The next state and reservation effect for an outcome at a state; throws on an impossible pair. */
export function transition(state: IntentState, outcome: Outcome): Transition {
  const next = TABLE[state]?.[outcome];
  if (!next) throw new Error(`no transition from ${state} on ${outcome}`);
  return next;
}

/** Where outcomes taken in turn lead in one commit (the fast path's three), and what they do on the way. */
export interface Passage {
  /** The last of them. */
  outcome: Outcome;
  /** The state the last one leads to. */
  state: IntentState;
  /** The budget state after each one's reservation effect, in turn. */
  budget: BudgetState;
  /** One of them reserves: the commit takes the reservation. */
  reserves: boolean;
  /** The last one leaves the intent to be driven on later (the reconciler resumes it). */
  follow: boolean;
  /**
   * The last one leaves the intent where it was, to be driven on later: the call stops here
   * (a call that moved it on — a refused proof now for the chain to judge — goes on at once).
   */
  pause: boolean;
  /** One of them needs a human. */
  human: boolean;
}

/** The passage from `state` with budget `budget` by `outcomes`, in turn; throws on an impossible pair. */
export function passage(state: IntentState, budget: BudgetState, outcomes: readonly [Outcome, ...Outcome[]]): Passage {
  let at: Passage = { outcome: outcomes[0], state, budget, reserves: false, follow: false, pause: false, human: false };
  for (const outcome of outcomes) {
    const tr = transition(at.state, outcome);
    at = {
      outcome,
      state: tr.state,
      budget: budgetAfter(at.budget, tr.reservation),
      reserves: at.reserves || tr.reservation === "reserve",
      follow: tr.follow,
      pause: tr.follow && tr.state === at.state,
      human: at.human || tr.human,
    };
  }
  return at;
}

/** The budget state after a reservation effect. */
export function budgetAfter(current: BudgetState, effect: ReservationEffect): BudgetState {
  switch (effect) {
    case "none":
    case "hold":
      return current;
    case "reserve":
      return "reserved";
    case "release":
      return current === "reserved" ? "released" : current;
    case "spend":
      return current === "reserved" || current === "spent" ? "spent" : current;
  }
}

/** Whether a proof may still move money: it left (or may have left) and its fate is not settled as never. */
export function proofAtRisk(proof: string | null, fate: PaymentFate | undefined): boolean {
  return proof !== null && fate !== "never";
}

/**
 * May a new call on this intent start a fresh attempt (a new quote, and later a new proof)?
 * Only after a definite stop with nothing spent: nothing was ever signed, or the signed
 * proof can never land.
 */
export function restartable(state: IntentState, proof: string | null, fate: PaymentFate | undefined): boolean {
  return STATES[state].restartable && !proofAtRisk(proof, fate);
}

export { resting } from "./states.js";

/** How many fresh attempts one call may make after proofs that could never land. */
export const MAX_AUTOMATIC_ATTEMPTS = 2;

// ---- Refunds ------------------------------------------------------------------------

export interface RefundEvidence {
  /** What was paid for the intent (atomic units). */
  paid: bigint;
  /** Already credited for this intent (atomic units). */
  credited: bigint;
  /** The service's execution status. */
  status: ExecutionStatus;
  /** The service's refund claim, if any. */
  claim?: { amount?: bigint; transaction?: string };
  /**
   * What our RPC showed: the refund transaction's transfers into the wallet from the payee
   * (atomic units), or `missing` when it is not on chain (yet), or `elsewhere` when that
   * transaction already credited another intent.
   */
  landed?: bigint | "missing" | "elsewhere" | "not_from_payee";
}

export interface RefundVerdict {
  /** The credit to record now (total for the intent, never more than paid). */
  credit: bigint;
  /** Done with this refund: verified or given to a human; false = look again later. */
  settled: boolean;
  /** Why a human should look, if one should. */
  attention?: string;
}

/**
 * What a refund credits back to the caps: only what our RPC saw land in the wallet from the
 * payee, never more than was paid, never on a status alone.
 */
export function refundVerdict(e: RefundEvidence, formatUsdc: (atomic: bigint) => string): RefundVerdict {
  const claimText = e.claim?.amount !== undefined ? `${formatUsdc(e.claim.amount)} USDC` : "a refund";
  if (!e.claim?.transaction) {
    if (e.status !== "refunded") return { credit: e.credited, settled: false };
    return {
      credit: e.credited,
      settled: true,
      attention: `the service says the payment was refunded, but names no refund transaction: nothing is credited back until one is seen on chain`,
    };
  }
  if (e.landed === undefined || e.landed === "missing") {
    return { credit: e.credited, settled: false };
  }
  if (e.landed === "elsewhere") {
    return {
      credit: e.credited,
      settled: true,
      attention: `the service's refund transaction ${e.claim.transaction} already credited another purchase: nothing more is credited`,
    };
  }
  if (e.landed === "not_from_payee") {
    return {
      credit: e.credited,
      settled: true,
      attention: `the service's refund transaction ${e.claim.transaction} moved no USDC from the payee into the wallet: nothing is credited`,
    };
  }
  const credit = e.landed < e.paid ? e.landed : e.paid;
  const notes: string[] = [];
  if (e.landed > e.paid)
    notes.push(
      `the refund transaction moved ${formatUsdc(e.landed)} USDC back, more than the ${formatUsdc(e.paid)} USDC paid; only what was paid is credited`,
    );
  if (e.claim.amount !== undefined && e.claim.amount !== e.landed) {
    notes.push(
      `the service reports ${claimText} refunded; the chain shows ${formatUsdc(e.landed)} USDC, which is what counts`,
    );
  }
  if (e.status === "refunded" && e.landed < e.paid)
    notes.push(`only ${formatUsdc(e.landed)} of the ${formatUsdc(e.paid)} USDC paid came back`);
  return { credit, settled: true, ...(notes.length > 0 ? { attention: notes.join("; ") } : {}) };
}

/** A refund claim not verifiable on chain for this long is handed to a human. */
export const REFUND_PATIENCE_MS = 3_600_000;
