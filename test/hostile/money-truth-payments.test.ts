/**
 * Money truth from the chain: a service that errs or lies after it has been handed a proof at
 * /payments/confirm. Each case runs the engine against the real reference service through a
 * programmable proxy, on each rail (test/helpers/rails.ts); the payer's and the payee's
 * balances on that rail's ledger decide what was paid. (One driver per intent:
 * money-truth-drivers.test.ts; refunds: money-truth-refunds.test.ts.)
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { hintFor } from "../../src/mcp/hints.js";
import { engineFixture, outcome, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { RefusalLedger, sandboxSide } from "../helpers/refusal-ledger.js";
import { on, type ProxyRule } from "../helpers/proxy.js";
import { balances, moved, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const ONCE = { payer: PRICE, payee: PRICE };
const CONFIRM = on("POST", "/v1/payments/confirm");

/** The proof settles at the service; then (`after`, given the proof) the answer the engine gets is a refusal of it. */
function settleThen402(after?: (proof: string) => Promise<void>): ProxyRule {
  return {
    match: CONFIRM,
    action: {
      kind: "dynamic",
      choose: (r) => ({
        kind: "rewrite",
        status: 402,
        transform: async (body) => {
          await after?.(JSON.parse(r.body).paymentProof);
          return {
            error: {
              code: "payment_invalid",
              message: "payment proof rejected by the facilitator: transaction_failed",
              reason: "transaction_failed",
              requestId: body?.requestId,
            },
          };
        },
      }),
    },
  };
}

const said = (r: PaidCall | PaidActionError) =>
  JSON.stringify(r instanceof PaidActionError ? { ...r.toJSON(), message: r.message } : r);

describe.each(RAILS)("money truth on $name: the chain decides, whatever the service says", (rail) => {
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

  // "Rotated": once the proof has landed, its lifetime ends (Solana: the blockhash moves on;
  // EVM: our RPC's newest block passes validBefore): it stays landed.
  for (const [name, rotate] of [
    ["at once", false],
    ["after the proof's lifetime has passed", true],
  ] as const) {
    it(`settle-then-402 ${name}: one debit per intent across 3 retries, executed or attention, never "nothing was charged"`, async () => {
      // Anvil's clock does not go back: on EVM the jump past validBefore gets a sandbox of its own.
      const sb = rotate && rail.expiryMovesClock ? (own = await startTestSandbox(rail.sandbox)) : t;
      f = await engineFixture({
        t: sb,
        env: rail.env(sb),
        rules: [settleThen402(rotate ? (proof) => rail.expire(sb, proof) : undefined)],
        open: { settleWaitMs: 0 },
      });
      const before = await balances(rail, sb);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: `lie-${rotate ? "rotated" : "now"}` },
        intentKey: `settle-then-402-${rotate ? "rotated" : "now"}`,
      };
      const results = [];
      for (let i = 0; i < 3; i++)
        results.push(await outcome(f.pa.engine.pay(req, { callId: `call_lie${i}${rotate ? "r" : "n"}` })));
      expect(await moved(rail, sb, before)).toEqual(ONCE);
      for (const r of results) expect(said(r)).not.toMatch(/nothing was charged/i);
      const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
      expect(["executed", "attention"]).toContain(intent.state);
      expect(intent.budgetState).toBe("spent");
      expect(f.settledFor(intent.quoteId!)).toBe(1);
      // The evidence: the landed transfer, seen on our own RPC, and a note for a human.
      const payment = (await f.pa.journal.payment(intent.quoteId!))!;
      expect(payment.network).toBe(rail.network);
      expect(payment.fate).toBe("landed");
      expect(intent.paymentTx).toBe(payment.tx);
      expect(intent.paymentTx).toMatch(rail.tx);
      expect(intent.settlement).toBe("verified");
      expect(intent.attention).toMatch(/refused a payment that landed on chain/);
      expect((await f.pa.engine.needsAttention()).map((v) => v.intentId)).toContain(intent.intentId);
      // Spending counts it: the caps were not given the money back.
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
      // Only one proof was ever signed for the intent.
      expect((await f.pa.journal.intentsSince(0)).filter((i) => i.intentKey === req.intentKey)[0]!.attempt).toBe(0);
    });
  }

  it("settle-then-402 and then the execution refused too: paid once, attention, the retries pay nothing more", async () => {
    f = await engineFixture({
      t,
      env: rail.env(t),
      open: { settleWaitMs: 0 },
      rules: [
        settleThen402(),
        {
          match: (r) => on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined,
          action: { kind: "status", status: 409, body: { error: { code: "quote_mismatch", message: "no" } } },
        },
      ],
    });
    const before = await balances(rail, t);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "lie-both" },
      intentKey: "settle-then-402-both",
    };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await outcome(f.pa.engine.pay(req)));
    expect(await moved(rail, t, before)).toEqual(ONCE);
    for (const r of results) {
      expect(r).toBeInstanceOf(PaidActionError);
      expect(said(r)).not.toMatch(/nothing was charged/i);
    }
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("attention");
    expect(intent.budgetState).toBe("spent");
  });

  it("a service that settles at /payments/confirm and reports another amount: paid once, held for a person, and the agent is told not to pay again", async () => {
    f = await engineFixture({
      t,
      env: rail.env(t),
      rules: [{ match: CONFIRM, action: { kind: "rewrite", transform: (p) => ({ ...p, amount: "0.289" }) } }],
      open: { settleWaitMs: 0 },
    });
    const before = await balances(rail, t);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "confirm-other-amount" },
      intentKey: "confirm-other-amount",
    };
    const answers = [await refusal(f.pa.engine.pay(req)), await refusal(f.pa.engine.pay(req))];
    expect(await moved(rail, t, before)).toEqual(ONCE);
    for (const r of answers) {
      // What the agent reads: the message, and the hint the MCP layer gives with it.
      const told = `${r.message}\n${hintFor(r)}`;
      expect(r.code, told).toBe("payment_mismatch");
      expect(told).not.toMatch(/nothing was charged|fresh attempt/i);
      expect(hintFor(r)).toMatch(/do not pay again/i);
      expect(r.context).toMatchObject({ money: "settled" });
    }
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent).toMatchObject({ state: "attention", budgetState: "spent" });
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
  });

  it("the suites' ledger check catches a refusal that says nothing was charged while a kept proof can still land", async () => {
    // The service keeps the proof and refuses it: its fate is open (it is still valid), and the engine says so.
    f = await engineFixture({
      t,
      env: rail.env(t),
      rules: [
        {
          match: CONFIRM,
          action: { kind: "status", status: 402, body: { error: { code: "payment_invalid", message: "no" } } },
        },
      ],
      open: { settleWaitMs: 0 },
    });
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "kept-proof" },
      intentKey: "kept-proof-1",
    };
    const told = await refusal(f.pa.engine.pay(req));
    expect(told.code).toBe("outcome_unknown");
    expect(`${told.message} ${hintFor(told)}`).not.toMatch(/nothing was charged/);
    // Had it said nothing was charged, the check would replay the kept proof, find it landed, and fail.
    const lie = new RefusalLedger();
    lie.record({ code: "payment_invalid", message: "nothing was charged", whatToDo: "", intentKey: req.intentKey });
    const before = await balances(rail, t);
    await expect(lie.check({ ...sandboxSide(t), journals: f.pa.journal, seen: f.proxy.seen })).rejects.toThrow(
      /said nothing was charged or paid .* but a transfer for quote .* is on the ledger/,
    );
    expect(await moved(rail, t, before)).toEqual(ONCE);
  });

  it("a refused proof that did not land (it can no longer, no transfer of it on the ledger) is released and re-signed once", async () => {
    const sb = rail.expiryMovesClock ? (own = await startTestSandbox(rail.sandbox)) : t;
    let expired = false;
    f = await engineFixture({
      t: sb,
      env: rail.env(sb),
      rules: [
        {
          match: CONFIRM,
          action: {
            kind: "dynamic",
            choose: (r) =>
              expired
                ? undefined
                : ((expired = true),
                  { kind: "hold", until: () => rail.expire(sb, JSON.parse(r.body).paymentProof as string) }),
          },
        },
      ],
    });
    const before = await balances(rail, sb);
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "never-landed" },
    });
    expect(await moved(rail, sb, before)).toEqual(ONCE);
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(intent.attempt).toBe(1);
    const attempts = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === paid.intentId);
    expect(attempts.map((p) => p.fate).sort()).toEqual(["never", "pending"]);
  });
});
