/**
 * Money truth from the chain: a service that errs or lies after it has been handed a proof,
 * and one driver per intent (concurrent calls, a cancelled call, a retry while the payment
 * settles, a lower budget on a retry). Each case runs the engine against the real reference
 * service through a programmable proxy; the wallet's balance on the sandbox's ledger is what
 * decides what was paid. (Refunds: money-truth-refunds.test.ts.)
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { hintFor } from "../../src/mcp/hints.js";
import {
  engineFixture,
  outcome,
  refusal,
  runEngineChild,
  SMALL_SERVER,
  type EngineFixture,
} from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { RefusalLedger, sandboxSide } from "../helpers/refusal-ledger.js";
import { on, type ProxyRule } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

const PRICE = 288_000n;
const CONFIRM = on("POST", "/v1/payments/confirm");

/** The proof settles at the service; the answer the engine gets is a refusal of it. */
function settleThen402(after?: () => void): ProxyRule {
  return {
    match: CONFIRM,
    action: {
      kind: "rewrite",
      status: 402,
      transform: (body) => {
        after?.();
        return {
          error: {
            code: "payment_invalid",
            message: "payment proof rejected by the facilitator: transaction_failed",
            reason: "transaction_failed",
            requestId: body?.requestId,
          },
        };
      },
    },
  };
}

const said = (r: PaidCall | PaidActionError) =>
  JSON.stringify(r instanceof PaidActionError ? { ...r.toJSON(), message: r.message } : r);

describe("money truth: the chain decides, whatever the service says", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every refusal that said nothing was charged: no transfer for it on the ledger, its kept proofs replayed.
    await f?.checkRefusals();
    await f?.close();
    f = undefined;
  });

  for (const [name, rotate] of [
    ["at once", false],
    ["after the proof's blockhash has rotated", true],
  ] as const) {
    it(`settle-then-402 ${name}: one debit per intent across 3 retries, executed or attention, never "nothing was charged"`, async () => {
      f = await engineFixture({
        t,
        rules: [settleThen402(rotate ? () => t.sb.ledger.rotateBlockhash() : undefined)],
        open: { settleWaitMs: 0 },
      });
      const before = await t.usdc(t.wallet.address);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: `lie-${rotate ? "rotated" : "now"}` },
        intentKey: `settle-then-402-${rotate ? "rotated" : "now"}`,
      };
      const results = [];
      for (let i = 0; i < 3; i++)
        results.push(await outcome(f.pa.engine.pay(req, { callId: `call_lie${i}${rotate ? "r" : "n"}` })));
      expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
      for (const r of results) expect(said(r)).not.toMatch(/nothing was charged/i);
      const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
      expect(["executed", "attention"]).toContain(intent.state);
      expect(intent.budgetState).toBe("spent");
      expect(f.settledFor(intent.quoteId!)).toBe(1);
      // The evidence: the landed transfer, seen on our own RPC, and a note for a human.
      const payment = (await f.pa.journal.payment(intent.quoteId!))!;
      expect(payment.fate).toBe("landed");
      expect(intent.paymentTx).toBe(payment.tx);
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
      open: { settleWaitMs: 0 },
      rules: [
        settleThen402(),
        {
          match: (r) => on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined,
          action: { kind: "status", status: 409, body: { error: { code: "quote_mismatch", message: "no" } } },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "lie-both" },
      intentKey: "settle-then-402-both",
    };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await outcome(f.pa.engine.pay(req)));
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
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
      rules: [{ match: CONFIRM, action: { kind: "rewrite", transform: (p) => ({ ...p, amount: "0.289" }) } }],
      open: { settleWaitMs: 0 },
    });
    const before = await t.usdc(t.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "confirm-other-amount" },
      intentKey: "confirm-other-amount",
    };
    const answers = [await refusal(f.pa.engine.pay(req)), await refusal(f.pa.engine.pay(req))];
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
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
    // The service keeps the proof and refuses it: its fate is open (its blockhash lives), and the engine says so.
    f = await engineFixture({
      t,
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
    const before = await t.usdc(t.wallet.address);
    await expect(lie.check({ ...sandboxSide(t), journals: f.pa.journal, seen: f.proxy.seen })).rejects.toThrow(
      /said nothing was charged or paid .* but a transfer for quote .* is on the ledger/,
    );
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
  });

  it("a refused proof that did not land (its blockhash expired, no transfer with its memo) is released and re-signed once", async () => {
    let rotated = false;
    f = await engineFixture({
      t,
      rules: [
        {
          match: CONFIRM,
          action: {
            kind: "dynamic",
            choose: () => (rotated ? undefined : ((rotated = true), t.sb.ledger.rotateBlockhash(), undefined)),
          },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "never-landed" },
    });
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(intent.attempt).toBe(1);
    const attempts = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === paid.intentId);
    expect(attempts.map((p) => p.fate).sort()).toEqual(["never", "pending"]);
  });

  describe("one driver per intent", () => {
    const slowConfirm: ProxyRule = { match: CONFIRM, action: { kind: "delay", ms: 400 } };

    it("two concurrent calls with one intentKey in one process: one debit, both report the same execution", async () => {
      f = await engineFixture({ t, rules: [slowConfirm] });
      const before = await t.usdc(t.wallet.address);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: "same-key-1p" },
        intentKey: "same-key-one-process",
      };
      const [a, b] = await Promise.all([outcome(f.pa.engine.pay(req)), outcome(f.pa.engine.pay(req))]);
      expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
      const paid = [a, b].filter((r): r is PaidCall => !(r instanceof PaidActionError));
      const busy = [a, b].filter((r) => r instanceof PaidActionError);
      expect(busy.every((r) => (r as PaidActionError).code === "busy")).toBe(true);
      expect(paid.length).toBeGreaterThanOrEqual(1);
      expect(new Set(paid.map((p) => p.executionId)).size).toBe(1);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/quotes")).toHaveLength(1);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(1);
    });

    it("two processes on one journal calling with one intentKey at once: one debit, the same execution or busy", async () => {
      f = await engineFixture({ t, rules: [slowConfirm] });
      const before = await t.usdc(t.wallet.address);
      const call = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: "same-key-2p" },
        intentKey: "same-key-two-processes",
      };
      const env = { ...f.env, CHILD_CALLS: JSON.stringify([call]) };
      const [a, b] = await Promise.all([runEngineChild(env), runEngineChild(env)]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const lines = [...a.lines, ...b.lines];
      expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
      const ok = lines.filter((l) => l.ok);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(new Set(ok.map((l) => l.result.executionId)).size).toBe(1);
      for (const l of lines.filter((x) => !x.ok)) expect(l.code).toBe("busy");
      const quotes = f.proxy.seen.filter((r) => r.path === "/v1/quotes");
      expect(quotes).toHaveLength(1);
    });
  });

  it("a call cancelled while its quote is pending pays nothing, and the same key can buy later", async () => {
    f = await engineFixture({
      t,
      rules: [{ match: on("POST", "/v1/quotes"), action: { kind: "delay", ms: 600 }, times: 1 }],
    });
    const before = await t.usdc(t.wallet.address);
    const ac = new AbortController();
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "cancelled" },
      intentKey: "cancelled-while-quoting",
    };
    const pending = outcome(f.pa.engine.pay(req, { signal: ac.signal }));
    const { proxy } = f;
    const quoting = on("POST", "/v1/quotes");
    await waitFor(() => proxy.seen.some(quoting), { what: "the quote at the service" });
    ac.abort();
    const r = await pending;
    expect(r).toBeInstanceOf(PaidActionError);
    expect((r as PaidActionError).code).toBe("cancelled");
    // The delayed quote's answer comes back meanwhile, to nobody.
    await waitFor(() => proxy.handled.some(quoting), { what: "the delayed quote's answer" });
    expect(await t.usdc(t.wallet.address)).toBe(before);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("refused");
    expect(intent.proof).toBeNull();
    expect(intent.budgetState).toBe("none");
    expect(f.proxy.seen.filter((x) => x.path === "/v1/payments/confirm")).toHaveLength(0);
    const later = await f.pa.engine.pay(req);
    expect(later.status).toBe("pending");
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
  });

  it("a retry of a call whose payment is still settling waits for the outcome (bounded), with progress", async () => {
    // The first call's confirm is answered only after the second call arrived: the service
    // says idempotency_in_progress to the retry until the first settles.
    f = await engineFixture({
      t,
      rules: [
        {
          match: CONFIRM,
          action: {
            kind: "status",
            status: 409,
            body: { error: { code: "idempotency_in_progress", message: "still settling" } },
          },
          times: 2,
        },
      ],
      open: { settleWaitMs: 10_000, settleWaitStepMs: 100 },
    });
    const progress: string[] = [];
    const paid = await f.pa.engine.pay(
      { action: "servers.provision", input: { ...SMALL_SERVER, image: "settling" }, intentKey: "still-settling-1" },
      { onProgress: (m) => progress.push(m) },
    );
    expect(paid.status).toBe("pending");
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatch(/still settling/);
  });

  it("the lower budget of a retry applies to an intent in progress", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "lower-budget" },
      intentKey: "lower-budget-retry",
    };
    const first = await outcome(f.pa.engine.pay(req));
    expect((first as PaidActionError).code).toBe("approval_required");
    const approvalId = (first as PaidActionError<"approval_required">).context.approvalId;
    await f.pa.engine.approve(approvalId);
    const before = await t.usdc(t.wallet.address);
    const lower = await outcome(f.pa.engine.pay({ ...req, approvalId, budget: { amount: "0.20", currency: "USDC" } }));
    expect(lower).toBeInstanceOf(PaidActionError);
    expect((lower as PaidActionError).code).toBe("budget_exceeded");
    expect((lower as PaidActionError).context).toMatchObject({ limit: "budget", ceiling: "0.20" });
    expect(await t.usdc(t.wallet.address)).toBe(before);
    expect((await f.pa.journal.intentByKey(req.intentKey))!.agentBudget).toBe(200_000n);
  });
});
