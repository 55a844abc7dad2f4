/**
 * The money checks of the fleet test (test/hostile/fleet.test.ts): what the wallet and the
 * service held before a part began, and, once the dust has settled, that the wallet, the
 * service's records, the journal and the store's own sums agree to the atomic unit.
 */
import type pg from "pg";
import { expect } from "vitest";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { readJournal, readSandbox, type JournalFacts } from "./fleet.js";
import type { TestSandbox } from "./sandbox.js";

export interface Before {
  wallet: bigint;
  quotes: Set<string>;
  executions: Set<string>;
}

/** What a run's money is held to: the service and wallet, the daily cap, the price of one call. */
export interface FleetMoney {
  t: TestSandbox;
  cap: bigint;
  price: bigint;
}

/** The checks, on what `run()` returns at each call (beforeAll sets it after the checks are made). */
export function fleetMoney(run: () => FleetMoney) {
  /** The wallet's balance and what the service recorded so far. */
  async function snapshot(): Promise<Before> {
    const { t } = run();
    const sandbox = readSandbox(t);
    return {
      wallet: await t.usdc(t.wallet.address),
      quotes: new Set(sandbox.payments.map((p) => p.quoteId)),
      executions: new Set(sandbox.executions.map((e) => e.executionId)),
    };
  }

  /** The money checks both parts share; returns the journal's spent sum. */
  async function moneyAgrees(
    db: pg.Pool,
    url: string,
    before: Before,
    clientPaid: string[],
  ): Promise<{ facts: JournalFacts; spent: bigint; paid: number }> {
    const { t, cap, price } = run();
    const facts = await readJournal(db);
    const walletBefore = before.wallet;
    // What the service recorded since this part began (the sandbox is shared by both parts).
    const all = readSandbox(t);
    const sandbox = {
      payments: all.payments.filter((p) => !before.quotes.has(p.quoteId)),
      executions: all.executions.filter((e) => !before.executions.has(e.executionId)),
    };
    const walletAfter = await t.usdc(t.wallet.address);

    const spentIntents = facts.intents.filter((x) => x.budgetState === "spent");
    const spent = spentIntents.reduce((a, x) => a + x.budgetAmount, 0n);
    const executed = facts.intents.filter((x) => x.executionId !== null);

    // The wallet: exactly what the journal says was spent, to the atomic unit; never above the cap.
    expect(walletBefore - walletAfter).toBe(spent);
    expect(spent).toBeLessThanOrEqual(cap);
    // Every spent intent has its execution, and the other way round; each is one price.
    expect(spentIntents.map((x) => x.intentId).sort()).toEqual(executed.map((x) => x.intentId).sort());
    for (const x of spentIntents) expect(x.budgetAmount).toBe(price);

    // The service: one payment per quote at most, every one settled, one execution per settled payment.
    const perQuote = new Map<string, number>();
    for (const p of sandbox.payments) perQuote.set(p.quoteId, (perQuote.get(p.quoteId) ?? 0) + 1);
    expect([...perQuote.values()].filter((n) => n > 1)).toEqual([]);
    expect(sandbox.payments.filter((p) => p.status !== "settled")).toEqual([]);
    expect(sandbox.payments.reduce((a, p) => a + p.amount, 0n)).toBe(spent);
    expect(sandbox.executions.length).toBe(sandbox.payments.length);
    expect(sandbox.executions.map((e) => e.quoteId).sort()).toEqual(sandbox.payments.map((p) => p.quoteId).sort());

    // The service's executions are exactly the journal's, and no intent has two.
    expect(sandbox.executions.map((e) => e.executionId).sort()).toEqual(executed.map((x) => x.executionId!).sort());
    const intentOf = sandbox.executions.map((e) => facts.payments.get(e.quoteId)?.intentId);
    expect(intentOf.filter((x) => x === undefined)).toEqual([]);
    expect(new Set(intentOf).size).toBe(intentOf.length);
    for (const x of executed) expect(facts.payments.get(x.quoteId!)?.intentId).toBe(x.intentId);

    // The reconciler followed every execution to the end, and saw each settlement on chain.
    for (const x of executed) {
      expect({
        id: x.intentId,
        state: x.state,
        status: x.execStatus,
        settlement: x.settlement,
        nextPollAt: x.nextPollAt,
      }).toEqual({
        id: x.intentId,
        state: "executed",
        status: "completed",
        settlement: "verified",
        nextPollAt: null,
      });
    }
    expect(sandbox.executions.filter((e) => e.status !== "completed")).toEqual([]);

    // Every call a client saw paid is one of the journal's executions, and none was seen twice.
    const known = new Set(executed.map((x) => x.executionId));
    expect(clientPaid.filter((id) => !known.has(id))).toEqual([]);
    expect(new Set(clientPaid).size).toBe(clientPaid.length);

    // The store's own sum agrees.
    const store = await openPostgresJournal(url);
    try {
      const usage = await store.usage(Date.now());
      expect(usage.day).toBe(spent);
      expect(usage.total).toBe(spent);
      expect(await store.reserved()).toBe(0n);
    } finally {
      await store.close();
    }
    return { facts, spent, paid: executed.length };
  }

  return { snapshot, moneyAgrees };
}
