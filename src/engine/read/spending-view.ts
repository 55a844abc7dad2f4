/**
 * The spending breakdown a person reads next to `spending()`: each action's share of the
 * 24 h and total spend against its per-call cap, refunds credited, and the last days' spend.
 * Counted exactly as the caps count it (journal.usage): reserved or spent, minus refunds
 * credited, by the reservation's time — so the actions' shares add up to spending()'s
 * spentLast24h and spentTotal.
 */
import { formatDecimal } from "../../domain/money.js";
import type { Config } from "../config/config.js";
import { DAY_MS } from "../journal/port.js";
import type { ActionSpend, JournalStore, NetworkSpend } from "../journal/port.js";
import { networkName } from "../config/networks.js";
import { callCeiling } from "../budget/policy.js";

export interface ActionSpendView {
  action: string;
  /** Spent in the rolling 24 h window (what is still only reserved is not counted). */
  spentLast24h: string;
  /** Held ever (reserved included), minus refunds credited: spending()'s spentTotal, for this action. */
  spentTotal: string;
  refunded: string;
  /** The highest price one call of this action may pay (maxPerCall lowered by perAction), or null without a valid configuration. */
  perCallCap: string | null;
  /** Purchases that hold budget (reserved or spent). */
  count: number;
}

/** An origin's share, for x402 resources bought with paid_fetch. */
export interface OriginSpendView {
  origin: string;
  spentLast24h: string;
  spentTotal: string;
  /** The highest price one paid_fetch to this origin may pay (maxPerCall lowered by perOrigin). */
  perCallCap: string | null;
  count: number;
}

/** The origins' shares of the spend (paid_fetch), as the caps count it. */
export function originShares(shares: readonly ActionSpend[], config: Config | undefined): OriginSpendView[] {
  return shares
    .filter((a) => a.kind === "fetch")
    .map((a) => ({
      origin: a.action,
      spentLast24h: formatDecimal(a.day - a.reservedDay),
      spentTotal: formatDecimal(a.total),
      perCallCap: config ? formatDecimal(callCeiling(config.limits, "paid_fetch", undefined, a.action).ceiling) : null,
      count: a.count,
    }));
}

/** A network's share: the caps count USDC on every rail together, this says where it went. */
export interface NetworkSpendView {
  /** CAIP-2. */
  network: string;
  /** Its short name (solana-devnet, base-sepolia, …), or the CAIP-2 id. */
  name: string;
  spentLast24h: string;
  spentTotal: string;
  refunded: string;
  count: number;
}

/** The networks' shares of the spend, as the caps count it (a share journaled without a network: the Solana network's). */
export function networkShares(shares: readonly NetworkSpend[], config: Config | undefined): NetworkSpendView[] {
  const merged = new Map<string, NetworkSpend>();
  for (const s of shares) {
    const network = s.network ?? config?.network ?? "unknown";
    const m = merged.get(network);
    merged.set(
      network,
      m
        ? {
            network,
            day: m.day + s.day,
            reservedDay: m.reservedDay + s.reservedDay,
            total: m.total + s.total,
            refunded: m.refunded + s.refunded,
            count: m.count + s.count,
          }
        : { ...s, network },
    );
  }
  return [...merged.values()].map((s) => ({
    network: s.network!,
    name: networkName(s.network!),
    spentLast24h: formatDecimal(s.day - s.reservedDay),
    spentTotal: formatDecimal(s.total),
    refunded: formatDecimal(s.refunded),
    count: s.count,
  }));
}

export interface DaySpendView {
  /** YYYY-MM-DD (UTC). */
  day: string;
  /** Held for reservations made that day, minus refunds credited. */
  spent: string;
}

/** Each action's spend, and the last `days` UTC days' (today included, oldest first, every day listed). */
export async function spendingBreakdown(
  journal: JournalStore,
  config: Config | undefined,
  now: number,
  days = 14,
): Promise<{ byAction: ActionSpendView[]; byOrigin: OriginSpendView[]; days: DaySpendView[] }> {
  const today = Math.floor(now / DAY_MS);
  const first = today - (days - 1);
  const [actions, perDay] = await Promise.all([journal.spendingByAction(now), journal.spendingByDay(first * DAY_MS)]);
  const held = new Map(perDay.map((d) => [d.day, d.held]));
  return {
    byAction: actions
      .filter((a) => a.kind === "action")
      .map((a) => ({
        action: a.action,
        spentLast24h: formatDecimal(a.day - a.reservedDay),
        spentTotal: formatDecimal(a.total),
        refunded: formatDecimal(a.refunded),
        perCallCap: config ? formatDecimal(callCeiling(config.limits, a.action).ceiling) : null,
        count: a.count,
      })),
    byOrigin: originShares(actions, config),
    days: Array.from({ length: days }, (_, i) => {
      const day = first + i;
      return { day: new Date(day * DAY_MS).toISOString().slice(0, 10), spent: formatDecimal(held.get(day) ?? 0n) };
    }),
  };
}
