/**
 * Money truth on the fast path, where the proof travels with POST /executions and settles
 * there: the lies money-truth-payments.test.ts tells at /payments/confirm, told where the
 * money now moves, and a service that settles and then answers 500 to every attempt. The
 * chain decides, whatever the service says; the payer's and the payee's
 * balances on the rail's own ledger decide what was paid. Each case runs on each rail
 * (test/helpers/rails.ts): Solana's ledger and the sandbox's EVM ledger.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startConsole } from "../../src/console/server.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { on, type ProxyRule, type SeenRequest } from "../helpers/proxy.js";
import { balances, moved, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const ONCE = { payer: PRICE, payee: PRICE };
const NOTHING = { payer: 0n, payee: 0n };
const PAID_EXECUTION = (r: SeenRequest) =>
  on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined;

/** The service settles the proof (and creates the execution); the answer the engine gets is a refusal of the proof. */
const settleThen402: ProxyRule = {
  match: PAID_EXECUTION,
  action: {
    kind: "rewrite",
    status: 402,
    transform: () => ({
      error: {
        code: "payment_invalid",
        message: "payment proof rejected by the facilitator: transaction_failed",
        reason: "transaction_failed",
      },
    }),
  },
};

const said = (r: PaidCall | PaidActionError) =>
  JSON.stringify(r instanceof PaidActionError ? { ...r.toJSON(), message: r.message } : r);

describe.each(RAILS)("money truth on the fast path, on $name: the proof settles with the execution request", (rail) => {
  let t: TestSandbox;
  let own: TestSandbox | undefined;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox(rail.sandbox);
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every refusal that said nothing was charged: no transfer for it on the ledger, its kept proofs replayed.
    await f?.checkRefusals();
    await f?.close();
    await own?.close();
    f = undefined;
    own = undefined;
  });

  it('settle-then-402 at POST /executions: one debit across 3 retries, attention, never "nothing was charged"', async () => {
    f = await engineFixture({ t, env: rail.env(t), rules: [settleThen402], open: { settleWaitMs: 0 } });
    const before = await balances(rail, t);
    const req = { action: "servers.provision", input: { ...SMALL_SERVER, image: "fast-lie" }, intentKey: "fast-lie" };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await outcome(f.pa.engine.pay(req)));
    expect(await moved(rail, t, before)).toEqual(ONCE);
    for (const r of results) expect(said(r)).not.toMatch(/nothing was charged/i);
    expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(0);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("attention");
    expect(intent.budgetState).toBe("spent");
    expect(f.settledFor(intent.quoteId!)).toBe(1);
    // The evidence: the landed transfer, seen on our own RPC, and a note for a human.
    const payment = (await f.pa.journal.payment(intent.quoteId!))!;
    expect(payment.network).toBe(rail.network);
    expect(payment.fate).toBe("landed");
    expect(intent.paymentTx).toBe(payment.tx);
    expect(intent.settlement).toBe("verified");
    expect(intent.attention).toMatch(/refused a payment that landed on chain|asked for payment again/);
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
    expect(intent.attempt).toBe(0); // only one proof was ever signed
  });

  it('settle-then-500 at POST /executions: one debit across 3 retries, one proof re-sent, held against the caps, never "nothing was charged"', async () => {
    // The service settles the proof and creates the execution, then every answer to it is a 500.
    const settleThen500: ProxyRule = {
      match: PAID_EXECUTION,
      action: {
        kind: "rewrite",
        status: 500,
        transform: () => ({ error: { code: "internal", message: "something went wrong" } }),
      },
    };
    // The engine's clock runs ahead on demand: the reconciler's bound on a silent service passes.
    let ahead = 0;
    const now = () => Date.now() + ahead;
    f = await engineFixture({ t, env: rail.env(t), rules: [settleThen500], open: { settleWaitMs: 0, now } });
    const before = await balances(rail, t);
    const req = { action: "servers.provision", input: { ...SMALL_SERVER, image: "fast-500" }, intentKey: "fast-500" };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await outcome(f.pa.engine.pay(req)));
    expect(await moved(rail, t, before)).toEqual(ONCE);
    for (const r of results) {
      expect(said(r)).not.toMatch(/nothing was charged/i);
      // A 5xx is no answer: the money is in flight, and the same intent may be asked again.
      expect(r).toMatchObject({ code: "service_unavailable", context: { money: "in_flight" } });
    }
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(f.settledFor(intent.quoteId!)).toBe(1);
    expect(f.executionsFor(intent.quoteId!)).toBe(1);
    // One proof only, the journaled one, re-sent with every attempt; the caps still count it.
    expect(intent.attempt).toBe(0);
    const payments = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intent.intentId);
    expect(payments).toHaveLength(1);
    const sent = new Set(f.proxy.seen.filter(PAID_EXECUTION).map((r) => r.headers["x-payment-proof"]));
    expect([...sent]).toEqual([intent.proof]);
    expect(["reserved", "spent"]).toContain(intent.budgetState);
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");

    // The reconciler's sweep resumes it: still no answer, so our own RPC is asked, and it shows
    // the transfer landed: the journal says so (as the settlement's verification would), spent.
    const reconciler = f.pa.reconciler!;
    await reconciler.sweep();
    const settledTx = (
      t.sb.db.prepare(`SELECT transaction_sig AS tx FROM payments WHERE quote_id = ?`).get(intent.quoteId) as {
        tx: string;
      }
    ).tx;
    expect(settledTx).toMatch(rail.tx);
    let payment = (await f.pa.journal.payment(intent.quoteId!))!;
    expect(payment.fate).toBe("landed");
    expect(payment.tx).toBe(settledTx);
    let row = (await f.pa.journal.intent(intent.intentId))!;
    expect(row.state).toBe("paid");
    expect(row.budgetState).toBe("spent");
    expect(row.paymentTx).toBe(settledTx);
    expect(row.settlement).toBe("verified");
    expect(row.attempt).toBe(0);
    expect(row.nextPollAt).not.toBeNull(); // still followed: the execution is asked for again
    expect(row.attention).toBeNull(); // not yet: the service has had less than the bound
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
    expect(await moved(rail, t, before)).toEqual(ONCE);
    // A call now says where the money is: spent, not in flight, never "nothing was charged".
    const later = await outcome(f.pa.engine.pay(req));
    expect(later).toMatchObject({ code: "service_unavailable", context: { money: "settled" } });

    // Past the bound (15 minutes after the transfer landed), the next sweep tells a person
    // what the chain shows, and keeps asking the service.
    ahead += 16 * 60_000;
    const asked = f.proxy.seen.filter(PAID_EXECUTION).length;
    await reconciler.sweep();
    expect(f.proxy.seen.filter(PAID_EXECUTION).length).toBeGreaterThan(asked);
    row = (await f.pa.journal.intent(intent.intentId))!;
    expect(row.state).toBe("paid");
    expect(row.budgetState).toBe("spent");
    expect(row.attention).toContain(`in transaction ${settledTx}`);
    expect(row.attention).toMatch(/0\.288 USDC paid .* landed by \S+Z.* has not created the execution/);
    const flagged = await f.pa.engine.needsAttention();
    expect(flagged.map((v) => v.intentId)).toEqual([intent.intentId]);
    expect(flagged[0]).toMatchObject({ state: "paid", paymentTransaction: settledTx, settlement: "verified" });
    expect(flagged[0]!.attention).toBe(row.attention);
    // The agent reads the same by the intent's id (no execution yet), and so does a person in the console.
    expect(await f.pa.engine.getExecution(intent.intentId)).toMatchObject({
      intentId: intent.intentId,
      executionId: null,
      state: "paid",
      attention: row.attention,
    });
    const desk = await startConsole({
      engine: f.pa.engine,
      journal: f.pa.journal,
      transcripts: f.pa.transcripts,
      home: f.home,
      config: f.pa.config,
      audit: async () => ({}),
    });
    try {
      const person = await loginAsPerson(desk.loginUrl());
      const listed = (await (await person.get("/api/executions?attention=true")).json()) as {
        items: Array<{ intentId: string; attention?: string }>;
      };
      expect(listed.items).toMatchObject([{ intentId: intent.intentId, attention: row.attention }]);
      const page = (await (await person.get(`/api/executions/${intent.intentId}`)).json()) as {
        execution: { attention?: string };
      };
      expect(page.execution.attention).toBe(row.attention);
    } finally {
      await desk.close();
    }
    // Told once: a later sweep asks again without adding to the note.
    await reconciler.sweep();
    expect((await f.pa.journal.intent(intent.intentId))!.attention).toBe(row.attention);

    // The service recovers: the next sweep gets the execution it created, with the same key.
    f.proxy.rules.length = 0;
    await reconciler.sweep();
    row = (await f.pa.journal.intent(intent.intentId))!;
    expect(row.state).toBe("executed");
    expect(row.executionId).not.toBeNull();
    expect(row.budgetState).toBe("spent");
    expect(row.settlement).toBe("verified");
    expect(row.paymentTx).toBe(settledTx);
    // The note about its silence is withdrawn: nothing needs a person any more.
    expect(row.attention).toBeNull();
    expect(await f.pa.engine.needsAttention()).toEqual([]);
    // One execution, one debit, one proof.
    expect(f.executionsFor(intent.quoteId!)).toBe(1);
    expect(f.settledFor(intent.quoteId!)).toBe(1);
    expect(await moved(rail, t, before)).toEqual(ONCE);
    expect((await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intent.intentId)).toHaveLength(1);
    payment = (await f.pa.journal.payment(intent.quoteId!))!;
    expect(payment.fate).toBe("landed");
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
  });

  // On Solana the proof's blockhash expires; on EVM its authorization's validBefore passes (our
  // RPC's newest block at it, the nonce unused there).
  it("a proof refused because it can no longer land (no transfer of it on the ledger) is released and re-signed once", async () => {
    // Anvil's clock does not go back: on EVM the jump past validBefore gets a sandbox of its own.
    const sb = rail.expiryMovesClock ? (own = await startTestSandbox(rail.sandbox)) : t;
    let expired = false;
    f = await engineFixture({
      t: sb,
      env: rail.env(sb),
      rules: [
        {
          match: PAID_EXECUTION,
          action: {
            kind: "dynamic",
            choose: (r) =>
              expired
                ? undefined
                : ((expired = true),
                  { kind: "hold", until: () => rail.expire(sb, r.headers["x-payment-proof"] as string) }),
          },
        },
      ],
    });
    const before = await balances(rail, sb);
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "fast-never" },
    });
    expect(await moved(rail, sb, before)).toEqual(ONCE);
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(intent.attempt).toBe(1);
    const attempts = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === paid.intentId);
    expect(attempts.map((p) => p.fate).sort()).toEqual(["never", "pending"]);
    // The second proof was signed with a fresh lifetime, not the one that could not land:
    // Solana's blockhash, EVM's nonce and validBefore.
    if (rail.name === "solana") expect(new Set(attempts.map((p) => p.blockhash)).size).toBe(2);
    else {
      expect(new Set(attempts.map((p) => p.nonce)).size).toBe(2);
      expect(attempts[1]!.validBefore! > attempts[0]!.validBefore!).toBe(true);
    }
  });

  it("a service that demands another payment at POST /executions than it quoted: nothing more is signed", async () => {
    f = await engineFixture({
      t,
      env: rail.env(t),
      rules: [
        {
          match: PAID_EXECUTION,
          action: {
            kind: "status",
            status: 402,
            body: {
              error: {
                code: "payment_required",
                message: "the price went up",
                paymentRequired: { x402Version: 2, accepts: [] },
              },
            },
          },
        },
      ],
      open: { settleWaitMs: 0 },
    });
    const before = await balances(rail, t);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "fast-drift" },
      intentKey: "fast-drift",
    };
    const r = await outcome(f.pa.engine.pay(req));
    expect(r).toBeInstanceOf(PaidActionError);
    // The proof left with the request: until the chain says it can never land, it counts as possibly spent.
    expect(said(r)).not.toMatch(/nothing was charged/i);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("unsettled");
    expect(intent.budgetState).toBe("reserved");
    expect((await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intent.intentId)).toHaveLength(1);
    expect(await moved(rail, t, before)).toEqual(NOTHING);
  });
});
