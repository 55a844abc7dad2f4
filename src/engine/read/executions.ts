/**
 * The read model: what an agent or a human sees of the journal — one execution's view, the
 * list, what needs a human, the limits and the spending against them — and how a fresh
 * execution record from the service is folded in (its status and claims only: money is
 * credited back by the chain, in the reconciler, never by a status).
 */
import { pageOf, readCursor } from "./cursor.js";
import { networkShares, originShares } from "./spending-view.js";
import { formatDecimal } from "../../domain/money.js";
import { FINAL_STATUSES, type Execution, type ExecutionStatus } from "../../domain/wire.js";
import type { Config, ConfigIssue } from "../config/config.js";
import { paidError, fromStored } from "../errors.js";
import type { JournalStore } from "../journal/port.js";
import { serviceApi } from "../service/api.js";
import type { ServiceClient } from "../service/client.js";
import type {
  ExecutionView,
  Intent,
  IntentAt,
  IntentPatch,
  IntentRecord,
  PaidCall,
  SellerSummary,
} from "../model/types.js";

export function view(intent: IntentRecord): ExecutionView {
  const execution = intent.execution;
  return {
    intentId: intent.intentId,
    executionId: intent.executionId,
    action: intent.action,
    status: intent.execStatus ?? intent.state,
    state: intent.state,
    quoteId: intent.quoteId,
    amount: intent.amount !== null ? formatDecimal(intent.amount) : null,
    currency: "USDC",
    payee: intent.payee,
    paymentTransaction: intent.paymentTx,
    settlement: intent.settlement,
    ...(intent.output !== null && intent.output !== undefined ? { output: intent.output } : {}),
    ...(execution?.error ? { error: execution.error } : intent.error ? { error: intent.error } : {}),
    ...(intent.refund ? { refund: intent.refund } : {}),
    ...(intent.refundCredit > 0n ? { refundCredited: formatDecimal(intent.refundCredit) } : {}),
    ...(execution?.providerMeta ? { providerMeta: execution.providerMeta } : {}),
    ...(intent.attention ? { attention: intent.attention } : {}),
    callId: intent.callId,
    createdAt: new Date(intent.createdAt).toISOString(),
    updatedAt: new Date(intent.updatedAt).toISOString(),
  };
}

export async function listExecutions(
  journal: JournalStore,
  opts: { status?: string; action?: string; limit?: number; cursor?: string },
) {
  const limit = Math.max(1, Math.min(100, opts.limit ?? 20));
  const rows = await journal.executions({
    ...readCursor(opts.cursor),
    status: opts.status,
    action: opts.action,
    limit: limit + 1,
  });
  const { page, nextCursor } = pageOf(rows, limit);
  return { items: page.map(view), nextCursor };
}

/** The human's limits as decimal strings. */
export function limitsView(config: Config | undefined) {
  const limits = config?.limits;
  if (!limits) return null;
  return {
    maxPerCall: formatDecimal(limits.maxPerCall),
    maxPerDay: formatDecimal(limits.maxPerDay),
    maxTotal: limits.maxTotal !== undefined ? formatDecimal(limits.maxTotal) : null,
    approvalAbove: formatDecimal(limits.approvalAbove),
    allowActions: limits.allowActions,
    perAction: Object.fromEntries(Object.entries(limits.perAction).map(([k, v]) => [k, formatDecimal(v)])),
  };
}

export async function spending(
  journal: JournalStore,
  config: Config | undefined,
  configIssues: ConfigIssue[] | undefined,
  now: number,
) {
  const [usage, reservedToday, reserved, refunded, shares, networks] = await Promise.all([
    journal.usage(now),
    journal.reserved(now),
    journal.reserved(),
    journal.refundedTotal(),
    journal.spendingByAction(now),
    journal.spendingByNetwork(now),
  ]);
  const limits = config?.limits;
  const fmt = formatDecimal;
  return {
    currency: "USDC" as const,
    limits: limitsView(config),
    spentLast24h: fmt(usage.day - reservedToday),
    reserved: fmt(reserved),
    committedLast24h: fmt(usage.day),
    remainingToday: limits ? fmt(limits.maxPerDay > usage.day ? limits.maxPerDay - usage.day : 0n) : null,
    spentTotal: fmt(usage.total),
    refundsCredited: fmt(refunded),
    remainingTotal:
      limits?.maxTotal !== undefined ? fmt(limits.maxTotal > usage.total ? limits.maxTotal - usage.total : 0n) : null,
    /** paid_fetch's purchases, by origin. */
    byOrigin: originShares(shares, config),
    /** Where the money went: the caps count every network's USDC together. */
    byNetwork: networkShares(networks, config),
    allowOrigins: config?.allowOrigins ?? [],
    ...(configIssues ? { configIssues } : {}),
  };
}

/** What a fresh execution record changes: never the fields an executed intent has proven, but by one as good. */
export type ExecutionPatch = Pick<IntentPatch, "output" | "refund" | "refundState" | "refundSeenAt" | "nextPollAt"> & {
  execution: Execution;
  execStatus: Execution["status"];
};

/**
 * The patch a fresh execution record makes: its status, output and refund claim. A refund
 * claim (or a `refunded` status) only starts a check on chain; it credits nothing itself.
 */
export function executionPatch(intent: IntentRecord, e: Execution, now: number): ExecutionPatch {
  const patch: ExecutionPatch = { execution: e, execStatus: e.status, output: e.output ?? intent.output };
  if (e.refund) patch.refund = e.refund;
  const claimChanged = e.refund !== undefined && e.refund.transaction !== intent.refund?.transaction;
  if ((e.status === "refunded" || e.refund) && (intent.refundState === "none" || claimChanged)) {
    patch.refundState = "pending";
    patch.refundSeenAt = intent.refundSeenAt ?? now;
  }
  return patch;
}

/** What folding an execution record in needs: the journal, the clock, the call's transcript, and the listeners. */
export interface Folding {
  journal: JournalStore;
  now: () => number;
  transcript: (intent: IntentRecord, step: string, data?: Record<string, unknown>) => void;
  /** Tells listeners an execution's record changed. */
  emitUpdate: (intent: IntentRecord, previous: ExecutionStatus | null) => void;
}

/**
 * Folds a fresh execution record from the service into the journal, with `extra` in the
 * same commit (the reconciler's own findings); emits on a status change.
 */
export async function applyExecution(
  f: Folding,
  intent: IntentRecord,
  e: Execution,
  extra: IntentPatch = {},
): Promise<IntentRecord> {
  const now = f.now();
  const patch: IntentPatch = executionPatch(intent, e, now);
  if (
    FINAL_STATUSES.has(e.status) &&
    intent.settlement === "verified" &&
    patch.refundState !== "pending" &&
    intent.refundState !== "pending"
  )
    patch.nextPollAt = null;
  Object.assign(patch, extra);
  await f.journal.update(intent.intentId, patch, now);
  const next = { ...intent, ...patch, updatedAt: now };
  if (intent.execStatus !== e.status) {
    f.transcript(next, "status", { executionId: e.executionId, from: intent.execStatus, to: e.status });
    f.emitUpdate(next, intent.execStatus);
  }
  return next;
}

/**
 * An execution from the journal, refreshed from the service when it is not final — or, by its
 * intent's id, a purchase the service has created no execution for yet (a paid one whose
 * service is silent, say: its `attention` says what the chain shows).
 */
export async function getExecution(
  f: Folding,
  client: ServiceClient | undefined,
  executionId: string,
  refresh: boolean,
): Promise<ExecutionView | undefined> {
  let intent: IntentRecord | undefined =
    (await f.journal.intentByExecution(executionId)) ??
    (executionId.startsWith("int_") ? await f.journal.intent(executionId) : undefined);
  if (!intent) return undefined;
  if (intent.executionId !== executionId) return view(intent); // no execution of its own to refresh
  if (refresh && client && !FINAL_STATUSES.has(intent.execStatus ?? "pending")) {
    try {
      const res = await serviceApi(client).getExecution(executionId);
      if (res.ok && res.body.executionId === executionId) intent = await applyExecution(f, intent, res.body);
    } catch {
      // The journal's copy is still the best answer.
    }
  }
  return view(intent);
}

/**
 * What a paid call answers for an intent at rest: the intent when it was carried out (an
 * action's execution created, a fetch's resource delivered); else the error it stopped with, thrown.
 */
export function executedOrThrow(intent: Intent): IntentAt<"executed"> {
  if (intent.state !== "executed") {
    const error = intent.error;
    if (error)
      throw fromStored(
        error.code,
        error.message,
        { intentId: intent.intentId, ...(error.context ?? {}) },
        error.retryable ?? false,
      );
    throw paidError("outcome_unknown", { problem: "stopped", intentId: intent.intentId, state: intent.state });
  }
  return intent;
}

/** What a paid call answers for its executed intent (with what the service's signed word came to, when it gave one). */
export function paidCallOf(intent: IntentAt<"executed">, callId?: string, seller?: SellerSummary): PaidCall {
  if (intent.kind !== "action")
    throw paidError("outcome_unknown", { problem: "no_execution", intentId: intent.intentId });
  const amount = formatDecimal(intent.amount);
  const call = callId ?? intent.callId;
  return {
    intentId: intent.intentId,
    intentKey: intent.intentKey,
    executionId: intent.executionId,
    status: intent.execStatus,
    action: intent.action,
    quote: { quoteId: intent.quoteId, amount, currency: "USDC", expiresAt: intent.quote.expiresAt },
    payment: {
      transaction: intent.paymentTx,
      amount,
      currency: "USDC",
      settlement: intent.settlement,
      ...(seller ? { seller } : {}),
    },
    ...(intent.attention ? { attention: intent.attention } : {}),
    ...(call ? { callId: call } : {}),
  };
}
