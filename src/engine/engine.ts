/**
 * The paid-call engine: one agent intent becomes at most one paid execution.
 *
 * This is the engine's surface — pay, quote, approve, resume, and the reads — composed over
 * the paid calls (intent/calls.ts, which drive intent/drive.ts), the approvals (approvals/),
 * the read model (read/) and the chain (chain/settlement.ts, chain/released-watch.ts); the
 * rules are model/transitions.ts and budget/policy.ts.
 * At most one call drives an intent at a time: in this process a second call on the same
 * intent waits for the first and gets the same outcome; across processes the intent's lease
 * (renewed while held, every state change compare-and-set) does the same.
 */
import { EventEmitter } from "node:events";
import type { Company, Execution, ExecutionStatus } from "../domain/wire.js";
import { approvalReview, pendingReviews, type ApprovalReview } from "./approvals/review.js";
import { approvalWithInput, approve, decline, type DecidedIn, type PasskeyEvidence } from "./approvals/records.js";
import { unknownPerActionKeys, type Config, type ConfigIssue } from "./config/config.js";
import { createCtx, makeTranscript, type Ctx, type EngineDeps } from "./context.js";
import { paidError, PaidActionError } from "./errors.js";
import { Calls } from "./intent/calls.js";
import { payFetch, type FetchOutcome } from "./intent/fetch.js";
import { standingOf } from "./intent/resource.js";
import { describeDiscovery, fetchDiscovery, type DiscoveredResource } from "./x402-http/discovery.js";
import { usdcOf } from "../domain/networks.js";
import { stoppedByFreeze } from "./intent/freeze.js";
import { fingerprint, validateRequest } from "./intent/input.js";
import { applyExecution, getExecution, listExecutions, spending, view, type Folding } from "./read/executions.js";
import { listPurchases, type PurchasePage } from "./read/purchases.js";
import { evaluateBudget } from "./budget/policy.js";
import { quoteOnly } from "./intent/quote-only.js";
import { watchReleased, type WatchPass } from "./chain/released-watch.js";
import { checkRefund, checkSettlement, readClaims, type ClaimRead } from "./chain/settlement.js";
import { buildReceipt, type ReceiptResult } from "./evidence/receipt-build.js";
import { STATES } from "./model/states.js";
import { serviceApi, type AgentServiceSearchResult, type ServiceApi } from "./service/api.js";
import {
  actionNames,
  company,
  fetchCatalog,
  searchAgentServices,
  type ActionNames,
  type CatalogEntry,
} from "./service/reads.js";
import type {
  ExecutionEvent,
  ExecutionView,
  FetchRequest,
  Intent,
  IntentAt,
  IntentPatch,
  IntentRecord,
  PaidCall,
  PayOptions,
  PayRequest,
  ResumeOptions,
} from "./model/types.js";

export type { EngineDeps } from "./context.js";
export { STEPS, type Step } from "./model/types.js";

/** The chain checks an executed intent's money: asked of another, it is a caller's fault. */
function executed(intent: Intent): IntentAt<"executed"> {
  if (intent.state !== "executed") throw new Error(`intent ${intent.intentId} is ${intent.state}, not executed`);
  return intent;
}

/**
 * A paid_fetch purchase changed where it stands (its state, or its settlement as the chain
 * shows it): emitted as "purchase" when a call's drive of it ends and when the reconciler's
 * write lands, so that a resource subscription can follow a purchase as it follows an execution.
 */
export interface PurchaseEvent {
  intentId: string;
  state: string;
  settlement: string;
}

export class Engine extends EventEmitter {
  private readonly config: Config | undefined;
  private readonly configIssues: ConfigIssue[] | undefined;
  /** The paid calls of this process: which intents they drive now, one turn per intent key. */
  private readonly calls: Calls;
  private ctxCache: Ctx | undefined;
  /** perAction keys that name no action of the service's catalog (once the catalog is known). */
  private catalogIssues: ConfigIssue[] = [];

  constructor(private readonly d: EngineDeps) {
    super();
    if ("issues" in d.config) this.configIssues = d.config.issues;
    else this.config = d.config;
    this.calls = new Calls(d, this.service);
  }

  get service(): string {
    return this.config?.serviceId ?? this.config?.baseUrl ?? "unconfigured";
  }

  /**
   * Tells the engine the service's catalog: a perAction limit naming no action of it (a
   * misspelt key caps nothing) makes every paying operation fail closed, naming the key.
   */
  useCatalog(actionNames: readonly string[]): ConfigIssue[] {
    this.catalogIssues =
      this.config && actionNames.length > 0
        ? unknownPerActionKeys(this.config.limits.perAction, actionNames, this.config.configFile)
        : [];
    return this.catalogIssues;
  }

  /** For paying and quoting: fails closed on a config issue, catalog issues included. */
  private payingCtx(): Ctx {
    if (this.catalogIssues.length > 0 && !this.configIssues) {
      throw paidError("config_invalid", { issues: this.catalogIssues });
    }
    return this.ctx();
  }

  /** Fails closed: a broken config refuses every operation that talks to the service, naming each key. */
  private ctx(): Ctx {
    if (!this.config || !this.d.client) {
      throw paidError("config_invalid", { issues: this.configIssues ?? [] });
    }
    return (this.ctxCache ??= createCtx(this.d, this.config, this.d.client, this, (intent, previous) =>
      this.emitUpdate(intent, previous),
    ));
  }

  /** The v1 API over the service client; config_invalid, naming the keys, when the configuration left none. */
  private api(): ServiceApi {
    return serviceApi(this.ctx().client);
  }

  // ---- The service's free reads (service/reads.ts) ----------------------------------

  /**
   * The service's whole catalog, each action with its detail, sorted by name; undefined when
   * the configuration names no service to ask. Throws when the service does not give it.
   */
  async fetchCatalog(): Promise<CatalogEntry[] | undefined> {
    return this.config && this.d.client ? fetchCatalog(serviceApi(this.d.client)) : undefined;
  }

  /**
   * The names in the service's catalog, or its refusal in words (doctor's check that the
   * service answers); undefined when the configuration names no service. Throws when the
   * service cannot be reached.
   */
  async actionNames(): Promise<ActionNames | undefined> {
    return this.config && this.d.client ? actionNames(serviceApi(this.d.client)) : undefined;
  }

  /** A company formed with companies.create, as the service records it now. */
  async company(companyId: string): Promise<Company> {
    return company(this.api(), companyId);
  }

  /** The service's marketplace of agent services, searched (free). */
  async searchAgentServices(query: Record<string, unknown>): Promise<AgentServiceSearchResult> {
    return searchAgentServices(this.api(), query);
  }

  // ---- Quote only -----------------------------------------------------------------

  /** Prices an intent and says whether it could be paid now. Pays nothing, records nothing. */
  async quote(req: Omit<PayRequest, "intentKey" | "approvalId">, callId?: string) {
    return quoteOnly(this.payingCtx(), req, callId);
  }

  // ---- Pay ----------------------------------------------------------------------------

  /**
   * Runs one paid call to the point where the service has accepted an execution, and
   * returns its id and status. Refusals and failures throw a PaidActionError. When the
   * outcome is still being settled (a payment settling, another call driving the same
   * intent), waits a little (settleWaitMs, with progress) before answering.
   */
  async pay(req: PayRequest, opts: PayOptions = {}): Promise<PaidCall> {
    const c = this.payingCtx();
    const { input, agentBudget } = validateRequest(req);
    if (opts.signal?.aborted) throw paidError("cancelled", { stage: "before_start" });
    const fp = fingerprint(req.action, input);
    // Refuse early what the policy would refuse anyway, before anything is recorded.
    const early = evaluateBudget(c.config.limits, { day: 0n, total: 0n }, { action: req.action, amount: 0n });
    return this.calls.pay(c, { req, fp, agentBudget, early, opts });
  }

  /**
   * Buys an x402 resource (paid_fetch): the answer as is when it asks for no payment, else
   * the purchase driven like any other, answered with the resource once delivered (or from
   * the journal, for a call with the intentKey of one already delivered).
   */
  async payFetch(req: FetchRequest, opts: PayOptions = {}): Promise<FetchOutcome> {
    let intentId: string | undefined;
    try {
      const outcome = await payFetch(this.payingCtx(), this.calls, req, opts);
      intentId = outcome.result.intentId ?? undefined;
      return outcome;
    } catch (e) {
      const id = e instanceof PaidActionError ? (e.context as { intentId?: unknown }).intentId : undefined;
      intentId = typeof id === "string" ? id : undefined;
      throw e;
    } finally {
      // The drive of this call is over: whatever it changed is in the journal now.
      if (intentId) await this.purchaseChanged(intentId);
    }
  }

  /** Tells listeners where a fetch purchase stands now, as the journal has it (nothing for another kind). */
  private async purchaseChanged(intentId: string): Promise<void> {
    const intent = await Promise.resolve(this.d.journal.intent(intentId)).catch(() => undefined);
    if (intent?.kind === "fetch") this.emitPurchase(intent);
  }

  private emitPurchase(intent: IntentRecord): void {
    const event: PurchaseEvent = { intentId: intent.intentId, state: intent.state, settlement: intent.settlement };
    this.emit("purchase", event);
  }

  /**
   * The resources the configured facilitator lists (search_paid_resources), filtered by
   * `query`, each with its price and whether its origin is allowed. Pays nothing.
   */
  async searchPaidResources(o: { query?: string; limit: number }): Promise<{
    facilitator: string;
    resources: DiscoveredResource[];
  }> {
    const c = this.ctx();
    const facilitator = c.config.facilitatorUrl;
    if (!facilitator) throw paidError("config_invalid", { key: "PAID_ACTIONS_FACILITATOR_URL" });
    // Read a few pages' worth, filter here: a facilitator may not search.
    const body = await fetchDiscovery(facilitator, {
      limit: o.query ? 200 : o.limit,
      timeoutMs: c.config.http.timeoutMs,
    });
    const want = {
      // Payable on any network paid on, each in its USDC.
      pays: c.config.networks.flatMap((network) => {
        const asset = usdcOf(network);
        return asset ? [{ network, asset }] : [];
      }),
      allowed: (origin: string) => standingOf(c, origin) !== "refused",
    };
    return { facilitator, resources: describeDiscovery(body, want, o.query).slice(0, o.limit) };
  }

  /** A fetch purchase, as recorded, with the body of its answer (undefined: no such purchase). */
  async purchase(intentId: string): Promise<{ intent: Intent; body: Uint8Array | undefined } | undefined> {
    const intent = await this.d.journal.intent(intentId);
    if (!intent || intent.kind !== "fetch") return undefined;
    return { intent, body: intent.response ? await this.d.journal.responseBody(intentId) : undefined };
  }

  /**
   * Tells listeners an intent's record changed: an execution's ("execution"), and a fetch
   * purchase's ("purchase": the reconciler verifies its settlement through here).
   */
  emitUpdate(intent: IntentRecord, previous: ExecutionStatus | null): void {
    if (intent.kind === "fetch") this.emitPurchase(intent);
    if (!intent.executionId) return;
    const event: ExecutionEvent = {
      intentId: intent.intentId,
      executionId: intent.executionId,
      status: intent.execStatus ?? "pending",
      previous,
      view: view(intent),
    };
    this.emit("execution", event);
  }

  // ---- Recovery ---------------------------------------------------------------------

  /** Resumes every unfinished intent of this service with its own key; never throws. */
  async resumeUnfinished(o: ResumeOptions = {}): Promise<{ resumed: number; stillUnfinished: number }> {
    if (!this.config) return { resumed: 0, stillUnfinished: 0 };
    let resumed = 0;
    for (const intent of await this.d.journal.unfinished(this.service)) if (await this.resume(intent, o)) resumed++;
    return { resumed, stillUnfinished: (await this.d.journal.unfinished(this.service)).length };
  }

  /**
   * Drives one unfinished intent as far as it goes without a human; where the service gives
   * no answer after the proof left, what the chain shows decides (intent/steps/unanswered.ts).
   */
  async resume(intent: Intent, o: ResumeOptions = {}): Promise<boolean> {
    if (this.calls.isDriving(intent.intentId)) return false;
    // Nothing new is signed while a limit is misconfigured; what is already at risk is still followed.
    if (this.catalogIssues.length > 0 && STATES[intent.state].money === "none") return false;
    // Nor while payments are frozen: such a purchase waits (its reservation held) until a person lifts the freeze.
    if (stoppedByFreeze(intent) && (await this.d.journal.frozen())) return false;
    const resumed = await this.calls.resume(this.ctx(), intent, o);
    if (intent.kind === "fetch") await this.purchaseChanged(intent.intentId);
    return resumed;
  }

  /** One look at the payments the chain showed could never land, for a late landing (chain/released-watch.ts). */
  watchReleased(): Promise<WatchPass> {
    if (!this.config) return Promise.resolve({ watched: 0, landed: 0 });
    return watchReleased(this.ctx(), this.d.owner);
  }

  /** What the chain says of the settlement the service claimed for an executed intent (the reconciler records it). */
  checkSettlement(intent: Intent, read?: ClaimRead) {
    return checkSettlement(this.ctx(), executed(intent), read);
  }

  /** The chain's reading of several intents' claimed settlements, read together (each judged by checkSettlement). */
  readClaims(intents: readonly Intent[]) {
    return readClaims(this.ctx(), intents.map(executed));
  }

  /** What the chain says of the service's refund claim, and the credit it earns (the reconciler records it). */
  checkRefund(intent: Intent) {
    return checkRefund(this.ctx(), executed(intent));
  }

  // ---- Approvals: a person decides (the host's prompt, the console, the terminal) ------

  /**
   * A person approves a pending approval: that quote and amount, once, before it expires (with
   * a passkey registered, only with the passkey's assertion over its terms: the console's).
   */
  approve(approvalId: string, via?: DecidedIn, passkey?: PasskeyEvidence) {
    const c = { journal: this.d.journal, now: this.d.now, transcript: makeTranscript(this.d) };
    return approve(c, approvalId, via, passkey);
  }

  /** A person declines a pending approval: recorded, and the intent it was for stays unpaid. */
  decline(approvalId: string, via?: DecidedIn): Promise<void> {
    return decline({ journal: this.d.journal, now: this.d.now, transcript: makeTranscript(this.d) }, approvalId, via);
  }

  /** A recorded approval, with the input of the purchase it is for. */
  approval(approvalId: string) {
    return approvalWithInput(this.d.journal, approvalId);
  }

  /** Everything a person needs to decide on one approval (see approvals/review.ts). */
  approvalReview(approvalId: string): Promise<ApprovalReview | undefined> {
    return approvalReview(this.d.journal, this.config, approvalId, this.d.now());
  }

  /** The approvals waiting for a person (pending, not expired), oldest first. */
  pendingReviews(): Promise<ApprovalReview[]> {
    return pendingReviews(this.d.journal, this.config, this.d.now());
  }

  // ---- Reads ------------------------------------------------------------------------

  /** What folding an execution record in uses: the journal, the clock, the transcript, this engine's listeners. */
  private folding(): Folding {
    return {
      journal: this.d.journal,
      now: this.d.now,
      transcript: makeTranscript(this.d),
      emitUpdate: (intent, previous) => this.emitUpdate(intent, previous),
    };
  }

  /**
   * Folds a fresh execution record from the service into the journal, with `extra` in the
   * same commit (the reconciler's own findings); emits on a status change.
   */
  applyExecution(intent: IntentRecord, e: Execution, extra: IntentPatch = {}): Promise<IntentRecord> {
    return applyExecution(this.folding(), intent, e, extra);
  }

  /** An execution from the journal, refreshed from the service when it is not final. */
  getExecution(executionId: string, refresh = true): Promise<ExecutionView | undefined> {
    return getExecution(this.folding(), this.d.client, executionId, refresh);
  }

  listExecutions(opts: { status?: string; action?: string; limit?: number; cursor?: string }) {
    return listExecutions(this.d.journal, opts);
  }

  /** The x402 resources bought with paid_fetch, newest first, of one origin when asked (a page and the next cursor). */
  listPurchases(opts: { origin?: string; limit?: number; cursor?: string }): Promise<PurchasePage> {
    return listPurchases(this.d.journal, opts);
  }

  /** Intents a human should look at: outcome unknown, or the service misbehaved after payment. */
  async needsAttention(): Promise<ExecutionView[]> {
    return (await this.d.journal.needingAttention(100)).map(view);
  }

  /** A purchase's receipt, signed by the key that paid (evidence/receipt-build.ts), by its intentId or executionId. */
  receipt(id: string): Promise<ReceiptResult> {
    return buildReceipt({ journal: this.d.journal, rails: this.d.rails, now: this.d.now }, id);
  }

  spending() {
    const issues = this.configIssues ?? (this.catalogIssues.length > 0 ? this.catalogIssues : undefined);
    return spending(this.d.journal, this.config, issues, this.d.now());
  }
}
