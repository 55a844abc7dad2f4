/**
 * The spending breakdown's SQL for both stores (sqlite.ts, postgres.ts): each action's share
 * of the budget (each origin's, for paid_fetch's purchases), each network's, and what was
 * held per UTC day. The sums are usage's own — reserved or spent,
 * minus refunds credited, by the reservation's time — so the shares add up to `usage`,
 * `reserved` and `refundedTotal` exactly.
 */
import { DAY_MS, type ActionSpend, type DaySpend, type NetworkSpend } from "./port.js";

const HELD = `budget_state IN ('reserved', 'spent')`;
/** What a share is keyed by: an action's name, a fetch's origin. */
const KEY = `CASE WHEN kind = 'fetch' THEN origin ELSE action END`;

/** SQLite: amounts are TEXT (u64), summed as 64-bit integers (read with safeIntegers). */
export const SQLITE_BY_ACTION = `SELECT kind, ${KEY} AS action,
    COALESCE(SUM(CASE WHEN ${HELD} AND budget_at > @since THEN CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER) END), 0) AS day,
    COALESCE(SUM(CASE WHEN budget_state = 'reserved' AND budget_at > @since THEN CAST(budget_amount AS INTEGER) END), 0) AS reserved_day,
    COALESCE(SUM(CASE WHEN ${HELD} THEN CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER) END), 0) AS total,
    COALESCE(SUM(CAST(refund_credit AS INTEGER)), 0) AS refunded,
    COALESCE(SUM(${HELD}), 0) AS count
  FROM intents WHERE ${HELD} OR CAST(refund_credit AS INTEGER) <> 0 GROUP BY kind, ${KEY} ORDER BY kind, ${KEY}`;

export const SQLITE_BY_DAY = `SELECT budget_at / ${DAY_MS} AS day, COALESCE(SUM(CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER)), 0) AS held
  FROM intents INDEXED BY intents_budget WHERE ${HELD} AND budget_at >= ? GROUP BY day ORDER BY day`;

/** PostgreSQL: NUMERIC sums, read back as text; the same byte order of action names as SQLite's. */
export const PG_BY_ACTION = `SELECT kind, ${KEY} AS action,
    COALESCE(SUM(budget_amount - refund_credit) FILTER (WHERE ${HELD} AND budget_at > $1), 0)::text AS day,
    COALESCE(SUM(budget_amount) FILTER (WHERE budget_state = 'reserved' AND budget_at > $1), 0)::text AS reserved_day,
    COALESCE(SUM(budget_amount - refund_credit) FILTER (WHERE ${HELD}), 0)::text AS total,
    COALESCE(SUM(refund_credit), 0)::text AS refunded,
    COUNT(*) FILTER (WHERE ${HELD}) AS count
  FROM intents WHERE ${HELD} OR refund_credit <> 0 GROUP BY kind, ${KEY} ORDER BY kind, ${KEY} COLLATE "C"`;

export const PG_BY_DAY = `SELECT budget_at / ${DAY_MS} AS day, COALESCE(SUM(budget_amount - refund_credit), 0)::text AS held
  FROM intents WHERE ${HELD} AND budget_at >= $1 GROUP BY 1 ORDER BY 1`;

/**
 * The network a purchase is paid on: its payment record's (the proof signed), else the
 * requirement it reserved for (reserved, not signed yet); null for records older than both.
 */
const SQLITE_NETWORK = `COALESCE(p.network, json_extract(i.requirements, '$.network'))`;
const PG_NETWORK = `COALESCE(p.network, i.requirements::json ->> 'network')`;

export const SQLITE_BY_NETWORK = `SELECT ${SQLITE_NETWORK} AS network,
    COALESCE(SUM(CASE WHEN ${HELD} AND budget_at > @since THEN CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER) END), 0) AS day,
    COALESCE(SUM(CASE WHEN budget_state = 'reserved' AND budget_at > @since THEN CAST(budget_amount AS INTEGER) END), 0) AS reserved_day,
    COALESCE(SUM(CASE WHEN ${HELD} THEN CAST(budget_amount AS INTEGER) - CAST(refund_credit AS INTEGER) END), 0) AS total,
    COALESCE(SUM(CAST(refund_credit AS INTEGER)), 0) AS refunded,
    COALESCE(SUM(${HELD}), 0) AS count
  FROM intents i LEFT JOIN payments p ON p.quote_id = i.quote_id
  WHERE ${HELD} OR CAST(refund_credit AS INTEGER) <> 0 GROUP BY 1 ORDER BY 1`;

export const PG_BY_NETWORK = `SELECT ${PG_NETWORK} AS network,
    COALESCE(SUM(budget_amount - refund_credit) FILTER (WHERE ${HELD} AND budget_at > $1), 0)::text AS day,
    COALESCE(SUM(budget_amount) FILTER (WHERE budget_state = 'reserved' AND budget_at > $1), 0)::text AS reserved_day,
    COALESCE(SUM(budget_amount - refund_credit) FILTER (WHERE ${HELD}), 0)::text AS total,
    COALESCE(SUM(refund_credit), 0)::text AS refunded,
    COUNT(*) FILTER (WHERE ${HELD}) AS count
  FROM intents i LEFT JOIN payments p ON p.quote_id = i.quote_id
  WHERE ${HELD} OR refund_credit <> 0 GROUP BY 1 ORDER BY ${PG_NETWORK} COLLATE "C"`;

/** A row of either store's by-network query. */
export function toNetworkSpend(r: Record<string, unknown>): NetworkSpend {
  const big = (v: unknown) => BigInt(v as bigint | string);
  return {
    network: typeof r.network === "string" ? r.network : null,
    day: big(r.day),
    reservedDay: big(r.reserved_day),
    total: big(r.total),
    refunded: big(r.refunded),
    count: Number(r.count),
  };
}

/** A row of either store's by-action query (bigints from SQLite, decimal text from PostgreSQL). */
export function toActionSpend(r: Record<string, unknown>): ActionSpend {
  const big = (v: unknown) => BigInt(v as bigint | string);
  return {
    kind: r.kind === "fetch" ? "fetch" : "action",
    action: String(r.action),
    day: big(r.day),
    reservedDay: big(r.reserved_day),
    total: big(r.total),
    refunded: big(r.refunded),
    count: Number(r.count),
  };
}

export function toDaySpend(r: Record<string, unknown>): DaySpend {
  return { day: Number(r.day), held: BigInt(r.held as bigint | string) };
}
