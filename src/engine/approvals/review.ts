/**
 * What a person needs to decide on an approval, whichever screen shows it (the terminal's
 * `approve`, the console): the action, the full input, the amount, who is paid, when the
 * quote expires, and what the day's and the total spend will be once it is paid. The
 * arithmetic is pure (`reviewOf`); the two readers only gather its inputs from the journal.
 */
import { formatDecimal } from "../../domain/money.js";
import type { Config } from "../config/config.js";
import type { JournalStore } from "../journal/port.js";
import type { Usage } from "../budget/policy.js";
import type { Quote } from "../../domain/wire.js";
import type { Approval, Intent } from "../model/types.js";

export interface ApprovalReview {
  approvalId: string;
  intentId: string;
  action: string;
  status: "pending" | "approved" | "declined" | "used";
  /** The full input of the purchase (a fetch's: its public view — header names, never values). */
  input: unknown;
  /** A paid_fetch purchase: what is fetched (the URL with its query values redacted). */
  fetch?: { method: string; url: string; origin: string };
  amount: string;
  currency: "USDC";
  /** The quote's payee, else the payTo of the quote's payment challenge. */
  payee: string | null;
  quoteId: string;
  expiresAt: string;
  createdAt: string;
  decidedAt: string | null;
  expired: boolean;
  /** What spend will be once this is paid. */
  after: {
    spentLast24h: string;
    maxPerDay: string | null;
    spentTotal: string;
    maxTotal: string | null;
  };
}

/** What a purchase says of whom it pays (a fetch has no quote: its payee is its 402's payTo). */
export type PayeeSource = { payee?: string | null; quote?: Quote | null };

/** Who a purchase pays: the quote's payee, else its payment challenge's payTo, else null. */
export function intentPayee(intent: PayeeSource | undefined): string | null {
  return intent?.payee ?? intent?.quote?.paymentRequirement.accepts?.[0]?.payTo ?? null;
}

/** Who is paid: the approval's payee, else the purchase's (intentPayee). */
export function payeeOf(approval: Pick<Approval, "payee">, intent: PayeeSource | undefined): string | null {
  return approval.payee ?? intentPayee(intent);
}

/** What a fetch purchase fetches, from its public input (never its request, a secret). */
function fetchOf(intent: Intent | undefined): { fetch?: ApprovalReview["fetch"] } {
  if (intent?.kind !== "fetch") return {};
  const input = intent.input as { method?: unknown; url?: unknown };
  return {
    fetch: {
      method: typeof input.method === "string" ? input.method : "?",
      url: typeof input.url === "string" ? input.url : "?",
      origin: intent.origin ?? "?",
    },
  };
}

/**
 * The review of one approval, given the journal's usage now (reservations included). Its
 * amount is added to the spend unless the intent already holds it (a used approval whose
 * intent reserved or spent the money is counted once).
 */
export function reviewOf(
  approval: Approval,
  intent: Intent | undefined,
  usage: Usage,
  limits: Pick<Config["limits"], "maxPerDay" | "maxTotal"> | undefined,
  now: number,
): ApprovalReview {
  const held = intent !== undefined && (intent.budgetState === "reserved" || intent.budgetState === "spent");
  const add = held ? 0n : approval.amount;
  return {
    approvalId: approval.approvalId,
    intentId: approval.intentId,
    action: approval.action,
    status: approval.status,
    input: intent?.input ?? null,
    ...fetchOf(intent),
    amount: formatDecimal(approval.amount),
    currency: "USDC",
    payee: payeeOf(approval, intent),
    quoteId: approval.quoteId,
    expiresAt: new Date(approval.expiresAt).toISOString(),
    createdAt: new Date(approval.createdAt).toISOString(),
    decidedAt: approval.decidedAt === null ? null : new Date(approval.decidedAt).toISOString(),
    expired: approval.expiresAt <= now,
    after: {
      spentLast24h: formatDecimal(usage.day + add),
      maxPerDay: limits ? formatDecimal(limits.maxPerDay) : null,
      spentTotal: formatDecimal(usage.total + add),
      maxTotal: limits?.maxTotal !== undefined ? formatDecimal(limits.maxTotal) : null,
    },
  };
}

/** One approval's review, or undefined when there is no such approval. */
export async function approvalReview(
  journal: JournalStore,
  config: Config | undefined,
  approvalId: string,
  now: number,
): Promise<ApprovalReview | undefined> {
  const approval = await journal.approval(approvalId);
  if (!approval) return undefined;
  const [intent, usage] = await Promise.all([journal.intent(approval.intentId), journal.usage(now, true)]);
  return reviewOf(approval, intent, usage, config?.limits, now);
}

/** Every approval still waiting for a person (pending and not expired), oldest first. */
export async function pendingReviews(
  journal: JournalStore,
  config: Config | undefined,
  now: number,
): Promise<ApprovalReview[]> {
  const pending = await journal.pendingApprovals(now);
  if (pending.length === 0) return [];
  const usage = await journal.usage(now, true);
  const intents = await Promise.all(pending.map((a) => journal.intent(a.intentId)));
  return pending.map((a, i) => reviewOf(a, intents[i], usage, config?.limits, now));
}
