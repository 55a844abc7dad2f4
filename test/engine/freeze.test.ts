/**
 * The freeze and the engine, against the reference service through a proxy: a freeze made
 * by another process on the same journal (another server, or a person's `freeze`) stops a
 * paid call before anything is recorded or quoted, and one already under way at its
 * signature — nothing signed, nothing left reserved, the wallet untouched — while a purchase
 * whose proof already left is followed to its end. Runs on SQLite and (the "engine on
 * postgres" project) on a PostgreSQL journal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Freeze, JournalStore } from "../../src/engine/journal/port.js";
import { engineFixture, openTestJournal, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { waitFor } from "../helpers/wait.js";

const PRICE = 288_000n;

let f: EngineFixture;
/** The journal as another process holds it: where the freeze is made. */
let other: JournalStore;
/** When set, the service's answers to quotes come this much later. */
let quoteDelayMs: number | undefined;
/** When set, the service's answers to payment confirmations come this much later. */
let confirmDelayMs: number | undefined;

beforeAll(async () => {
  f = await engineFixture({
    rules: [
      {
        match: on("POST", "/v1/quotes"),
        action: {
          kind: "dynamic",
          choose: () => (quoteDelayMs === undefined ? undefined : { kind: "delay", ms: quoteDelayMs }),
        },
      },
      {
        match: on("POST", "/v1/payments/confirm"),
        action: {
          kind: "dynamic",
          choose: () => (confirmDelayMs === undefined ? undefined : { kind: "delay", ms: confirmDelayMs }),
        },
      },
    ],
  });
  other = await openTestJournal(f.env);
}, 120_000);
afterAll(async () => {
  await other?.close();
  await f?.close();
});

const balance = () => f.t.usdc(f.t.wallet.address);
const freeze = (reason: string): Freeze => ({ reason, since: Date.now(), by: "terminal" });
const requests = (method: string, path: string) => f.proxy.seen.filter(on(method, path)).length;

/** Waits until the proxy has seen `n` requests of a kind. */
async function seen(method: string, path: string, n: number): Promise<void> {
  await waitFor(() => requests(method, path) >= n, {
    intervalMs: 10,
    what: () => `${n} ${method} ${path} at the service (it saw ${requests(method, path)})`,
  });
}

/** What the journal holds, in all: intents, signed proofs, and what is reserved. */
async function journalFacts() {
  return {
    intents: (await other.intentsSince(0)).length,
    payments: (await other.paymentsSince(0)).length,
    reserved: await other.reserved(),
  };
}

describe("engine: frozen payments", () => {
  it("a paid call is refused `frozen` before anything is recorded or quoted; quoting still works and says it is not payable; unfrozen, the same call pays", async () => {
    await other.freeze(freeze("audit in progress"));
    try {
      const before = {
        balance: await balance(),
        journal: await journalFacts(),
        quotes: requests("POST", "/v1/quotes"),
      };
      const e = await refusal(
        f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, intentKey: "freeze-early-1" }),
      );
      expect(e.code).toBe("frozen");
      expect(e.message).toMatch(
        /^payments are frozen by a person \(reason: "audit in progress", since \d{4}-\d\d-\d\dT/,
      );
      expect(e.context).toMatchObject({ reason: "audit in progress", frozenBy: "terminal" });
      expect(await balance()).toBe(before.balance);
      expect(await journalFacts()).toEqual(before.journal);
      expect(await other.intentByKey("freeze-early-1")).toBeUndefined();
      expect(requests("POST", "/v1/quotes")).toBe(before.quotes);

      const q = await f.pa.engine.quote({ action: "servers.provision", input: SMALL_SERVER });
      expect(q).toMatchObject({
        amount: "0.288",
        payable: false,
        refusal: { code: "frozen", reason: "audit in progress" },
      });
      expect(await journalFacts()).toEqual(before.journal);
    } finally {
      await other.unfreeze();
    }
    const before = await balance();
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: SMALL_SERVER,
      intentKey: "freeze-early-1",
    });
    expect(paid.executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before - PRICE);
  });

  it("a freeze that lands while the call is being quoted stops it at the signature: nothing signed, the reservation released, the wallet untouched; unfrozen, the same intentKey pays once", async () => {
    const before = { balance: await balance(), quotes: requests("POST", "/v1/quotes") };
    quoteDelayMs = 1_500;
    let call: Promise<unknown>;
    try {
      call = f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, intentKey: "freeze-late-1" });
      await seen("POST", "/v1/quotes", before.quotes + 1);
      await other.freeze(freeze("stop now"));
    } finally {
      quoteDelayMs = undefined;
    }
    try {
      const e = await refusal(call);
      expect(e.code).toBe("frozen");
      const row = (await other.intentByKey("freeze-late-1"))!;
      expect(row).toMatchObject({ state: "failed", proof: null, budgetState: "released", error: { code: "frozen" } });
      expect(await other.payment(row.quoteId!)).toBeUndefined();
      expect(f.settledFor(row.quoteId!)).toBe(0);
      expect(await other.reserved()).toBe(0n);
      expect(await balance()).toBe(before.balance);
    } finally {
      await other.unfreeze();
    }
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: SMALL_SERVER,
      intentKey: "freeze-late-1",
    });
    expect(paid.executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before.balance - PRICE);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
  });

  it("a purchase whose proof had left when the freeze came is followed to its execution, and a retry of it is answered while frozen", async () => {
    const before = { balance: await balance(), confirms: requests("POST", "/v1/payments/confirm") };
    confirmDelayMs = 1_500;
    let paid: Awaited<ReturnType<typeof f.pa.engine.pay>>;
    try {
      const call = f.pa.engine.pay({
        action: "servers.provision",
        input: SMALL_SERVER,
        intentKey: "freeze-inflight-1",
      });
      await seen("POST", "/v1/payments/confirm", before.confirms + 1);
      await other.freeze(freeze("mid-flight"));
      paid = await call;
    } finally {
      confirmDelayMs = undefined;
    }
    try {
      expect(paid.executionId).toMatch(/^exe_/);
      expect(await balance()).toBe(before.balance - PRICE);
      expect(await other.intent(paid.intentId)).toMatchObject({ state: "executed", budgetState: "spent" });
      const again = await f.pa.engine.pay({
        action: "servers.provision",
        input: SMALL_SERVER,
        intentKey: "freeze-inflight-1",
      });
      expect(again.executionId).toBe(paid.executionId);
      expect(await balance()).toBe(before.balance - PRICE);
    } finally {
      await other.unfreeze();
    }
  });

  it("a purchase left unfinished by a server that is gone is not resumed while frozen (no request made), and is once unfrozen", async () => {
    const before = { balance: await balance(), quotes: requests("POST", "/v1/quotes") };
    const now = Date.now();
    // As a server that died right after recording it leaves it: new, its lease run out.
    await other.insertIntent({
      intentId: "int_orphanfreeze1",
      intentKey: "freeze-orphan-1",
      idemKey: "freeze-orphan-1",
      service: f.pa.engine.service,
      action: "servers.provision",
      input: { ...SMALL_SERVER },
      fingerprint: "fp-orphan",
      agentBudget: null,
      callId: null,
      createdAt: now,
      leaseOwner: "gone-server",
      leaseUntil: now - 1,
    });
    await other.freeze(freeze("orphans wait"));
    try {
      expect((await f.pa.engine.resumeUnfinished()).resumed).toBe(0);
      expect(await other.intent("int_orphanfreeze1")).toMatchObject({ state: "new", quoteId: null });
      expect(requests("POST", "/v1/quotes")).toBe(before.quotes);
    } finally {
      await other.unfreeze();
    }
    expect((await f.pa.engine.resumeUnfinished()).resumed).toBe(1);
    expect(await other.intent("int_orphanfreeze1")).toMatchObject({ state: "executed", budgetState: "spent" });
    expect(await balance()).toBe(before.balance - PRICE);
  });
});
