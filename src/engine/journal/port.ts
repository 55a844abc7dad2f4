/**
 * The journal's port: what the engine asks of a store, whichever it is. SQLite (the
 * embedded default, sqlite.ts) answers synchronously; PostgreSQL (postgres.ts, for a fleet
 * of servers sharing one budget) answers with promises. The engine awaits every answer, so
 * it cannot tell them apart — and every guarantee is the store's: a reservation is checked
 * and taken in one transaction that no other server can interleave with, a state change is
 * a compare-and-set, an approval is decided once.
 */
import type { Usage } from "../budget/policy.js";
import type {
  Approval,
  ApprovalStatus,
  Intent,
  IntentPatch,
  IntentState,
  PaymentRecord,
  StoredRequest,
} from "../model/types.js";

/** A day in ms: the rolling window the daily limit counts over, and the length of a UTC day the breakdown groups by. */
export const DAY_MS = 24 * 3_600_000;

/** A store answers now (SQLite) or later (PostgreSQL); the engine awaits either. */
export type Awaitable<T> = T | Promise<T>;

export { IntentKeyTaken, LeaseLost, PaymentsFrozen, QuoteTaken, SchemaTooNew } from "./refusals.js";

export interface JournalOptions {
  /** Called with every proof read from the journal, before the row is returned. */
  onSecret?: (secret: string) => void;
}

/** Expected values a state change must still find (compare-and-set). */
export interface Expect {
  state?: IntentState;
  owner?: string;
}

/** What a new intent is recorded with: its identity and content, leased to the call that records it. */
export type NewIntent = Pick<
  Intent,
  | "intentId"
  | "intentKey"
  | "idemKey"
  | "service"
  | "action"
  | "input"
  | "fingerprint"
  | "agentBudget"
  | "callId"
  | "createdAt"
> & {
  leaseOwner: string;
  leaseUntil: number;
  /** A fetch (absent: an action): its origin and its request, a secret. */
  fetch?: { origin: string; request: StoredRequest };
};

/** A compare-and-set on one intent, as part of a larger write. */
export interface IntentWrite {
  intentId: string;
  patch: IntentPatch;
  now: number;
  expect: Expect;
}

/** An intent a reconciler's pass should poll now: which one, its schedule as read, and whether a settlement awaits our check. */
export type DuePoll = Pick<Intent, "intentId" | "pollIntervalMs"> & { nextPollAt: number; settlementClaimed: boolean };
/** A schedule-only write (nothing else of the intent changed): taken only while its next poll is still `seenNextPollAt`. */
export type PollMove = Pick<DuePoll, "intentId" | "nextPollAt"> & { pollIntervalMs: number; seenNextPollAt: number };

export interface JournalHealth {
  store: "sqlite" | "postgres";
  /** Where it is, for a human: a file path, or a URL without its password. */
  location: string;
  /** "ok", or what the store's own check found. */
  integrity: string;
  schemaVersion: number;
  total: number;
  unfinished: number;
  attention: number;
  following: number;
}

/** One tool call's transcript, as the journal indexes it: the file itself stays in `home` on `host`. */
export interface TranscriptRecord {
  callId: string;
  createdAt: number;
  host: string;
  home: string;
}

/**
 * One action's share of the budget, counted as `usage` counts it (reserved or spent, minus
 * refunds credited), in atomic units: the actions' shares add up to usage and reserved.
 */
export interface ActionSpend {
  /** An action's share, or (`fetch`) an origin's: `action` then names the origin. */
  kind: "action" | "fetch";
  action: string;
  /** Held in the rolling 24 h window (by the reservation's time), minus refunds credited. */
  day: bigint;
  /** Of which still reserved (not yet known to be spent). */
  reservedDay: bigint;
  /** Held ever, minus refunds credited. */
  total: bigint;
  /** Refunds credited back (seen on chain), in total. */
  refunded: bigint;
  /** Purchases that hold budget (reserved or spent). */
  count: number;
}

/**
 * One network's share of the budget, counted as `usage` counts it: the caps are in USDC
 * whatever the rail, so the networks' shares add up to usage, as the actions' do.
 */
export interface NetworkSpend {
  /** The CAIP-2 network paid on (null: journaled before payments recorded theirs, the Solana network configured then). */
  network: string | null;
  /** Held in the rolling 24 h window (by the reservation's time), minus refunds credited. */
  day: bigint;
  /** Of which still reserved. */
  reservedDay: bigint;
  /** Held ever, minus refunds credited. */
  total: bigint;
  refunded: bigint;
  count: number;
}

/** What was held on one UTC day (by the reservation's time), minus refunds credited. */
export interface DaySpend {
  /** Days since 1970-01-01 (UTC). */
  day: number;
  held: bigint;
}

/** A person's stop on every payment of every server sharing the journal, until a person lifts it. */
export interface Freeze {
  /** Why, in the words of whoever froze (absent when none was given). */
  reason: string | null;
  /** When (ms since the epoch). */
  since: number;
  /** Who: "terminal" (a person at one), or the host/pid of the process that froze. */
  by: string;
}

/**
 * That an approval PIN was set in a home (`set-pin`, at a terminal) and not cleared since. The
 * PIN's hash stays in the home's file; the journal only remembers that there is one, so that a
 * decision taken where no PIN file is found is refused rather than let through (fail closed).
 */
export interface PinRecord {
  /** The host and the home dir the PIN was set in. */
  host: string;
  home: string;
  /** When (ms since the epoch). */
  setAt: number;
}

/**
 * A passkey a person registered (`passkey add`, at a terminal): the WebAuthn credential, its
 * COSE public key (base64url), the signature counter last seen, and — when the owner bound it
 * — the owner's address and signature of the registration statement (evidence/owner.ts).
 */
export interface PasskeyRecord {
  credentialId: string;
  publicKey: string;
  /** COSE algorithm: -7 ES256, -8 EdDSA, -257 RS256. */
  algorithm: number;
  rpId: string;
  signCount: number;
  label: string | null;
  owner: string | null;
  ownerSignature: string | null;
  createdAt: number;
  /** When it was removed (its row stays, so what it signed stays checkable); null while registered. */
  removedAt: number | null;
}

/** What approving with a passkey came to: done, the approval no longer pending, or the counter moved on meanwhile. */
export type AssertedApproval = "approved" | "changed" | "counter";

/**
 * The seller's signed word on one purchase (x402's `offer-receipt` extension): its signed
 * offer and its signed receipt, each as received with our check of it (JSON,
 * evidence/seller.ts), null until it was given.
 */
export interface SellerWordRecord {
  offer: string | null;
  receipt: string | null;
  updatedAt: number;
}

/** Which part of the seller's word: the offer its 402 carried, or the receipt its paid answer carried. */
export type SellerWordPart = "offer" | "receipt";

export interface CatalogRecord {
  name: string;
  detail: unknown;
  fetchedAt: number;
}

export interface JournalStore {
  readonly kind: "sqlite" | "postgres";
  /** Where it is, for a human: a file path, or a URL without its password. */
  readonly location: string;
  close(): Awaitable<void>;

  // ---- Intents ----
  /** Records a new intent; throws IntentKeyTaken when its key is already recorded. */
  insertIntent(n: NewIntent): Awaitable<void>;
  intent(intentId: string): Awaitable<Intent | undefined>;
  intentByKey(intentKey: string): Awaitable<Intent | undefined>;
  intentByExecution(executionId: string): Awaitable<Intent | undefined>;
  /**
   * Commits fields of one intent. With `expect`, only if the intent is still in that state
   * and/or held by that owner: returns false when it is not (someone else moved it). A
   * patch of its payment record (by quote id) lands in the same transaction, or neither.
   */
  update(
    intentId: string,
    patch: IntentPatch,
    now: number,
    expect?: Expect,
    payment?: { quoteId: string; patch: Partial<PaymentRecord> },
  ): Awaitable<boolean>;
  /** Claims an intent for `owner` unless another live owner holds an unexpired lease. */
  claim(intentId: string, owner: string, now: number, ttlMs: number): Awaitable<boolean>;
  /** Extends a lease this owner still holds; false when it was lost. */
  renew(intentId: string, owner: string, now: number, ttlMs: number): Awaitable<boolean>;
  release(intentId: string, owner: string): Awaitable<void>;
  unfinished(service: string): Awaitable<Intent[]>;
  /** Intents the reconciler should look at now (a due poll), soonest first: their ids and schedules. */
  duePolls(now: number, limit: number): Awaitable<DuePoll[]>;
  /** A reconciler pass's schedule-only writes in one transaction; those another writer moved or stopped since are left. */
  reschedule(moves: readonly PollMove[], now: number): Awaitable<number>;
  nextPollAt(): Awaitable<number | undefined>;
  /** Another intent that already counts this refund transaction, if any. */
  refundTxOwner(tx: string): Awaitable<string | undefined>;

  // ---- Read model ----
  /** Intents with an execution, newest first, after a (createdAt, intentId) cursor. */
  executions(o: {
    before: number;
    beforeId: string;
    status?: string;
    action?: string;
    limit: number;
  }): Awaitable<Intent[]>;
  /**
   * Fetch purchases (intents of kind `fetch`), newest first, after a (createdAt, intentId)
   * cursor; with `origin`, that origin's only.
   */
  purchases(o: { before: number; beforeId: string; limit: number; origin?: string }): Awaitable<Intent[]>;
  /** Intents a human should look at, newest first. */
  needingAttention(limit: number): Awaitable<Intent[]>;
  /** Every intent created at or after `since` (ms), oldest first: for audits. */
  intentsSince(since: number): Awaitable<Intent[]>;
  health(): Awaitable<JournalHealth>;

  // ---- Budget ----
  /** Held (reserved or spent) in the rolling 24 h window, minus refunds seen on chain, and (when asked) in total. */
  usage(now: number, withTotal?: boolean): Awaitable<Usage>;
  /** Reserved (not yet known to be spent), in all or within the 24 h window. */
  reserved(now?: number): Awaitable<bigint>;
  /** Refunds credited back (seen on chain), in total. */
  refundedTotal(): Awaitable<bigint>;
  /** Each action's share of usage, reserved and refunds credited (`now` sets the 24 h window), by action name. */
  spendingByAction(now: number): Awaitable<ActionSpend[]>;
  /** What was held per UTC day for reservations made at or after `since` (ms), oldest day first. */
  spendingByDay(since: number): Awaitable<DaySpend[]>;
  /** Each network's share of usage, reserved and refunds credited (`now` sets the 24 h window), by network. */
  spendingByNetwork(now: number): Awaitable<NetworkSpend[]>;
  /**
   * Reserves `amount` for an intent if `decide(usage)` allows it, in one transaction that no
   * other writer — in this process, another one, or on another machine — can interleave
   * with. Throws LeaseLost when the intent is no longer as `expect` says. With `signed`, the
   * proof signed for this reservation is recorded in the same transaction, as recordSigned
   * records one (PaymentsFrozen while payments are frozen; nothing written when refused).
   */
  reserve<T extends { ok: boolean }>(
    intentId: string,
    amount: bigint,
    now: number,
    decide: (usage: Usage) => T,
    patch: IntentPatch,
    withTotal: boolean,
    expect: Expect,
    signed?: PaymentRecord,
  ): Awaitable<T>;

  // ---- Payments (every signed proof, by its memo) ----
  /**
   * Records a signed proof's payment row and commits its intent (compare-and-set) in one
   * transaction: false, and nothing written, when the intent moved. A second proof for the
   * same quote is refused (it would hide the first): QuoteTaken. While payments are frozen it throws
   * PaymentsFrozen and writes nothing: checked in the same transaction, so once freeze()
   * has returned no server records (and so sends) a new proof.
   */
  recordSigned(p: PaymentRecord, then: IntentWrite): Awaitable<boolean>;
  updatePayment(quoteId: string, patch: Partial<PaymentRecord>): Awaitable<void>;
  payment(quoteId: string): Awaitable<PaymentRecord | undefined>;
  /** Payments signed at or after `since` (ms), oldest first: for audits. */
  paymentsSince(since: number): Awaitable<PaymentRecord[]>;
  /** Every proof signed for one intent, over all its attempts, oldest first: where its money is (intent/money.ts). */
  paymentsOf(intentId: string): Awaitable<PaymentRecord[]>;
  /** Payments found unable to land that are still watched for a late landing, oldest first. */
  watchedPayments(limit: number): Awaitable<PaymentRecord[]>;

  // ---- Approvals ----
  insertApproval(a: Approval): Awaitable<void>;
  approval(approvalId: string): Awaitable<Approval | undefined>;
  pendingApprovals(now: number): Awaitable<Approval[]>;
  /** Moves an approval from one status to another; false if it was not in `from` (single use). */
  decideApproval(approvalId: string, from: ApprovalStatus, to: ApprovalStatus, now: number): Awaitable<boolean>;

  /**
   * Approves a pending approval with the passkey assertion that verified for it (kept whole,
   * as JSON), and advances that credential's counter to `signCount`, in one transaction:
   * neither happens when the approval is no longer pending (`changed`) or the credential's
   * counter does not advance (`counter`: a replay, or it was removed).
   */
  approveWithAssertion(
    approvalId: string,
    now: number,
    assertion: string,
    credentialId: string,
    signCount: number,
  ): Awaitable<AssertedApproval>;
  /** The passkey assertion an approval was given with (JSON), if it was. */
  approvalAssertion(approvalId: string): Awaitable<string | undefined>;

  // ---- Passkeys ----
  /** Every passkey ever registered, removed ones too, oldest first. */
  passkeys(): Awaitable<PasskeyRecord[]>;
  /** Registers a passkey (a credential id already known is refused by the store). */
  insertPasskey(p: PasskeyRecord): Awaitable<void>;
  /** Keeps the owner's signature of a registered passkey's statement; false when it is not registered. */
  bindPasskeyOwner(credentialId: string, owner: string, signature: string): Awaitable<boolean>;
  /**
   * Removes a registered passkey (its row stays) with the assertion of `by` (maybe the same),
   * whose counter advances to `signCount` in the same transaction: `missing` when it is not
   * registered, `counter` when `by`'s counter does not advance; nothing changes then.
   */
  removePasskey(
    credentialId: string,
    by: string,
    signCount: number,
    now: number,
  ): Awaitable<"removed" | "missing" | "counter">;

  // ---- Transcripts' index ----
  /** Indexes a tool call's transcript (once: a call already indexed is left as it is), without waiting for the disk. */
  indexTranscript(r: TranscriptRecord): Awaitable<void>;
  /** The most recent tool calls, newest first, on every host sharing the journal. */
  transcriptIndex(limit: number): Awaitable<TranscriptRecord[]>;

  // ---- Fetch answers' bodies (kept apart from the intents, by intent) ----
  /**
   * Keeps (or replaces) the body of the answer an intent's fetch got. Committed without
   * waiting for the disk: the engine commits the intent's outcome right after, which makes
   * it durable (both stores write one log in order), so a recorded outcome never lacks its body.
   */
  saveResponseBody(intentId: string, body: Uint8Array, now: number): Awaitable<void>;
  responseBody(intentId: string): Awaitable<Uint8Array | undefined>;

  // ---- The seller's signed word (x402 offer-receipt), by intent ----
  /** Keeps (or replaces) one part of a purchase's seller word (null: forgets it, as a fresh attempt's probe does). */
  saveSellerWord(intentId: string, part: SellerWordPart, json: string | null, now: number): Awaitable<void>;
  sellerWord(intentId: string): Awaitable<SellerWordRecord | undefined>;

  // ---- Catalog cache ----
  saveCatalog(service: string, details: Array<{ name: string; detail: unknown }>, now: number): Awaitable<void>;
  catalog(service: string): Awaitable<CatalogRecord[]>;

  // ---- The freeze (one per journal: every server sharing it is stopped) ----
  /** The freeze in force, if payments are frozen. */
  frozen(): Awaitable<Freeze | undefined>;
  /**
   * Freezes payments unless they already are: the freeze in force afterwards, and whether it
   * was there before (an earlier one is kept as it was). Waits for proofs being recorded
   * right now; none is recorded after it returns.
   */
  freeze(f: Freeze): Awaitable<{ freeze: Freeze; already: boolean }>;
  /** Lifts the freeze: the one lifted, or undefined when payments were not frozen. */
  unfreeze(): Awaitable<Freeze | undefined>;

  // ---- The approval PIN's memory (the hash itself stays in each home's file) ----
  /** Every home where an approval PIN was set and not cleared since, oldest first. */
  pinRecords(): Awaitable<PinRecord[]>;
  /** Remembers that a PIN was set in a home (replacing an earlier record of that host and home). */
  recordPin(r: PinRecord): Awaitable<void>;
  /** Forgets that host and home's record (its PIN was cleared with the current PIN). */
  forgetPin(host: string, home: string): Awaitable<void>;
}
