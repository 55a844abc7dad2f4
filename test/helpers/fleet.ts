/**
 * Helpers for the fleet test (test/hostile/fleet.test.ts): several MCP server processes on
 * one PostgreSQL journal, each in a slot that can be SIGKILLed and restarted on the same
 * home; a seeded PRNG so a run can be replayed; and what the journal (read with pg directly)
 * and the sandbox's own database say once the dust has settled.
 */
import pg from "pg";
import type { TestSandbox } from "./sandbox.js";
import { startServer, type McpServerProcess } from "./mcp.js";

export { prng } from "./prng.js";

/** One server of the fleet: its home and environment stay, its process may be killed and replaced. */
export interface Slot {
  index: number;
  home: string;
  env: Record<string, string>;
  /** Generation of the current process (0 for the first, +1 per restart). */
  gen: number;
  server: McpServerProcess;
  /** Every process this slot ran, oldest first (for their stderr). */
  all: McpServerProcess[];
  /** Generations that were SIGKILLed. */
  killed: Set<number>;
}

export async function startSlot(index: number, home: string, env: Record<string, string>): Promise<Slot> {
  const server = await startServer({ home, env, timeoutMs: 30_000 });
  return { index, home, env, gen: 0, server, all: [server], killed: new Set() };
}

/** SIGKILLs the slot's process, waits until it is gone, and starts a new one on the same home and journal. */
export async function killAndRestart(slot: Slot): Promise<void> {
  const victim = slot.server;
  slot.killed.add(slot.gen);
  process.kill(victim.pid, "SIGKILL");
  await victim.exited;
  await victim.close(); // the client side: rejects what was still pending on it
  const next = await startServer({ home: slot.home, env: slot.env, timeoutMs: 30_000 });
  slot.gen++;
  slot.server = next;
  slot.all.push(next);
}

/** Closes the slot's process gracefully and starts a new one on the same home (an operator's restart). */
export async function restart(slot: Slot): Promise<void> {
  await slot.server.close();
  const next = await startServer({ home: slot.home, env: slot.env, timeoutMs: 30_000 });
  slot.gen++;
  slot.server = next;
  slot.all.push(next);
}

export const UNFINISHED = ["new", "quoted", "reserved", "signed", "unsettled", "paid"];

export interface JournalIntent {
  intentId: string;
  intentKey: string;
  state: string;
  attempt: number;
  quoteId: string | null;
  budgetState: string;
  budgetAmount: bigint;
  executionId: string | null;
  execStatus: string | null;
  settlement: string;
  nextPollAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  errorCode: string | null;
  attention: string | null;
}

export interface JournalFacts {
  intents: JournalIntent[];
  /** Every signed proof the journal kept: quote id -> intent id. */
  payments: Map<string, { intentId: string; fate: string }>;
}

/** The whole journal, read straight from PostgreSQL. */
export async function readJournal(db: pg.Pool): Promise<JournalFacts> {
  const intents = await db.query(
    `SELECT intent_id, intent_key, state, attempt, quote_id, budget_state, COALESCE(budget_amount, 0)::text AS budget_amount, execution_id, exec_status,
            settlement, next_poll_at::text AS next_poll_at, lease_owner, lease_until::text AS lease_until, error, attention
       FROM intents ORDER BY created_at, intent_id`,
  );
  const payments = await db.query(`SELECT quote_id, intent_id, fate FROM payments`);
  return {
    intents: intents.rows.map((r) => ({
      intentId: r.intent_id,
      intentKey: r.intent_key,
      state: r.state,
      attempt: Number(r.attempt),
      quoteId: r.quote_id,
      budgetState: r.budget_state,
      budgetAmount: BigInt(r.budget_amount),
      executionId: r.execution_id,
      execStatus: r.exec_status,
      settlement: r.settlement,
      nextPollAt: r.next_poll_at === null ? null : Number(r.next_poll_at),
      leaseOwner: r.lease_owner,
      leaseUntil: r.lease_until === null ? null : Number(r.lease_until),
      errorCode: r.error ? ((JSON.parse(r.error) as { code?: string }).code ?? null) : null,
      attention: r.attention,
    })),
    payments: new Map(
      payments.rows.map((r) => [r.quote_id as string, { intentId: r.intent_id as string, fate: r.fate as string }]),
    ),
  };
}

/** Intents the journal still has to drive or follow. */
export async function pending(db: pg.Pool): Promise<{ unfinished: number; following: number }> {
  const { rows } = await db.query(
    `SELECT COUNT(*) FILTER (WHERE state = ANY($1::text[]))::int AS unfinished, COUNT(*) FILTER (WHERE next_poll_at IS NOT NULL)::int AS following FROM intents`,
    [UNFINISHED],
  );
  return { unfinished: rows[0].unfinished as number, following: rows[0].following as number };
}

export interface SandboxFacts {
  payments: Array<{ quoteId: string; status: string; amount: bigint }>;
  executions: Array<{ executionId: string; quoteId: string; status: string }>;
}

/** What the reference service recorded: every payment (by quote) and every execution. */
export function readSandbox(t: TestSandbox): SandboxFacts {
  const payments = t.sb.db.prepare(`SELECT quote_id, status, amount FROM payments`).all() as Array<{
    quote_id: string;
    status: string;
    amount: string;
  }>;
  const executions = t.sb.db.prepare(`SELECT execution_id, quote_id, status FROM executions`).all() as Array<{
    execution_id: string;
    quote_id: string;
    status: string;
  }>;
  return {
    payments: payments.map((p) => ({ quoteId: p.quote_id, status: p.status, amount: BigInt(p.amount) })),
    executions: executions.map((e) => ({ executionId: e.execution_id, quoteId: e.quote_id, status: e.status })),
  };
}

/** Every line the servers wrote on stderr, with ids and numbers folded so that alike lines count together. */
export function stderrDigest(texts: string[]): Map<string, number> {
  const digest = new Map<string, number>();
  for (const text of texts) {
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      const folded = line
        .replace(/\b(int|exe|qt|q|call|apr|svr)_[A-Za-z0-9]+/g, "$1_…")
        .replace(/[1-9A-HJ-NP-Za-km-z]{32,90}/g, "<b58>")
        .replace(/\d+/g, "N")
        .slice(0, 300);
      digest.set(folded, (digest.get(folded) ?? 0) + 1);
    }
  }
  return digest;
}
