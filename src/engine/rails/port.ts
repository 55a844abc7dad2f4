/**
 * The rail port: what paying on one network takes, whatever its chain. Outside the rail
 * folders (rails/solana/, rails/evm/) the engine knows money on chain only through this
 * interface — the steps, the reconciler, the released-payment watch, the audit — and never
 * imports a chain library (test/unit/layers-rails.test.ts).
 *
 * Each method's contract names both rails: Solana's "exact" (an SPL `TransferChecked` with a
 * memo, the fee payer's slot left for the facilitator; rails/solana/) and EVM's "exact" (an
 * EIP-3009 `transferWithAuthorization` of USDC, signed as EIP-712 typed data, submitted by
 * the facilitator; rails/evm/). What holds on both:
 * - a proof's lifetime is ours, and journaled before the proof leaves;
 * - a proof that left is possibly spent until our own RPC shows it landed or can never land;
 * - what the service or a seller says is checked against our RPC, never taken as is.
 *
 * What stays outside the rails, rail-neutral: which rail pays a challenge (choose.ts), the
 * released-payment watch loop and its journal writes (chain/released-watch.ts), the scan
 * cursors' bookkeeping (chain/scan-cursors.ts), the transaction model and the payment and
 * refund checks over it (chain/chain.ts), the settlement and refund verdicts
 * (chain/settlement.ts, model/transitions.ts).
 */
import type { PaymentRequirements } from "../../domain/wire.js";
import type { ChallengeCheck, PricedIntent } from "../budget/policy.js";
import type { ChainTx } from "../chain/chain.js";
import type { PaymentRecord, RailRecord } from "../model/types.js";
import type { EvidenceReading, ReceiptSignature } from "./port-receipts.js";

export type { ChainTx } from "../chain/chain.js";
export type { RailRecord } from "../model/types.js";
export type * from "./port-receipts.js";

/** The rails there are: one folder each under rails/. */
export type RailKind = "solana" | "evm";

/**
 * What a proof is signed with, fixed by us before it is signed and journaled before it
 * leaves: when it stops being able to land.
 * - Solana: a blockhash our own RPC gave (never the challenge's `recentBlockhash` hint) and
 *   the last block height at which a transaction signed with it can land.
 * - EVM: `validAfter` (not in the future) and `validBefore` (ours: now plus a short bound
 *   of minutes, never later, whatever `maxTimeoutSeconds` the requirement asks for), unix
 *   seconds, and a fresh random 32-byte nonce per proof (hex).
 */
export type ProofLifetime =
  | { rail: "solana"; blockhash: string; lastValidHeight: bigint }
  | { rail: "evm"; validAfter: bigint; validBefore: bigint; nonce: string };

/** What a proof carries besides the requirement it accepts. */
export interface ProofOptions {
  /** The paid resource, as the payload names it. */
  resource?: { url: string; description?: string; mimeType?: string };
  /**
   * Solana: the memo the transfer carries when the requirement names none (an x402
   * resource's): ours, so that the chain can tell this payment apart. EVM: unused (the
   * authorization's nonce tells it apart).
   */
  memo?: string;
  /** The payload's extensions (e.g. the payment identifier the resource declared). */
  extensions?: Record<string, unknown>;
}

/** A proof signed in memory, and what its payment record must carry of the rail. */
export interface SignedProof {
  /** base64(JSON(x402 v2 PaymentPayload)): a secret. */
  proof: string;
  record: RailRecord;
}

/**
 * A proof as the journal knows it: its payment record, or — for a proof journaled before
 * payment records were — what its intent says (the rail's fields null: the configured key,
 * out of its own account, on the rail's network).
 */
export type JournaledProof = Pick<
  PaymentRecord,
  "quoteId" | "amount" | "payee" | "payer" | "mint" | "source" | "blockhash" | "lastValidHeight" | "signedAt"
> &
  Pick<Partial<PaymentRecord>, "network" | "nonce" | "validAfter" | "validBefore">;

/** What the rail learned of a proof's lifetime from our RPC, for its record (Solana: a vouched last valid height). */
export type LearnedLifetime = Partial<Pick<PaymentRecord, "lastValidHeight">>;

/**
 * Landed (with what is wrong with it, if anything), can never land (`why`: the chain's facts
 * that say so, for a person), or nobody can tell yet.
 */
export type FateReading = (
  | { kind: "landed"; tx: ChainTx; problems: string[] }
  | { kind: "never"; why: string }
  | { kind: "unknown"; why: string }
) & { learned?: LearnedLifetime };

/**
 * What our RPC says of a transaction the service or a seller named as a proof's settlement:
 * it is the payment of this proof (with what is wrong with it, if anything); it is not (the
 * RPC does not have it, or it carries nothing of this proof); or the RPC did not answer.
 */
export type ClaimReading =
  { kind: "ours"; tx: ChainTx; problems: string[] } | { kind: "not_ours" } | { kind: "unknown"; why: string };

/** A settlement a service claimed for a proof: the transaction it named (null: none). */
export interface SettlementClaim {
  proof: JournaledProof;
  claimedTx: string | null;
}

/** What a refund transaction brought back from the payee; `undefined`: our RPC cannot tell now. */
export type RefundReading = bigint | "missing" | "not_from_payee" | undefined;

/** For a payment found unable to land: it landed after all, keep watching, or done watching. */
export type WatchReading = { kind: "landed"; tx: ChainTx; problems: string[] } | { kind: "watch" } | { kind: "done" };

/** Who pays on a rail, from which account, in which asset. */
export interface RailAccount {
  /** The agent key's address: the transfer's authority (Solana: base58; EVM: 0x…). */
  wallet: string;
  /** Where the money moves from (Solana: a USDC token account, the owner's in delegate mode; EVM: the key). */
  account: string;
  /** The USDC the rail pays in (Solana: the mint; EVM: the token contract). */
  asset: string;
}

/** What the chain itself still lets the agent key spend, whatever our caps say. */
export interface Ceiling {
  /**
   * Solana: `allowance` in delegate mode (the SPL delegate's allowance on the owner's
   * account, within the owner's balance), else `balance` (the key's own account);
   * EVM: always `balance` (EIP-3009 has no delegate: the key's own USDC balance, a hot
   * wallet the person tops up).
   */
  kind: "allowance" | "balance";
  /** Atomic units the chain would still let move. */
  left: bigint;
  /** The account that ceiling is on. */
  account: string;
}

/** The paying account's history as a rail read it for the audit: complete, or ChainScanError. */
export interface ChainScan {
  /** Transactions of the history read, oldest first (failed ones are not fetched). */
  txs: ChainTx[];
  /** History entries at or after `from`. */
  signatures: number;
  /** Transaction reads made (one per successful entry). */
  transactionsRead: number;
  /** Entries that failed on chain (they moved nothing; not fetched). */
  failed: number;
  pages: number;
  /** The time (ms) the history was read back to. */
  from: number;
}

export interface ScanOptions {
  /** Entries per history page (Solana: getSignaturesForAddress, 1-1000; default 1000). */
  pageSize?: number;
  /** Entries at most, before the answer is "cannot tell" (default 5000). */
  maxSignatures?: number;
  /** Transaction reads in flight at once (default 4). */
  concurrency?: number;
  /** Tries per RPC read (default 3), with growing pauses between them. */
  attempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

export type ChainScanReason = "rpc_unavailable" | "history_too_long" | "transaction_missing";

/** The history could not be read completely: the audit cannot tell. */
export class ChainScanError extends Error {
  constructor(
    readonly reason: ChainScanReason,
    message: string,
  ) {
    super(message);
    this.name = "ChainScanError";
  }
}

/** One rail: paying on one network, and reading the truth about that money from our own RPC. */
export interface Rail {
  readonly kind: RailKind;
  /** The CAIP-2 network it pays on. */
  readonly network: string;
  /** What it pays, for a person: `exact on <network> in USDC <asset>`. */
  readonly terms: string;

  /**
   * Whether this rail pays this requirement of a seller's 402 at all: scheme `exact`, its
   * network, its USDC, a well-formed amount, payee and timeout, and what the scheme needs
   * (Solana: a base58 payee and `extra.feePayer`; EVM: a 0x payee and the asset's EIP-712
   * `extra.name` / `extra.version` as x402's default-asset table gives them). Pure.
   */
  accepts(requirement: PaymentRequirements): boolean;

  /**
   * Our own rules on an entry it accepts that need the key (loaded now): Solana: the fee
   * payer is neither our wallet nor the delegate-mode owner — a proof for one of them would be
   * whole, for the seller to land with our SOL paying the fee (`fee_payer`); EVM: nothing (the
   * facilitator submits the authorization and pays the gas). Undefined: it may be paid.
   */
  vet(requirement: PaymentRequirements): Promise<"fee_payer" | undefined>;

  /**
   * Our own rules before signing, against what was priced: the entry on this network is
   * scheme `exact`, in its USDC, for the priced amount, to the priced payee, not expired,
   * with a positive timeout; Solana also: the memo is the quote id, the fee payer is not our
   * key (so it loads the key); EVM also: the asset's EIP-712 domain is x402's for that
   * network, and a memo, when the challenge names one, is the quote id. Every drift, not
   * just the first.
   */
  check(priced: PricedIntent, accepts: readonly PaymentRequirements[], now: number): Promise<ChallengeCheck>;

  /**
   * Refuses (nothing signed) a price the ceiling the chain enforces cannot cover. Solana
   * (`allowance_exhausted`): in delegate mode, the allowance left on the owner's account (read
   * through our RPC, cached briefly, counted down per price admitted); with the key's own
   * account, nothing is checked here (the token program refuses an overdraft). EVM
   * (`balance_insufficient`): the key's own USDC balance, read and counted down the same way.
   */
  admit(amount: bigint): Promise<void>;

  /** What the chain still lets the key spend (see Ceiling). Throws when our RPC does not answer. */
  ceiling(): Promise<Ceiling>;

  /**
   * Starts fetching a lifetime ahead, beside a quote or an unpaid request (Solana: the
   * blockhash from our RPC; EVM: nothing to fetch, the lifetime comes from the clock).
   */
  warm(): void;

  /**
   * The lifetime to sign `requirement`'s proof with (see ProofLifetime); throws
   * `payment_failed` (retryable, nothing signed) when our RPC cannot give one. Solana: the
   * requirement plays no part (its `recentBlockhash` hint is never used); EVM: `validBefore`
   * is now plus the shorter of our bound and its `maxTimeoutSeconds`.
   */
  lifetime(requirement: PaymentRequirements): Promise<ProofLifetime>;

  /**
   * A proof signed with the lifetime held could never land, which may be the lifetime's
   * fault: the next proof gets a fresh one (Solana: drops the blockhash held; EVM: nothing
   * is held, every proof has its own nonce and bound).
   */
  dropLifetime(): void;

  /**
   * Signs `requirement` (already checked) with `lifetime` (from this rail), whatever the
   * requirement's hints say of lifetimes. Solana: the x402 reference client's transaction
   * (`@x402/svm`), or the delegate's with the same layout, checked to carry our blockhash.
   * EVM: EIP-3009 `transferWithAuthorization(from = key, to = payTo, value = amount,
   * validAfter, validBefore, nonce)` signed as EIP-712 typed data over the asset's domain
   * (`@x402/evm`'s client on `viem`). Returns the proof and the rail's data for the payment
   * record (network, key, account, asset, lifetime), journaled before the proof leaves.
   */
  sign(requirement: PaymentRequirements, lifetime: ProofLifetime, o?: ProofOptions): Promise<SignedProof>;

  /**
   * The fate of a proof that left, from our RPC. Solana: landed = a transfer carrying the
   * proof's memo in the paying token account's history since signing; never = our
   * finalized height (read first) past the last valid height with no such transfer in the
   * history read after it. EVM: landed = `authorizationState(payer, nonce)` is used and the
   * transfer's log carries payer, payee and amount; never = our RPC's newest block is past
   * `validBefore` and the nonce is unused at that block. Anything else is unknown (an RPC
   * failure too: never thrown).
   */
  fate(p: JournaledProof): Promise<FateReading>;

  /**
   * What our RPC says of the transaction a service or seller named as this proof's
   * settlement (null: it named none). Solana: the transaction carries the proof's memo;
   * EVM: its receipt has the `AuthorizationUsed(payer, nonce)` log of this proof. The
   * caller asks fate() when it is not ours.
   */
  verifySettlement(p: JournaledProof, claimedTx: string | null): Promise<ClaimReading>;
  /**
   * verifySettlement for several proofs, in order, each checked exactly as alone, their
   * transactions read together (Solana: one JSON-RPC batch). Throws when the batch got no
   * answer (a node that refuses batches): ask verifySettlement then. A rail without it is
   * asked one by one.
   */
  verifySettlements?(claims: readonly SettlementClaim[]): Promise<ClaimReading[]>;

  /**
   * What a refund transaction the service named brought back from `payee` into the account
   * this proof paid from (Solana: token balance changes; EVM: `Transfer(payee → key)` logs).
   */
  refundInflow(p: JournaledProof, payee: string, tx: string): Promise<RefundReading>;

  /**
   * One look at a payment found unable to land, for a late landing: landed after all, keep
   * watching, or beyond doubt. Solana: until our finalized height is well past its last
   * valid height (a margin of blocks), or a day after signing when our RPC never vouched for
   * its blockhash. EVM: until our newest block is well past `validBefore` with the nonce
   * still unused.
   */
  watch(p: PaymentRecord): Promise<WatchReading>;

  /** Who pays on this rail, from which account, in which asset (loads the key). */
  account(): Promise<RailAccount>;

  /**
   * The paying account's history back to `fromMs`, complete or ChainScanError, for the
   * audit. Solana: the token account's signatures, then each successful transaction; EVM:
   * the USDC `Transfer` logs from and to the key's address, by block range.
   */
  scanHistory(fromMs: number, o?: ScanOptions): Promise<ChainScan>;

  /**
   * What our RPC shows now of the transaction `tx` a journaled proof's payment was settled
   * by, for a receipt: where it is (slot or block, finality), what it moved, and the
   * transaction itself, so that anyone can check its signatures offline (ChainEvidence).
   * Solana: getTransaction (base64) and getSignatureStatuses; EVM: the transaction, its
   * receipt's logs and the block's finality tag. Never throws: an RPC failure is unknown.
   */
  evidence(p: JournaledProof, tx: string): Promise<EvidenceReading>;

  /**
   * Signs a receipt (`message`: its domain-separation prefix and canonical JSON) with the key
   * that signed the payment, `payer` — refused (`key_changed`) when the configured key is
   * another now. Solana: ed25519 over the bytes, base58 (`ed25519`); EVM: EIP-191
   * `personal_sign` by the EVM key, 0x hex (`eip191`).
   */
  signReceipt(payer: string, message: Uint8Array): Promise<ReceiptSignature | { problem: "key_changed" }>;
}
