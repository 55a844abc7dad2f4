/**
 * The paid-call engine: one agent intent becomes at most one paid execution.
 *
 *   intent -> quote -> budget decision -> (approval) -> challenge -> reserve -> sign
 *          -> confirm -> execution -> journal
 *
 * Every step is committed to the journal before the next network call that depends on it,
 * and every state-changing request carries the intent's one idempotency key, on every retry
 * and after a restart. Once a proof exists it is the only one ever sent for that intent:
 * a second signature is made only when the service has definitely refused the first.
 */
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { formatDecimal, parseDecimal } from "../domain/money.js";
import {
  canonicalJson,
  Execution,
  FINAL_STATUSES,
  Payment,
  PaymentRequired,
  PrepareResponse,
  Quote,
  type ExecutionStatus,
  type PaymentRequirements,
} from "../domain/wire.js";
import { ACTION_NAME } from "../domain/wire.js";
import type { Config } from "./config.js";
import { describeIssues, type ConfigIssue } from "./config.js";
import { PaidActionError } from "./errors.js";
import type { IntentRow, Journal } from "./journal.js";
import type { Payer } from "./payer.js";
import { callCeiling, checkChallenge, describeDrifts, evaluateBudget, quoteAmount } from "./policy.js";
import type { Exchange, ServiceClient, ServiceResponse } from "./service-client.js";
import type { Transcripts } from "./transcripts.js";

/** The step boundaries, in order: a crash test kills the process at each one. */
export const STEPS = [
  "intent_recorded",
  "quote_recorded",
  "reserved",
  "signed",
  "confirm_sent",
  "confirm_recorded",
  "execution_sent",
  "execution_recorded",
] as const;
export type Step = (typeof STEPS)[number];

export interface PayRequest {
  action: string;
  input: Record<string, unknown>;
  budget?: { amount: string; currency: string };
  /** The caller's own key for this intent: a retried call with it lands on the same intent. */
  intentKey?: string;
  approvalId?: string;
}

export type ApprovalAnswer = "accept" | "decline" | "cancel";

export interface ApprovalAsk {
  action: string;
  amount: string;
  currency: "USDC";
  payee: string;
  quoteId: string;
  expiresAt: string;
  input: Record<string, unknown>;
}

export interface PayOptions {
  callId?: string;
  /** Asks a human (MCP elicitation). Absent: approvals go through `approve <approvalId>`. */
  approve?: (ask: ApprovalAsk) => Promise<ApprovalAnswer>;
}

export interface PaidCall {
  intentId: string;
  intentKey: string;
  executionId: string;
  status: ExecutionStatus;
  action: string;
  quote: { quoteId: string; amount: string; currency: "USDC"; expiresAt: string };
  payment: { transaction: string | null; amount: string; currency: "USDC" };
  callId?: string;
}

export interface ExecutionView {
  intentId: string;
  executionId: string | null;
  action: string;
  status: string;
  state: string;
  quoteId: string | null;
  amount: string | null;
  currency: "USDC";
  payee: string | null;
  paymentTransaction: string | null;
  output?: unknown;
  error?: unknown;
  refund?: unknown;
  providerMeta?: unknown;
  attention?: string;
  callId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ExecutionEvent {
  intentId: string;
  executionId: string;
  status: string;
  previous: string | null;
  view: ExecutionView;
}

export interface EngineDeps {
  config: Config | { issues: ConfigIssue[] };
  journal: Journal;
  client: ServiceClient | undefined;
  /** Loads the wallet lazily, so a bad wallet fails paying calls, not start-up. */
  payer: () => Promise<Payer>;
  transcripts: Transcripts;
  now: () => number;
  newId: (prefix: string) => string;
  /** This process's identity for intent leases. */
  owner: string;
  log: (line: string) => void;
  /** Test hook: called at each step boundary (the crash test kills the process here). */
  onStep?: (step: Step, intentId: string) => void;
  /** A quote's own challenge is used up to this age; older, a fresh one is asked for (default 15 s). */
  challengeMaxAgeMs?: number;
}

const LEASE_MS = 120_000;
const POLL_START_MS = 1_000;

function fingerprint(action: string, input: string): string {
  return createHash("sha256").update(`${action}\n${input}`).digest("hex");
}

function asError(e: unknown): PaidActionError {
  if (e instanceof PaidActionError) return e;
  const code = (e as { code?: unknown })?.code;
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new PaidActionError("busy", "the journal is busy with another process's write; retry in a moment with the same intentKey", {}, true);
  }
  return new PaidActionError("service_error", `unexpected failure: ${(e as Error)?.message ?? String(e)}`.slice(0, 500));
}

export class Engine extends EventEmitter {
  private readonly config: Config | undefined;
  private readonly configIssues: ConfigIssue[] | undefined;
  private payerPromise: Promise<Payer> | undefined;

  constructor(private readonly d: EngineDeps) {
    super();
    if ("issues" in d.config) this.configIssues = d.config.issues;
    else this.config = d.config;
  }

  get service(): string {
    return this.config?.serviceId ?? this.config?.baseUrl ?? "unconfigured";
  }

  /** Fails closed: a broken config refuses every paying operation, naming each key. */
  private ready(): { config: Config; client: ServiceClient } {
    if (!this.config || !this.d.client) {
      throw new PaidActionError(
        "config_invalid",
        `the configuration is invalid, so nothing will be paid: ${describeIssues(this.configIssues ?? [])}`,
        { issues: this.configIssues ?? [] },
      );
    }
    return { config: this.config, client: this.d.client };
  }

  /** The wallet, loaded once (a failed load is retried on the next call). */
  private payer(): Promise<Payer> {
    this.ready();
    this.payerPromise ??= this.d.payer().catch((e: unknown) => {
      this.payerPromise = undefined;
      throw e;
    });
    return this.payerPromise;
  }

  private step(step: Step, intent: IntentRow): void {
    this.d.onStep?.(step, intent.intent_id);
  }

  private transcript(intent: IntentRow | undefined, step: string, data: Record<string, unknown> = {}): void {
    if (intent?.call_id) this.d.transcripts.append(intent.call_id, step, { intentId: intent.intent_id, ...data });
  }

  /** Records every HTTP attempt of an intent's requests in its call's transcript (redacted there). */
  private trace(intent: IntentRow) {
    return (e: Exchange) => {
      if (!intent.call_id) return;
      this.d.transcripts.append(intent.call_id, "http", {
        intentId: intent.intent_id,
        attempt: e.attempt,
        request: { method: e.method, path: e.path, headers: e.requestHeaders, body: e.requestBody },
        response: e.status === undefined ? null : { status: e.status, headers: e.responseHeaders, body: e.responseBody },
        ...(e.error ? { error: e.error } : {}),
        durationMs: e.durationMs,
      });
    };
  }

  private commit(intent: IntentRow, patch: Partial<IntentRow>): IntentRow {
    this.d.journal.update(intent.intent_id, patch, this.d.now());
    return { ...intent, ...patch, updated_at: this.d.now() };
  }

  // ---- Input --------------------------------------------------------------------

  private validate(req: PayRequest): { input: string; agentBudget?: bigint } {
    if (typeof req.action !== "string" || !ACTION_NAME.test(req.action)) {
      throw new PaidActionError("invalid_input", "action must be a catalog action name such as servers.provision", { field: "action" });
    }
    if (!req.input || typeof req.input !== "object" || Array.isArray(req.input)) {
      throw new PaidActionError("invalid_input", "input must be an object", { field: "input" });
    }
    let input: string;
    try {
      input = canonicalJson(req.input);
    } catch {
      throw new PaidActionError("invalid_input", "input is not serializable JSON", { field: "input" });
    }
    if (Buffer.byteLength(input) > 60 * 1024) throw new PaidActionError("invalid_input", "input is larger than 60 KiB", { field: "input" });
    let agentBudget: bigint | undefined;
    if (req.budget !== undefined) {
      if (req.budget.currency !== "USDC") {
        throw new PaidActionError("invalid_input", `budget.currency must be USDC, not ${JSON.stringify(req.budget.currency).slice(0, 40)}`, { field: "budget.currency" });
      }
      agentBudget = typeof req.budget.amount === "string" ? parseDecimal(req.budget.amount) : undefined;
      if (agentBudget === undefined) {
        throw new PaidActionError("invalid_input", "budget.amount must be a decimal string such as \"2.50\" (at most 6 decimals)", { field: "budget.amount" });
      }
    }
    if (req.intentKey !== undefined && (typeof req.intentKey !== "string" || !/^[A-Za-z0-9_.:-]{8,100}$/.test(req.intentKey))) {
      throw new PaidActionError("invalid_input", "intentKey must be 8-100 characters of A-Z a-z 0-9 _ . : -", { field: "intentKey" });
    }
    return { input, agentBudget };
  }

  // ---- Quote only -----------------------------------------------------------------

  /** Prices an intent and says whether it could be paid now. Pays nothing, records nothing. */
  async quote(req: Omit<PayRequest, "intentKey" | "approvalId">, callId?: string) {
    const { config, client } = this.ready();
    const { agentBudget } = this.validate(req);
    const { ceiling } = callCeiling(config.limits, req.action, agentBudget);
    const res = await client.call("POST", "/quotes", {
      body: { action: req.action, input: req.input, budget: { amount: formatDecimal(ceiling), currency: "USDC" } },
      idempotencyKey: this.d.newId("qtk"),
      schema: Quote,
    });
    if (callId) this.d.transcripts.append(callId, "quote", { status: res.status, body: res.ok ? res.body : res.error });
    if (!res.ok) throw this.quoteRefusal(res);
    const amount = quoteAmount(res.body.amount);
    if (amount === undefined || res.body.currency !== "USDC") {
      throw new PaidActionError("quote_drift", `the service quoted an amount that is not a USDC decimal (${JSON.stringify(res.body.amount).slice(0, 40)} ${String(res.body.currency).slice(0, 10)})`);
    }
    const decision = evaluateBudget(config.limits, this.d.journal.usage(this.d.now(), config.limits.maxTotal !== undefined), {
      action: req.action,
      amount,
      payee: res.body.paymentRequirement.accepts?.[0]?.payTo,
      agentBudget,
    });
    return {
      quoteId: res.body.quoteId,
      action: res.body.action,
      amount: formatDecimal(amount),
      currency: "USDC" as const,
      expiresAt: res.body.expiresAt,
      payee: res.body.paymentRequirement.accepts?.[0]?.payTo ?? null,
      breakdown: (res.body as Record<string, unknown>).breakdown,
      payable: decision.ok,
      needsApproval: decision.ok ? decision.needsApproval : false,
      refusal: decision.ok ? undefined : { code: decision.code, message: decision.message, ...decision.context },
    };
  }

  private quoteRefusal(res: Extract<ServiceResponse<unknown>, { ok: false }>): PaidActionError {
    const { code, message } = res.error;
    if (res.status === 404) return new PaidActionError("action_unknown", `the service does not know this: ${message}`, { serviceCode: code });
    if (res.status === 400) {
      return new PaidActionError("invalid_input", `the service refused the input: ${message}`, {
        serviceCode: code,
        ...(Array.isArray(res.error.issues) ? { issues: res.error.issues.slice(0, 20) } : {}),
      });
    }
    return new PaidActionError("quote_rejected", `the service refused to quote (HTTP ${res.status} ${code}): ${message}`, { serviceCode: code, status: res.status });
  }

  // ---- Pay ----------------------------------------------------------------------------

  /**
   * Runs one paid call to the point where the service has accepted an execution, and
   * returns its id and status. Refusals and failures throw a PaidActionError.
   */
  async pay(req: PayRequest, opts: PayOptions = {}): Promise<PaidCall> {
    const { config } = this.ready();
    const { input, agentBudget } = this.validate(req);
    const fp = fingerprint(req.action, input);
    const now = this.d.now();

    let intent: IntentRow | undefined;
    if (req.approvalId !== undefined) {
      intent = this.intentForApproval(req.approvalId, fp);
    } else if (req.intentKey !== undefined) {
      intent = this.d.journal.intentByKey(req.intentKey);
      if (intent && intent.fingerprint !== fp) {
        throw new PaidActionError("intent_conflict", `intentKey ${req.intentKey} was used for a different action or input; use a new key for a new intent`, {
          intentKey: req.intentKey,
          intentId: intent.intent_id,
        });
      }
    }
    // Refuse early what the policy would refuse anyway, before anything is recorded.
    const early = evaluateBudget(config.limits, { day: 0n, total: 0n }, { action: req.action, amount: 0n });
    if (!early.ok) throw new PaidActionError(early.code, early.message, early.context);

    if (!intent) {
      const intentId = this.d.newId("int");
      const intentKey = req.intentKey ?? `pam-${intentId}`;
      this.d.journal.insertIntent({
        intent_id: intentId,
        intent_key: intentKey,
        idem_key: intentKey,
        service: this.service,
        action: req.action,
        input,
        fingerprint: fp,
        agent_budget: agentBudget?.toString() ?? null,
        call_id: opts.callId ?? null,
        created_at: now,
        lease_owner: this.d.owner,
        lease_until: now + LEASE_MS,
      });
      intent = this.d.journal.intent(intentId)!;
      this.transcript(intent, "intent", { action: req.action, input: req.input, budget: req.budget ?? null, intentKey: intent.intent_key });
      this.step("intent_recorded", intent);
    } else {
      if (!this.d.journal.claim(intent.intent_id, this.d.owner, now, LEASE_MS)) {
        throw new PaidActionError("busy", "another process is working on this intent right now; retry in a few seconds", { intentId: intent.intent_id }, true);
      }
      if (opts.callId) this.d.journal.update(intent.intent_id, { call_id: opts.callId }, now);
      intent = this.d.journal.intent(intent.intent_id)!;
      if (this.restartable(intent)) intent = this.restart(intent, agentBudget);
      this.transcript(intent, "resume", { state: intent.state, intentKey: intent.intent_key, attempt: intent.attempt });
    }
    try {
      const done = await this.run(intent, opts);
      return this.result(done, opts.callId);
    } finally {
      this.d.journal.release(intent.intent_id, this.d.owner);
    }
  }

  /**
   * Stopped definitely with nothing settled: before anything was signed, or after the
   * service refused a proof that can no longer land.
   */
  private restartable(intent: IntentRow): boolean {
    if (intent.state !== "refused" && intent.state !== "failed") return false;
    if (intent.proof === null) return true;
    const error = intent.error ? (JSON.parse(intent.error) as { context?: { resignable?: boolean } }) : undefined;
    return error?.context?.resignable === true;
  }

  /**
   * A fresh attempt at the same intent: a new quote under a fresh idempotency key (the old
   * quote is expired or its payment was refused). A refused proof is dropped: it can never land.
   */
  private restart(intent: IntentRow, agentBudget: bigint | undefined): IntentRow {
    const attempt = intent.attempt + 1;
    return this.commit(intent, {
      state: "new",
      attempt,
      idem_key: `${intent.intent_key}.a${attempt}`,
      error: null,
      quote_id: null,
      quote: null,
      amount: null,
      payee: null,
      quote_expires_at: null,
      quoted_at: null,
      requirements: null,
      proof: null,
      approval_id: null,
      budget_state: "none",
      budget_amount: null,
      budget_at: null,
      agent_budget: agentBudget?.toString() ?? null,
    });
  }

  private intentForApproval(approvalId: string, fp: string): IntentRow {
    const approval = typeof approvalId === "string" ? this.d.journal.approval(approvalId) : undefined;
    if (!approval) throw new PaidActionError("approval_invalid", `approval ${String(approvalId).slice(0, 60)} does not exist`, { approvalId });
    const intent = this.d.journal.intent(approval.intent_id);
    if (!intent || intent.fingerprint !== fp) {
      throw new PaidActionError("approval_invalid", `approval ${approvalId} was given for a different action or input; send exactly the input that was approved`, { approvalId });
    }
    return intent;
  }

  private result(intent: IntentRow, callId?: string): PaidCall {
    if (intent.state !== "executed" || !intent.execution_id) {
      const error = intent.error ? (JSON.parse(intent.error) as { code: PaidActionError["code"]; message: string; context?: Record<string, unknown>; retryable?: boolean }) : undefined;
      if (error) throw new PaidActionError(error.code, error.message, { intentId: intent.intent_id, ...(error.context ?? {}) }, error.retryable ?? false);
      throw new PaidActionError("outcome_unknown", `intent ${intent.intent_id} stopped in state ${intent.state}`, { intentId: intent.intent_id }, true);
    }
    const quote = JSON.parse(intent.quote ?? "{}") as { expiresAt?: string };
    return {
      intentId: intent.intent_id,
      intentKey: intent.intent_key,
      executionId: intent.execution_id,
      status: (intent.exec_status ?? "pending") as ExecutionStatus,
      action: intent.action,
      quote: { quoteId: intent.quote_id!, amount: formatDecimal(BigInt(intent.amount!)), currency: "USDC", expiresAt: quote.expiresAt ?? "" },
      payment: { transaction: intent.payment_tx, amount: formatDecimal(BigInt(intent.amount!)), currency: "USDC" },
      ...(callId ?? intent.call_id ? { callId: callId ?? intent.call_id! } : {}),
    };
  }

  /** Records a stop: refusals release nothing (nothing was reserved), failures release the reservation. */
  private stop(intent: IntentRow, state: "refused" | "failed" | "attention", error: PaidActionError, attention?: string): IntentRow {
    const patch: Partial<IntentRow> = {
      state,
      error: JSON.stringify({ code: error.code, message: error.message, context: error.context, retryable: error.retryable }),
      next_poll_at: null,
    };
    if (state !== "attention" && intent.budget_state === "reserved") patch.budget_state = "released";
    if (attention) patch.attention = attention;
    const next = this.commit(intent, patch);
    this.transcript(next, state, { code: error.code, message: error.message, context: error.context });
    if (state === "attention") this.d.log(`intent ${intent.intent_id} needs attention: ${attention ?? error.message}`);
    return next;
  }

  /** The state machine. Returns the intent in a resting state; records every stop. */
  private async run(start: IntentRow, opts: PayOptions): Promise<IntentRow> {
    let intent = start;
    for (let guard = 0; guard < 20; guard++) {
      try {
        switch (intent.state) {
          case "new":
            intent = await this.requestQuote(intent);
            break;
          case "quoted":
          case "awaiting_approval":
            intent = await this.decide(intent, opts);
            break;
          case "reserved":
            intent = await this.sign(intent);
            break;
          case "signed":
            intent = await this.confirm(intent);
            break;
          case "paid":
            intent = await this.execute(intent);
            break;
          default:
            return intent;
        }
      } catch (e) {
        const error = asError(e);
        if (error.code === "approval_required") throw error;
        const signedAlready = intent.state === "signed" || intent.state === "paid";
        if (error.retryable && signedAlready) {
          // Outcome unknown or the service is away: keep everything held, resume later.
          this.commit(intent, {
            error: JSON.stringify({ code: error.code, message: error.message, context: error.context, retryable: true }),
            next_poll_at: this.d.now() + POLL_START_MS * 5,
            poll_interval_ms: POLL_START_MS * 5,
          });
          this.transcript(intent, "paused", { code: error.code, message: error.message });
          this.emit("scheduled");
          throw new PaidActionError(error.code, error.message, { intentId: intent.intent_id, intentKey: intent.intent_key, state: intent.state, ...error.context }, true);
        }
        // Before signing, every stop is definite: nothing can settle. A retryable one ends
        // this attempt; a retry with the same intentKey starts a fresh one.
        const stopped = signedAlready ? "attention" : intent.state === "reserved" || error.retryable ? "failed" : "refused";
        return this.stop(intent, stopped, error);
      }
    }
    return intent;
  }

  private async requestQuote(intent: IntentRow): Promise<IntentRow> {
    const { config, client } = this.ready();
    const agentBudget = intent.agent_budget ? BigInt(intent.agent_budget) : undefined;
    const { ceiling } = callCeiling(config.limits, intent.action, agentBudget);
    const input = JSON.parse(intent.input) as Record<string, unknown>;
    const res = await client.call("POST", "/quotes", {
      body: { action: intent.action, input, budget: { amount: formatDecimal(ceiling), currency: "USDC" } },
      idempotencyKey: intent.idem_key,
      schema: Quote,
      trace: this.trace(intent),
    });
    this.transcript(intent, "quote", { status: res.status, body: res.ok ? res.body : res.error });
    if (!res.ok) throw this.quoteRefusal(res);
    const quote = res.body;
    const amount = quoteAmount(quote.amount);
    if (amount === undefined || amount === 0n || quote.currency !== "USDC") {
      throw new PaidActionError("quote_drift", `the quote's amount ${JSON.stringify(quote.amount).slice(0, 40)} ${String(quote.currency).slice(0, 10)} is not a positive USDC decimal; nothing was signed`, {
        quoteId: quote.quoteId,
      });
    }
    if (quote.action !== intent.action) {
      throw new PaidActionError("quote_drift", `the service quoted ${String(quote.action).slice(0, 60)} for a request to ${intent.action}; nothing was signed`, { quoteId: quote.quoteId });
    }
    const expiresAt = Date.parse(quote.expiresAt);
    if (Number.isNaN(expiresAt)) throw new PaidActionError("quote_drift", "the quote's expiresAt is not a timestamp; nothing was signed", { quoteId: quote.quoteId });
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(quote.quoteId)) {
      throw new PaidActionError("quote_drift", "the quote id has characters a quote id cannot have; nothing was signed");
    }
    const next = this.commit(intent, {
      state: "quoted",
      quote_id: quote.quoteId,
      quote: JSON.stringify(quote),
      amount: amount.toString(),
      payee: quote.paymentRequirement.accepts?.[0]?.payTo ?? null,
      quote_expires_at: expiresAt,
      quoted_at: this.d.now(),
    });
    this.step("quote_recorded", next);
    return next;
  }

  /** Budget decision, approval, challenge and drift checks, then the reservation. Signs nothing. */
  private async decide(intent: IntentRow, opts: PayOptions): Promise<IntentRow> {
    const { config } = this.ready();
    const now = this.d.now();
    const amount = BigInt(intent.amount!);
    const agentBudget = intent.agent_budget ? BigInt(intent.agent_budget) : undefined;
    if (now >= intent.quote_expires_at!) {
      throw new PaidActionError("quote_expired", `quote ${intent.quote_id} expired at ${new Date(intent.quote_expires_at!).toISOString()} before it was paid; nothing was signed — call again for a new quote`, {
        quoteId: intent.quote_id,
      });
    }
    const charge = { action: intent.action, amount, payee: intent.payee ?? undefined, agentBudget };
    const withTotal = config.limits.maxTotal !== undefined;
    const pre = evaluateBudget(config.limits, this.d.journal.usage(now, withTotal), charge);
    if (!pre.ok) throw new PaidActionError(pre.code, pre.message, { quoteId: intent.quote_id, ...pre.context });

    if (pre.needsApproval) intent = await this.approval(intent, opts);

    const requirements = await this.challenge(intent);
    const payee = intent.payee ?? requirements.payTo;
    const reserved = this.d.journal.reserve(
      intent.intent_id,
      amount,
      this.d.now(),
      (usage) => evaluateBudget(config.limits, usage, { ...charge, payee }),
      { state: "reserved", requirements: JSON.stringify(requirements), payee },
      withTotal,
    );
    if (!reserved.ok) throw new PaidActionError(reserved.code, reserved.message, { quoteId: intent.quote_id, ...reserved.context });
    const next = { ...this.d.journal.intent(intent.intent_id)! };
    this.transcript(next, "reserved", { amount: formatDecimal(amount), payee, decision: "within limits" });
    this.step("reserved", next);
    return next;
  }

  private async approval(intent: IntentRow, opts: PayOptions): Promise<IntentRow> {
    const amount = BigInt(intent.amount!);
    const now = this.d.now();
    if (intent.approval_id) {
      const approval = this.d.journal.approval(intent.approval_id);
      if (approval?.status === "used" && BigInt(approval.amount) >= amount && approval.quote_id === intent.quote_id) return intent;
      if (approval?.status === "approved") {
        if (approval.quote_id !== intent.quote_id || BigInt(approval.amount) < amount) {
          throw new PaidActionError("approval_invalid", `approval ${approval.approval_id} was for another quote or a lower amount`, { approvalId: approval.approval_id });
        }
        if (approval.expires_at <= now) {
          throw new PaidActionError("approval_invalid", `approval ${approval.approval_id} expired with its quote; call again without approvalId for a new quote`, { approvalId: approval.approval_id });
        }
        if (!this.d.journal.decideApproval(approval.approval_id, "approved", "used", now)) {
          throw new PaidActionError("approval_invalid", `approval ${approval.approval_id} was already used`, { approvalId: approval.approval_id });
        }
        this.transcript(intent, "approval", { approvalId: approval.approval_id, decision: "approved by a human (approve command)" });
        return this.commit(intent, { state: "quoted" });
      }
      if (approval?.status === "declined") {
        throw new PaidActionError("approval_declined", `approval ${approval.approval_id} was declined; nothing was paid`, { approvalId: approval.approval_id });
      }
      if (approval?.status === "pending" && approval.expires_at > now && !opts.approve) {
        throw this.approvalRequired(intent, approval.approval_id);
      }
    }
    const quote = JSON.parse(intent.quote!) as Quote;
    const ask: ApprovalAsk = {
      action: intent.action,
      amount: formatDecimal(amount),
      currency: "USDC",
      payee: intent.payee ?? quote.paymentRequirement.accepts?.[0]?.payTo ?? "(named in the payment challenge)",
      quoteId: intent.quote_id!,
      expiresAt: new Date(intent.quote_expires_at!).toISOString(),
      input: JSON.parse(intent.input) as Record<string, unknown>,
    };
    /** An approval bound to this quote and amount, expiring with the quote. */
    const record = (status: "pending" | "used" | "declined") => {
      const approvalId = this.d.newId("apr");
      this.d.journal.insertApproval({
        approval_id: approvalId,
        intent_id: intent.intent_id,
        quote_id: intent.quote_id!,
        action: intent.action,
        amount: amount.toString(),
        payee: intent.payee,
        expires_at: intent.quote_expires_at!,
        status,
        created_at: now,
        decided_at: status === "pending" ? null : this.d.now(),
      });
      return approvalId;
    };
    if (opts.approve) {
      const answer = await opts.approve(ask).catch(() => "cancel" as const);
      const approvalId = record(answer === "accept" ? "used" : "declined");
      this.transcript(intent, "approval", { approvalId, decision: answer === "accept" ? "accepted by the human" : `not accepted (${answer})` });
      if (answer !== "accept") {
        throw new PaidActionError("approval_declined", `the human did not approve paying ${ask.amount} USDC for ${intent.action} (${answer}); nothing was paid`, { answer });
      }
      return this.commit(intent, { approval_id: approvalId });
    }
    const approvalId = record("pending");
    this.commit(intent, { approval_id: approvalId, state: "awaiting_approval" });
    this.transcript(intent, "approval", { approvalId, decision: "approval required: waiting for a human" });
    throw this.approvalRequired(intent, approvalId);
  }

  private approvalRequired(intent: IntentRow, approvalId: string): PaidActionError {
    const amount = formatDecimal(BigInt(intent.amount!));
    return new PaidActionError(
      "approval_required",
      `paying ${amount} USDC for ${intent.action} needs a human's approval (above the approval threshold). A human runs: paid-actions-mcp approve ${approvalId} — then call again with the same input and approvalId "${approvalId}". The approval expires with the quote at ${new Date(intent.quote_expires_at!).toISOString()}.`,
      {
        approvalId,
        intentId: intent.intent_id,
        action: intent.action,
        amount,
        currency: "USDC",
        payee: intent.payee,
        quoteId: intent.quote_id,
        expiresAt: new Date(intent.quote_expires_at!).toISOString(),
      },
    );
  }

  /**
   * Before anything is signed, asks the service to run this exact intent with this quote
   * and no payment. An honest service answers 402 — which proves the quote is for this
   * action and input (a quote for another intent is 409 quote_mismatch) and carries a
   * fresh challenge. Returns that challenge, if readable.
   */
  private async preflight(intent: IntentRow): Promise<PaymentRequirements[] | undefined> {
    const { client } = this.ready();
    const res = await client.call("POST", "/executions", {
      body: { action: intent.action, input: JSON.parse(intent.input) as unknown },
      headers: { "x-quote-id": intent.quote_id! },
      idempotencyKey: intent.idem_key,
      schema: Execution,
      trace: this.trace(intent),
    });
    this.transcript(intent, "preflight", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) {
      throw new PaidActionError("payment_loop", `the service started execution ${res.body.executionId.slice(0, 128)} without payment; nothing was paid — a human should check`, {
        executionId: res.body.executionId,
      });
    }
    if (res.status === 402) return this.readChallenge(res);
    const { code, message } = res.error;
    if (code === "quote_mismatch" || code === "quote_consumed") {
      throw new PaidActionError("quote_drift", `the service says quote ${intent.quote_id} is not for this intent (${code}: ${message}); nothing was signed`, { quoteId: intent.quote_id, serviceCode: code });
    }
    if (res.status === 410 || code === "quote_expired") {
      throw new PaidActionError("quote_expired", `quote ${intent.quote_id} expired (the service says so); nothing was signed`, { quoteId: intent.quote_id });
    }
    throw new PaidActionError("quote_rejected", `the service refused the intent before payment (HTTP ${res.status} ${code}): ${message}; nothing was signed`, { serviceCode: code, status: res.status });
  }

  /**
   * The challenge to sign: the quote's own while it is fresh; otherwise (an approval took
   * time, its blockhash hint may be stale) or when the quote has none, a fresh one from
   * /payments/prepare; failing that, the one the preflight's 402 carried. Whatever its
   * source, it is checked against what the quote fixed.
   */
  private async challenge(intent: IntentRow): Promise<PaymentRequirements> {
    const { config, client } = this.ready();
    const quote = JSON.parse(intent.quote!) as Quote;
    const from402 = await this.preflight(intent);
    let accepts = quote.paymentRequirement.accepts;
    let source = "quote";
    const fresh = this.d.now() - (intent.quoted_at ?? 0) < (this.d.challengeMaxAgeMs ?? 15_000);
    if (!accepts || accepts.length === 0 || !fresh) {
      const res = await client.call("POST", "/payments/prepare", { body: { quoteId: intent.quote_id }, idempotencyKey: intent.idem_key, schema: PrepareResponse, trace: this.trace(intent) });
      this.transcript(intent, "prepare", { status: res.status, body: res.ok ? res.body : res.error });
      if (res.ok) {
        if (res.body.quoteId !== intent.quote_id) {
          throw new PaidActionError("quote_drift", `/payments/prepare answered for quote ${res.body.quoteId.slice(0, 64)}, not ${intent.quote_id}; nothing was signed`);
        }
        accepts = res.body.paymentRequired.accepts;
        source = "prepare";
      } else if (res.status === 404 || res.status === 405 || res.status === 501) {
        // No prepare endpoint: the preflight's challenge, else the quote's own.
        if (from402 && from402.length > 0) {
          accepts = from402;
          source = "402";
        }
      } else if (res.status === 410) {
        throw new PaidActionError("quote_expired", `quote ${intent.quote_id} expired (the service says so); nothing was signed`, { quoteId: intent.quote_id });
      } else {
        throw new PaidActionError("quote_rejected", `the service refused to prepare a payment challenge (HTTP ${res.status} ${res.error.code}): ${res.error.message}`, { serviceCode: res.error.code });
      }
    }
    if (!accepts || accepts.length === 0) {
      throw new PaidActionError("quote_rejected", "the service gave no payment challenge for this quote (none in the quote, /payments/prepare or the 402); nothing was signed");
    }
    const payer = await this.payer();
    const check = checkChallenge(
      { quoteId: intent.quote_id!, amount: BigInt(intent.amount!), expiresAt: intent.quote_expires_at!, payee: intent.payee ?? undefined },
      accepts,
      { network: config.network, mint: config.mint, wallet: payer.address },
      this.d.now(),
    );
    this.transcript(intent, "challenge", { source, decision: check.ok ? "matches the quote" : "drift", drifts: check.ok ? [] : check.drifts });
    if (!check.ok) {
      const expiredOnly = check.drifts.every((d) => d.field === "expiresAt");
      if (expiredOnly) throw new PaidActionError("quote_expired", `quote ${intent.quote_id} expired before it could be paid; nothing was signed`, { quoteId: intent.quote_id });
      throw new PaidActionError("quote_drift", `the payment challenge does not match the quote, so nothing was signed: ${describeDrifts(check.drifts)}`, {
        quoteId: intent.quote_id,
        drifts: check.drifts,
      });
    }
    return check.requirements;
  }

  private readChallenge(res: Extract<ServiceResponse<unknown>, { ok: false }>): PaymentRequirements[] | undefined {
    const fromBody = PaymentRequired.safeParse(res.error.paymentRequired);
    if (fromBody.success) return fromBody.data.accepts;
    const header = res.headers["payment-required"];
    if (header && header.length < 65_536) {
      try {
        const decoded = PaymentRequired.safeParse(JSON.parse(Buffer.from(header, "base64").toString("utf8")));
        if (decoded.success) return decoded.data.accepts;
      } catch {
        // fall through
      }
    }
    return undefined;
  }

  private async sign(intent: IntentRow): Promise<IntentRow> {
    const { config } = this.ready();
    if (this.d.now() >= intent.quote_expires_at!) {
      throw new PaidActionError("quote_expired", `quote ${intent.quote_id} expired before it was signed; nothing was signed`, { quoteId: intent.quote_id });
    }
    const requirements = JSON.parse(intent.requirements!) as PaymentRequirements;
    const payer = await this.payer();
    const proof = await payer.createProof(requirements, config.baseUrl ? `${config.baseUrl}/executions` : undefined);
    this.d.transcripts.addSecret(proof, { ephemeral: true });
    const next = this.commit(intent, { state: "signed", proof });
    this.transcript(next, "signed", { amount: formatDecimal(BigInt(intent.amount!)), payTo: requirements.payTo, wallet: payer.address });
    this.step("signed", next);
    return next;
  }

  private async confirm(intent: IntentRow): Promise<IntentRow> {
    const { client } = this.ready();
    this.d.transcripts.addSecret(intent.proof ?? undefined, { ephemeral: true });
    const res = await client.call("POST", "/payments/confirm", {
      body: { quoteId: intent.quote_id, paymentProof: intent.proof },
      idempotencyKey: intent.idem_key,
      schema: Payment,
      trace: this.trace(intent),
    });
    this.step("confirm_sent", intent);
    this.transcript(intent, "confirm", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) {
      const p = res.body;
      const amount = quoteAmount(p.amount);
      if (p.quoteId !== intent.quote_id || amount !== BigInt(intent.amount!)) {
        // Something settled, but not what we priced: hold the budget and tell a human.
        throw new PaidActionError("payment_invalid", `the service confirmed a payment that does not match the quote (quote ${p.quoteId.slice(0, 64)}, amount ${p.amount.slice(0, 40)}); a human should check transaction ${p.transaction.slice(0, 100)}`, {
          transaction: p.transaction,
        });
      }
      const next = this.commit(intent, { state: "paid", payment: JSON.stringify(p), payment_tx: p.transaction, budget_state: "spent", error: null });
      this.step("confirm_recorded", next);
      return next;
    }
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      // No confirm endpoint: the proof travels with the execution request and settles there.
      return this.commit(intent, { state: "paid" });
    }
    switch (res.error.code) {
      case "payment_invalid":
      case "quote_expired":
      case "invalid_request": {
        // The service refused the proof. A new signature is safe only once the old
        // transaction can never land: its blockhash has expired (our RPC says so).
        const expired = await (await this.payer()).proofExpired(intent.proof!);
        const err = new PaidActionError(res.error.code === "quote_expired" ? "quote_expired" : "payment_invalid", `the service refused the payment (${res.error.code}${typeof res.error.reason === "string" ? `: ${res.error.reason.slice(0, 120)}` : ""}): ${res.error.message}; nothing was charged`, {
          serviceCode: res.error.code,
          reason: res.error.reason,
          resignable: expired === true,
        });
        const stopped = this.stop(intent, "failed", err);
        if (expired === true && intent.attempt < 2) {
          this.transcript(stopped, "retry", { decision: "the refused proof's blockhash has expired, so it can never land: a fresh attempt" });
          return this.restart(stopped, intent.agent_budget ? BigInt(intent.agent_budget) : undefined);
        }
        return stopped;
      }
      case "idempotency_in_progress":
        throw new PaidActionError("outcome_unknown", "the payment is still being settled by the service; the engine will check again", {}, true);
      default:
        return this.stop(
          intent,
          "attention",
          new PaidActionError("payment_failed", `the service answered the payment with HTTP ${res.status} ${res.error.code}: ${res.error.message}; the budget stays reserved until a human checks`, {
            serviceCode: res.error.code,
          }),
          `confirm answered ${res.error.code}`,
        );
    }
  }

  private async execute(intent: IntentRow): Promise<IntentRow> {
    const { client } = this.ready();
    const res = await client.call("POST", "/executions", {
      body: { action: intent.action, input: JSON.parse(intent.input) as unknown },
      headers: { "x-quote-id": intent.quote_id!, ...(intent.proof ? { "x-payment-proof": intent.proof } : {}) },
      idempotencyKey: intent.idem_key,
      schema: Execution,
      trace: this.trace(intent),
    });
    this.step("execution_sent", intent);
    this.transcript(intent, "execution", { status: res.status, body: res.ok ? res.body : res.error });
    if (res.ok) return this.recordExecution(intent, res.body);
    if (res.status === 402) {
      return this.stop(
        intent,
        "attention",
        new PaidActionError("payment_loop", `the service asked for payment again after quote ${intent.quote_id} was paid${intent.payment_tx ? ` (transaction ${intent.payment_tx})` : ""}; nothing more was paid — a human should check`, {
          quoteId: intent.quote_id,
          transaction: intent.payment_tx,
        }),
        "402 after payment",
      );
    }
    if (res.error.code === "idempotency_in_progress") {
      throw new PaidActionError("outcome_unknown", "the execution request is still running at the service; the engine will check again", {}, true);
    }
    if (res.error.code === "quote_consumed" && typeof res.error.executionId === "string") {
      // The quote already funded an execution: if it is ours, adopt it.
      const get = await client.call("GET", `/executions/${encodeURIComponent(res.error.executionId)}`, { schema: Execution, trace: this.trace(intent) });
      if (get.ok && get.body.quoteId === intent.quote_id && get.body.action === intent.action) return this.recordExecution(intent, get.body);
    }
    return this.stop(
      intent,
      "attention",
      new PaidActionError("execution_rejected", `the payment settled but the service refused the execution (HTTP ${res.status} ${res.error.code}): ${res.error.message}; a human should ask the service for the execution or a refund`, {
        serviceCode: res.error.code,
        quoteId: intent.quote_id,
        transaction: intent.payment_tx,
      }),
      `execution refused: ${res.error.code}`,
    );
  }

  private recordExecution(intent: IntentRow, e: Execution): IntentRow {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(e.executionId)) {
      return this.stop(intent, "attention", new PaidActionError("service_error", "the service returned an execution id with characters an id cannot have"), "bad execution id");
    }
    if (e.action !== intent.action || (e.quoteId !== undefined && e.quoteId !== intent.quote_id)) {
      return this.stop(intent, "attention", new PaidActionError("service_error", `the service returned an execution for ${e.action.slice(0, 60)} / ${String(e.quoteId).slice(0, 64)}, not for this intent`), "execution mismatch");
    }
    const final = FINAL_STATUSES.has(e.status);
    const next = this.commit(intent, {
      state: "executed",
      execution_id: e.executionId,
      execution: JSON.stringify(e),
      exec_status: e.status,
      output: e.output ? JSON.stringify(e.output) : null,
      budget_state: intent.budget_state === "reserved" ? "spent" : intent.budget_state,
      error: null,
      next_poll_at: final ? null : this.d.now() + POLL_START_MS,
      poll_interval_ms: POLL_START_MS,
      // The lease ends with this commit: one fsync fewer per paid call.
      lease_owner: null,
      lease_until: null,
    });
    this.step("execution_recorded", next);
    this.emitUpdate(next, null);
    if (!final) this.emit("scheduled");
    return next;
  }

  emitUpdate(intent: IntentRow, previous: string | null): void {
    if (!intent.execution_id) return;
    const event: ExecutionEvent = { intentId: intent.intent_id, executionId: intent.execution_id, status: intent.exec_status ?? "pending", previous, view: this.view(intent) };
    this.emit("execution", event);
  }

  // ---- Recovery ---------------------------------------------------------------------

  /**
   * Resumes every unfinished intent of this service with its own key. An intent another
   * live process holds is left to it. Never throws; each outcome is recorded.
   */
  async resumeUnfinished(): Promise<{ resumed: number; stillUnfinished: number }> {
    if (!this.config) return { resumed: 0, stillUnfinished: 0 };
    let resumed = 0;
    for (const intent of this.d.journal.unfinished(this.service)) {
      if (await this.resume(intent)) resumed++;
    }
    return { resumed, stillUnfinished: this.d.journal.unfinished(this.service).length };
  }

  /** Drives one unfinished intent as far as it goes without a human. */
  async resume(intent: IntentRow): Promise<boolean> {
    const now = this.d.now();
    if (!this.d.journal.claim(intent.intent_id, this.d.owner, now, LEASE_MS)) return false;
    try {
      const current = this.d.journal.intent(intent.intent_id)!;
      this.transcript(current, "resume", { state: current.state });
      await this.run(current, {});
      return true;
    } catch (e) {
      const error = asError(e);
      if (error.code !== "approval_required") this.d.log(`resuming ${intent.intent_id}: ${error.code}: ${this.d.transcripts.scrub(error.message)}`);
      return true;
    } finally {
      this.d.journal.release(intent.intent_id, this.d.owner);
    }
  }

  /** A human approves a pending approval (the `approve` command). */
  approve(approvalId: string): { approvalId: string; action: string; amount: string; expiresAt: string } {
    const approval = this.d.journal.approval(approvalId);
    if (!approval) throw new PaidActionError("approval_invalid", `approval ${approvalId} does not exist`, { approvalId });
    if (approval.status !== "pending") throw new PaidActionError("approval_invalid", `approval ${approvalId} is already ${approval.status}`, { approvalId });
    if (approval.expires_at <= this.d.now()) {
      throw new PaidActionError("approval_invalid", `approval ${approvalId} expired with its quote at ${new Date(approval.expires_at).toISOString()}; the agent must ask again`, { approvalId });
    }
    if (!this.d.journal.decideApproval(approvalId, "pending", "approved", this.d.now())) {
      throw new PaidActionError("approval_invalid", `approval ${approvalId} changed while approving; check it again`, { approvalId });
    }
    return { approvalId, action: approval.action, amount: formatDecimal(BigInt(approval.amount)), expiresAt: new Date(approval.expires_at).toISOString() };
  }

  // ---- Reads ------------------------------------------------------------------------

  view(intent: IntentRow): ExecutionView {
    const execution = intent.execution ? (JSON.parse(intent.execution) as Execution) : undefined;
    const error = intent.error ? (JSON.parse(intent.error) as unknown) : undefined;
    return {
      intentId: intent.intent_id,
      executionId: intent.execution_id,
      action: intent.action,
      status: intent.exec_status ?? intent.state,
      state: intent.state,
      quoteId: intent.quote_id,
      amount: intent.amount ? formatDecimal(BigInt(intent.amount)) : null,
      currency: "USDC",
      payee: intent.payee,
      paymentTransaction: intent.payment_tx,
      ...(intent.output ? { output: JSON.parse(intent.output) as unknown } : {}),
      ...(execution?.error ? { error: execution.error } : error ? { error } : {}),
      ...(intent.refund ? { refund: JSON.parse(intent.refund) as unknown } : {}),
      ...(execution?.providerMeta ? { providerMeta: execution.providerMeta } : {}),
      ...(intent.attention ? { attention: intent.attention } : {}),
      callId: intent.call_id,
      createdAt: new Date(intent.created_at).toISOString(),
      updatedAt: new Date(intent.updated_at).toISOString(),
    };
  }

  /** Applies a fresh execution record from the service; emits an event on a status change. */
  applyExecution(intent: IntentRow, e: Execution): IntentRow {
    const previous = intent.exec_status;
    const final = FINAL_STATUSES.has(e.status);
    const patch: Partial<IntentRow> = {
      execution: JSON.stringify(e),
      exec_status: e.status,
      output: e.output ? JSON.stringify(e.output) : intent.output,
      refund: e.refund ? JSON.stringify(e.refund) : intent.refund,
    };
    if (final) patch.next_poll_at = null;
    if (e.status === "refunded" && intent.budget_state === "spent") {
      const refunded = e.refund ? quoteAmount(e.refund.amount) : undefined;
      if (refunded !== undefined && refunded > BigInt(intent.amount ?? "0")) {
        patch.attention = `the service reports a refund of ${e.refund!.amount} USDC, larger than the ${formatDecimal(BigInt(intent.amount ?? "0"))} USDC paid`;
      }
      patch.budget_state = "refunded";
    }
    const next = this.commit(intent, patch);
    if (previous !== e.status) {
      this.transcript(next, "status", { executionId: e.executionId, from: previous, to: e.status });
      this.emitUpdate(next, previous);
    }
    return next;
  }

  /** An execution from the journal, refreshed from the service when it is not final. */
  async getExecution(executionId: string, refresh = true): Promise<ExecutionView | undefined> {
    let intent = this.d.journal.intentByExecution(executionId);
    if (!intent) return undefined;
    if (refresh && this.d.client && !FINAL_STATUSES.has((intent.exec_status ?? "pending") as ExecutionStatus)) {
      try {
        const res = await this.d.client.call("GET", `/executions/${encodeURIComponent(executionId)}`, { schema: Execution });
        if (res.ok && res.body.executionId === executionId) intent = this.applyExecution(intent, res.body);
      } catch {
        // The journal's copy is still the best answer.
      }
    }
    return this.view(intent);
  }

  listExecutions(opts: { status?: string; action?: string; limit?: number; cursor?: string }) {
    const limit = Math.max(1, Math.min(100, opts.limit ?? 20));
    let before = Number.MAX_SAFE_INTEGER;
    let beforeId = "~";
    if (opts.cursor) {
      const m = /^(\d{1,16}):(int_[A-Za-z0-9]{1,40})$/.exec(Buffer.from(opts.cursor, "base64url").toString());
      if (!m) throw new PaidActionError("invalid_input", "cursor is not one this server issued", { field: "cursor" });
      before = Number(m[1]);
      beforeId = m[2]!;
    }
    const rows = this.d.journal.db
      .prepare(
        `SELECT * FROM intents INDEXED BY intents_created
         WHERE (created_at < @before OR (created_at = @before AND intent_id < @beforeId))
           AND execution_id IS NOT NULL
           AND (@status IS NULL OR exec_status = @status)
           AND (@action IS NULL OR action = @action)
         ORDER BY created_at DESC, intent_id DESC LIMIT @limit`,
      )
      .all({ before, beforeId, status: opts.status ?? null, action: opts.action ?? null, limit: limit + 1 }) as IntentRow[];
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => this.view(r)),
      nextCursor: rows.length > limit && last ? Buffer.from(`${last.created_at}:${last.intent_id}`).toString("base64url") : null,
    };
  }

  /** Intents a human should look at: outcome unknown, or the service misbehaved after payment. */
  needsAttention(): ExecutionView[] {
    const rows = this.d.journal.db
      .prepare(`SELECT * FROM intents WHERE state = 'attention' OR attention IS NOT NULL ORDER BY created_at DESC LIMIT 100`)
      .all() as IntentRow[];
    return rows.map((r) => this.view(r));
  }

  /** The human's limits as decimal strings (no journal reads). */
  limitsView() {
    const limits = this.config?.limits;
    if (!limits) return null;
    const fmt = formatDecimal;
    return {
      maxPerCall: fmt(limits.maxPerCall),
      maxPerDay: fmt(limits.maxPerDay),
      maxTotal: limits.maxTotal !== undefined ? fmt(limits.maxTotal) : null,
      approvalAbove: fmt(limits.approvalAbove),
      allowActions: limits.allowActions,
      perAction: Object.fromEntries(Object.entries(limits.perAction).map(([k, v]) => [k, fmt(v)])),
    };
  }

  spending() {
    const now = this.d.now();
    const usage = this.d.journal.usage(now);
    const reserved = this.d.journal.reservedNow();
    const limits = this.config?.limits;
    const fmt = formatDecimal;
    return {
      currency: "USDC" as const,
      limits: this.limitsView(),
      spentLast24h: fmt(usage.day - this.reservedInWindow(now)),
      reserved: fmt(reserved),
      committedLast24h: fmt(usage.day),
      remainingToday: limits ? fmt(limits.maxPerDay > usage.day ? limits.maxPerDay - usage.day : 0n) : null,
      spentTotal: fmt(usage.total),
      remainingTotal: limits?.maxTotal !== undefined ? fmt(limits.maxTotal > usage.total ? limits.maxTotal - usage.total : 0n) : null,
      ...(this.configIssues ? { configIssues: this.configIssues } : {}),
    };
  }

  private reservedInWindow(now: number): bigint {
    const row = this.d.journal.db
      .prepare(`SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents WHERE budget_state = 'reserved' AND budget_at > ?`)
      .safeIntegers(true)
      .get(now - 24 * 3_600_000) as { n: bigint };
    return row.n;
  }
}
