/**
 * The engine's front door: everything app/, mcp/, console/ and commands/ use, and nothing
 * else. test/unit/layers.test.ts fails on an import that reaches past it, on a name here
 * that nothing outside the engine imports, and on the v1 service API (service/api.ts)
 * passing through: what the others ask of the service, they ask the Engine.
 *
 * What is exported as is stays light: the MCP server's first answer may load this module.
 * The engine's flow and the heavy libraries — each rail's chain libraries, the journal's
 * database drivers — load on first use: the rails through rails/load.ts, the Solana rail's
 * own tools for the `allowance` command and `doctor` through the async functions at the end.
 */
import type { EngineDeps } from "./context.js";
import type { Engine } from "./engine.js";
import type { JournalOptions } from "./journal/port.js";
import type { PostgresOptions } from "./journal/postgres.js";
import type { Journal } from "./journal/sqlite.js";
import type { ChainPort } from "./rails/solana/chain.js";
import type { AllowanceTransactionInput, AllowanceReading } from "./rails/solana/delegate.js";
import type { Payer, PayerOptions, SolanaSigner } from "./rails/solana/payer.js";
import type { Reconciler, ReconcilerOptions } from "./reconciler.js";
import type { Verdict } from "./evidence/receipt-verify.js";

export { hintFor, httpStatusOf, isCode, paidError, PaidActionError, type ErrorContext } from "./errors.js";
export {
  journalOf,
  loadConfig,
  passwordOf,
  type Config,
  type ConfigIssue,
  type ConfigResult,
} from "./config/config.js";
export type { Engine, PurchaseEvent } from "./engine.js";
export type {
  Approval,
  ExecutionEvent,
  ExecutionView,
  Intent,
  IntentState,
  PaidCall,
  PaymentRecord,
  PayOptions,
  Step,
} from "./model/types.js";
export { INTENT_STATES, STATES } from "./model/states.js";
export type { ChainPort } from "./rails/solana/chain.js";
export { DAY_MS, type Freeze, type JournalStore } from "./journal/port.js";
export type { Journal } from "./journal/sqlite.js";
export type { Payer } from "./rails/solana/payer.js";
export type { AllowanceChange, AllowanceReading } from "./rails/solana/delegate.js";
export type { Reconciler } from "./reconciler.js";
export { createRails, noRails, type Rails } from "./rails/load.js";

export { clearPin, pinGate, pinPath, pinProblem, setPin, verifyPin, type PinGate } from "./approvals/pin.js";
export { approvalReview, pendingReviews, type ApprovalReview } from "./approvals/review.js";
export { parseKept } from "./evidence/kept.js";
export type { ReceiptDocument } from "./evidence/receipt.js";
export type { ReceiptResult } from "./evidence/receipt-build.js";
export type { Verdict } from "./evidence/receipt-verify.js";
export { approvalChallenge, registeredPasskeys } from "./approvals/passkeys.js";
export {
  bindOwner,
  newChallenge,
  passkeyStatement,
  registerPasskey,
  removalChallenge,
  removePasskey,
} from "./approvals/passkey-admin.js";
export { addressOfKeypair, signStatement } from "./evidence/owner.js";
export { RP_ID, type AssertionParts } from "./evidence/webauthn.js";
export type { PasskeyRecord } from "./journal/port.js";
export { AUDIT_SKEW_MS, reconcile, type AuditReport } from "./audit/reconcile.js";
export { ChainScanError, type ChainScan, type ScanOptions } from "./rails/port.js";
export { freezeView } from "./intent/freeze.js";
export { describeFee, readAllowance, shortfall, type AllowanceView } from "./rails/solana/allowance.js";
export { limitsView, view } from "./read/executions.js";
export { purchaseView } from "./read/purchases.js";
export { shapeBody } from "./x402-http/response.js";
export type { FetchOutcome } from "./intent/fetch.js";
export { recentCalls } from "./read/recent-calls.js";
export { spendingBreakdown } from "./read/spending-view.js";
export { Transcripts, type TranscriptEntry, type TranscriptLog } from "./read/transcripts.js";
export type { CatalogEntry } from "./service/reads.js";
// app/ assembles the service client and hands it to the engine; the v1 API over it
// (service/api.ts) stays inside: what others ask of the service, they ask the Engine.
export { createServiceClient, type ServiceClient, type ServiceClientOptions } from "./service/client.js";

// ---- Loaded on first use -------------------------------------------------------------

/** The engine over its ports (its flow loads now, not with this module). */
export async function createEngine(deps: EngineDeps): Promise<Engine> {
  const { Engine } = await import("./engine.js");
  return new Engine(deps);
}

export async function createReconciler(o: ReconcilerOptions): Promise<Reconciler> {
  const { Reconciler } = await import("./reconciler.js");
  return new Reconciler(o);
}

/** The Solana rail's chain port over the user's Solana RPC (a function when the RPC may move). */
export async function createRpcChain(rpcUrl: string | (() => string), timeoutMs?: number): Promise<ChainPort> {
  return (await import("./rails/solana/rpc.js")).createRpcChain(rpcUrl, timeoutMs);
}

/** The agent key as the Solana rail's payer (the Solana and x402 libraries load with it). */
export async function loadPayer(walletPath: string, o: PayerOptions): Promise<Payer> {
  return (await import("./rails/solana/payer.js")).loadPayer(walletPath, o);
}

/** A keypair file as a signer (the owner's, for the allowance command). */
export async function loadSigner(path: string): Promise<SolanaSigner> {
  return (await import("./rails/solana/payer.js")).loadSigner(path);
}

/** The owner's transaction that grants or revokes the agent key's allowance (base64). */
export async function allowanceTransaction(o: AllowanceTransactionInput): Promise<string> {
  return (await import("./rails/solana/delegate.js")).allowanceTransaction(o);
}

/** What a wallet-signed transaction handed to `allowance submit` does, checked before it is sent. */
export async function readAllowanceTransaction(
  wire: string,
  e: { owner: string; account: string; agent: string; mint: string },
): Promise<AllowanceReading> {
  return (await import("./rails/solana/delegate.js")).readAllowanceTransaction(wire, e);
}

/**
 * Checks a receipt's JSON with no journal and no configuration (evidence/receipt-verify.ts):
 * its digests, its signature, the transaction it carries, the approval, the seller's word,
 * and — given an RPC of its network — the transfer on chain.
 */
export async function verifyReceipt(json: unknown, o: { rpcUrl?: string } = {}): Promise<Verdict> {
  const [{ verifyReceipt }, { railVerifier, typedDataRecovery }] = await Promise.all([
    import("./evidence/receipt-verify.js"),
    import("./rails/load.js"),
  ]);
  const deps = { verifier: railVerifier, ...(o.rpcUrl ? { rpcUrl: o.rpcUrl } : {}) };
  return verifyReceipt(json, deps, await typedDataRecovery());
}

/** The journal in one SQLite file (better-sqlite3 loads with it). */
export async function openSqliteJournal(path: string, o?: JournalOptions): Promise<Journal> {
  const { Journal } = await import("./journal/sqlite.js");
  return new Journal(path, o);
}

/** The journal on PostgreSQL (pg loads with it). */
export async function openPostgresJournal(url: string, o?: PostgresOptions) {
  return (await import("./journal/postgres.js")).openPostgresJournal(url, o);
}
