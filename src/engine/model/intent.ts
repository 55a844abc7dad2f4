/**
 * An intent's data, typed by what its state has proven. The journal holds one flat record
 * (IntentRecord); each state has reached some phases — priced, reserved, signed, delivered —
 * and each phase proves some fields (never null from then on) and opens others (present,
 * maybe null). IntentIn<S, K> is what a step written for state S may read of an intent of
 * kind K: the head, its kind's own fields, and the fields of the phases S has reached —
 * nothing else, so reading a proof before it is signed does not compile. Intent, the union
 * over states, is what the journal hands out: the flat record, narrowed once (narrow.ts)
 * so that each state's proven fields are non-null.
 *
 * The tables here (PHASE_FIELDS by kind and phase, PHASES by state) are read by the types
 * and by the runtime check alike, so the two cannot drift; a state added to INTENT_STATES
 * does not compile until PHASES says which phases it has reached.
 */
import type { Execution, ExecutionStatus, PaymentRequirements, Quote, Refund } from "../../domain/wire.js";
import type { StoredError } from "../errors.js";
import type { IntentState } from "./states.js";

export type BudgetState = "none" | "reserved" | "spent" | "released";

/**
 * What is known about the settlement on chain: `claimed` = the service says so and our RPC
 * has not confirmed it yet; `verified` = our RPC shows the transfer, exactly as priced;
 * `mismatch` = the chain disagrees with the claim (a human looks).
 */
export type SettlementCheck = "none" | "claimed" | "verified" | "mismatch";

/** Refund credit: only what our RPC shows landing in the wallet counts. */
export type RefundState = "none" | "pending" | "verified" | "unverified";

/** What an intent buys: a catalog action of the v1 service, or an x402 resource (`paid_fetch`). */
export type IntentKind = "action" | "fetch";

/** A fetch's request as the agent gave it: a secret (its URL and headers may carry credentials), in its own column. */
export interface StoredRequest {
  url: string;
  origin: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers: Record<string, string>;
  body: string | null;
}

/** What a resource's 402 offered (x402 v2 `PAYMENT-REQUIRED`), kept for signing and for the record. */
export interface StoredOffer {
  resource?: { url: string; description?: string; mimeType?: string };
  /** The extensions the proof carries: the `payment-identifier`, when the resource declared that extension. */
  extensions?: Record<string, unknown>;
  /** That payment identifier (one per attempt, the same on every resend). */
  paymentId?: string;
}

/** The answer a fetch got (the body itself is kept apart, by intent). */
export interface StoredResponse {
  status: number;
  /** The allow-listed headers (x402-http/response.ts). */
  headers: Record<string, string>;
  contentType: string | null;
  /** The body's size in bytes. */
  size: number;
  /** A cross-origin redirect that was not followed. */
  redirectRefused?: string;
  /** Whether the answer came with the payment (false: the unpaid answer, or one after a refused proof). */
  paid: boolean;
}

/**
 * One intent as the journal holds it: one flat row, amounts in atomic units, null where the
 * intent has nothing. Readers that look across states (views, audits, the console) read
 * this; the engine's flow reads Intent and IntentIn, narrowed by state.
 */
export interface IntentRecord {
  intentId: string;
  kind: IntentKind;
  /** A fetch: the resource's origin (`https://host[:port]`); null for an action. */
  origin: string | null;
  /** A fetch: the request, a secret: lives in its own column and nowhere else. */
  request: StoredRequest | null;
  /**
   * What the challenge offered besides the requirement (`requirements`): a fetch's 402 (its
   * resource, extensions, payment identifier); an action's, the service's paid resource as its
   * challenge named it (what the service's signed offer and receipt are checked against).
   */
  offer: StoredOffer | null;
  /** A fetch: the answer it got, once it got one. */
  response: StoredResponse | null;
  /** The caller's key for this intent (or a generated one). */
  intentKey: string;
  /** Fresh attempts after a definite stop with nothing spent. */
  attempt: number;
  /** The Idempotency-Key sent on every request of the current attempt. */
  idemKey: string;
  service: string;
  action: string;
  input: Record<string, unknown>;
  fingerprint: string;
  agentBudget: bigint | null;
  state: IntentState;
  quoteId: string | null;
  quote: Quote | null;
  amount: bigint | null;
  payee: string | null;
  quoteExpiresAt: number | null;
  quotedAt: number | null;
  requirements: PaymentRequirements | null;
  /** A secret: lives in its own column and nowhere else. */
  proof: string | null;
  /** The service's confirm answer, as given. */
  payment: Record<string, unknown> | null;
  /** The settlement's transaction: seen on chain when `settlement` is verified, else claimed. */
  paymentTx: string | null;
  settlement: SettlementCheck;
  executionId: string | null;
  execution: Execution | null;
  execStatus: ExecutionStatus | null;
  output: unknown;
  /** The service's refund claim, as given. */
  refund: Refund | null;
  refundState: RefundState;
  /** Credited back to the caps: what our RPC saw land, never more than was paid. */
  refundCredit: bigint;
  refundTx: string | null;
  /** When the refund claim was first seen (a claim unverifiable for long goes to a human). */
  refundSeenAt: number | null;
  budgetState: BudgetState;
  budgetAmount: bigint | null;
  budgetAt: number | null;
  approvalId: string | null;
  error: StoredError | null;
  attention: string | null;
  callId: string | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  nextPollAt: number | null;
  pollIntervalMs: number | null;
  createdAt: number;
  updatedAt: number;
}

export type IntentPatch = Partial<Omit<IntentRecord, "intentId" | "createdAt" | "updatedAt">>;

// ---- Phases ------------------------------------------------------------------------

/** The phases an intent goes through, in order; each one's fields include the ones before. */
export const PHASE_ORDER = ["none", "priced", "reserved", "signed", "delivered"] as const;
export type Phase = (typeof PHASE_ORDER)[number];

type Field = keyof IntentRecord;
interface PhaseRow {
  /** Fields the phase proves: never null from then on. */
  proves: readonly Field[];
  /** Fields the phase opens: present from then on, maybe null. */
  opens: readonly Field[];
}

/**
 * What each phase adds, by kind. An action is priced by the service's quote and delivered
 * as an execution; a fetch carries its origin and request from the start, is priced by its
 * 402 (whose requirement is its challenge) and delivered as the resource's answer.
 */
export const PHASE_FIELDS = {
  action: {
    none: { proves: [], opens: [] },
    priced: { proves: ["quoteId", "quote", "amount", "quoteExpiresAt", "quotedAt"], opens: ["payee", "approvalId"] },
    // The resource the challenge named: null on an intent reserved before this was kept.
    reserved: { proves: ["requirements", "payee", "budgetAmount", "budgetAt"], opens: ["offer"] },
    // Once a proof may have left, what the service or the chain says of its settlement.
    signed: { proves: ["proof"], opens: ["payment", "paymentTx"] },
    delivered: {
      proves: ["executionId", "execution", "execStatus"],
      opens: ["output", "refund", "refundTx", "refundSeenAt"],
    },
  },
  fetch: {
    none: { proves: ["origin", "request"], opens: ["response"] },
    priced: {
      proves: ["quoteId", "offer", "requirements", "amount", "payee", "quoteExpiresAt", "quotedAt"],
      opens: ["approvalId"],
    },
    reserved: { proves: ["budgetAmount", "budgetAt"], opens: [] },
    signed: { proves: ["proof"], opens: ["paymentTx"] },
    delivered: { proves: ["response", "execStatus"], opens: [] },
  },
} as const satisfies Record<IntentKind, Record<Phase, PhaseRow>>;

/**
 * The phases each state has reached. A state reached from several (a stop, a human's case)
 * lists each: its intent has reached one of them, and a reader must look which.
 */
export const PHASES = {
  new: ["none"],
  quoted: ["priced"],
  awaiting_approval: ["priced"],
  reserved: ["reserved"],
  signed: ["signed"],
  unsettled: ["signed"],
  paid: ["signed"],
  executed: ["delivered"],
  // Refused before anything was reserved: before or after the price.
  refused: ["none", "priced"],
  // Failed with nothing spent: before the price, before the reservation, before signing, or a proof that can never land.
  failed: ["none", "priced", "reserved", "signed"],
  // For a human: a proof that left and then something went wrong, or a late landing on a stop.
  attention: ["none", "priced", "reserved", "signed"],
} as const satisfies Record<IntentState, readonly [Phase, ...Phase[]]>;

type Rows = typeof PHASE_FIELDS;
/** Every field some phase of some kind proves or opens: not the head's. */
type PhaseField = {
  [K in IntentKind]: { [P in Phase]: Rows[K][P]["proves"][number] | Rows[K][P]["opens"][number] }[Phase];
}[IntentKind];

/** What every intent has, whatever its state and kind. */
export type IntentHead<S extends IntentState = IntentState> = Omit<IntentRecord, PhaseField | "state" | "kind"> & {
  state: S;
};

type Own<K extends IntentKind, P extends Phase> = {
  [F in Rows[K][P]["proves"][number]]: NonNullable<IntentRecord[F]>;
} & { [F in Rows[K][P]["opens"][number]]: IntentRecord[F] };

/** The fields an intent of kind K has once it reached phase P (each phase's, up to P). */
type Through<K extends IntentKind> = {
  none: Own<K, "none">;
  priced: Own<K, "none"> & Own<K, "priced">;
  reserved: Own<K, "none"> & Own<K, "priced"> & Own<K, "reserved">;
  signed: Own<K, "none"> & Own<K, "priced"> & Own<K, "reserved"> & Own<K, "signed">;
  delivered: Own<K, "none"> & Own<K, "priced"> & Own<K, "reserved"> & Own<K, "signed"> & Own<K, "delivered">;
};

/** The phases state S has reached. */
export type PhasesOf<S extends IntentState> = (typeof PHASES)[S][number];

/**
 * What a step for state S may read of an intent of kind K: the head, and the fields of the
 * phases S has reached — non-null where the phase proves them. A field of a phase S has not
 * reached, or of the other kind, is not there. A union when S (or K) is.
 */
export type IntentIn<S extends IntentState = IntentState, K extends IntentKind = IntentKind> = S extends IntentState
  ? K extends IntentKind
    ? IntentHead<S> & { kind: K } & Through<K>[PhasesOf<S>]
    : never
  : never;

/** An intent as the journal hands it out: the whole record, its state's proven fields non-null. */
export type Intent = { [S in IntentState]: IntentRecord & IntentIn<S> }[IntentState];

/** An intent in one of the states `S`. */
export type IntentAt<S extends IntentState> = Extract<Intent, { state: S }>;

/** The fields (by kind) phase `p` proves, with those of every phase before it. */
export function provenThrough(kind: IntentKind, p: Phase): Field[] {
  const upTo = PHASE_ORDER.slice(0, PHASE_ORDER.indexOf(p) + 1);
  return upTo.flatMap((phase) => [...PHASE_FIELDS[kind][phase].proves]);
}

// ---- A fresh intent ----------------------------------------------------------------

/** The fields an intent is first recorded with, and keeps across attempts: who asked for what. */
type Identity =
  | "intentId"
  | "intentKey"
  | "service"
  | "action"
  | "input"
  | "fingerprint"
  | "agentBudget"
  | "callId"
  | "createdAt"
  | "updatedAt";

/**
 * A fresh intent as it is written: its identity, its attempt, its kind's own request. Every
 * other column is written as the journal writes a field an intent does not have (null, or
 * the column's default: journal/rows.ts), so nothing of an earlier attempt survives — but
 * its lease, which is the lease's to keep (claim, renew, release), never a commit's.
 */
export type FreshIntent = Pick<IntentRecord, Identity | "attempt" | "idemKey"> & { state: "new" } & (
    { kind: "action" } | { kind: "fetch"; origin: string; request: StoredRequest }
  );

/** A fresh attempt at an intent (after a stop with nothing spent): its head, the next attempt's key. */
export function freshAttempt(i: IntentIn): FreshIntent {
  const attempt = i.attempt + 1;
  const head = {
    intentId: i.intentId,
    intentKey: i.intentKey,
    service: i.service,
    action: i.action,
    input: i.input,
    fingerprint: i.fingerprint,
    agentBudget: i.agentBudget,
    callId: i.callId,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    attempt,
    idemKey: `${i.intentKey}.a${attempt}`,
    state: "new" as const,
  };
  return i.kind === "fetch"
    ? { ...head, kind: "fetch", origin: i.origin, request: i.request }
    : { ...head, kind: "action" };
}
