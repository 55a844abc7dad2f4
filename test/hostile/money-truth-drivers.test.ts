/**
 * Money truth from the chain, one driver per intent: concurrent calls with one intentKey (in
 * one process, and in two on one journal), a call cancelled while its quote is pending, a
 * retry while the payment settles, a lower budget on a retry. Each case runs the engine
 * against the real reference service through a programmable proxy, on each rail
 * (test/helpers/rails.ts); the payer's and the payee's balances on that rail's ledger decide
 * what was paid. (Moved from money-truth-payments.test.ts, its assertions unchanged.)
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { engineFixture, outcome, runEngineChild, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { on, type ProxyRule } from "../helpers/proxy.js";
import { balances, moved, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

const PRICE = 288_000n;
const ONCE = { payer: PRICE, payee: PRICE };
const NOTHING = { payer: 0n, payee: 0n };
const CONFIRM = on("POST", "/v1/payments/confirm");

describe.each(RAILS)("money truth on $name: one driver per intent", (rail) => {
  let t: TestSandbox;
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
    f = undefined;
  });

  describe("one driver per intent", () => {
    const slowConfirm: ProxyRule = { match: CONFIRM, action: { kind: "delay", ms: 400 } };

    it("two concurrent calls with one intentKey in one process: one debit, both report the same execution", async () => {
      f = await engineFixture({ t, env: rail.env(t), rules: [slowConfirm] });
      const before = await balances(rail, t);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: "same-key-1p" },
        intentKey: "same-key-one-process",
      };
      const [a, b] = await Promise.all([outcome(f.pa.engine.pay(req)), outcome(f.pa.engine.pay(req))]);
      expect(await moved(rail, t, before)).toEqual(ONCE);
      const paid = [a, b].filter((r): r is PaidCall => !(r instanceof PaidActionError));
      const busy = [a, b].filter((r) => r instanceof PaidActionError);
      expect(busy.every((r) => (r as PaidActionError).code === "busy")).toBe(true);
      expect(paid.length).toBeGreaterThanOrEqual(1);
      expect(new Set(paid.map((p) => p.executionId)).size).toBe(1);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/quotes")).toHaveLength(1);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(1);
    });

    it("two processes on one journal calling with one intentKey at once: one debit, the same execution or busy", async () => {
      f = await engineFixture({ t, env: rail.env(t), rules: [slowConfirm] });
      const before = await balances(rail, t);
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
      expect(await moved(rail, t, before)).toEqual(ONCE);
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
      env: rail.env(t),
      rules: [{ match: on("POST", "/v1/quotes"), action: { kind: "delay", ms: 600 }, times: 1 }],
    });
    const before = await balances(rail, t);
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
    expect(await moved(rail, t, before)).toEqual(NOTHING);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("refused");
    expect(intent.proof).toBeNull();
    expect(intent.budgetState).toBe("none");
    expect(f.proxy.seen.filter((x) => x.path === "/v1/payments/confirm")).toHaveLength(0);
    const later = await f.pa.engine.pay(req);
    expect(later.status).toBe("pending");
    expect(await moved(rail, t, before)).toEqual(ONCE);
  });

  it("a retry of a call whose payment is still settling waits for the outcome (bounded), with progress", async () => {
    // The first call's confirm is answered only after the second call arrived: the service
    // says idempotency_in_progress to the retry until the first settles.
    f = await engineFixture({
      t,
      env: rail.env(t),
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
    f = await engineFixture({ t, env: { ...rail.env(t), PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "lower-budget" },
      intentKey: "lower-budget-retry",
    };
    const first = await outcome(f.pa.engine.pay(req));
    expect((first as PaidActionError).code).toBe("approval_required");
    const approvalId = (first as PaidActionError<"approval_required">).context.approvalId;
    await f.pa.engine.approve(approvalId);
    const before = await balances(rail, t);
    const lower = await outcome(f.pa.engine.pay({ ...req, approvalId, budget: { amount: "0.20", currency: "USDC" } }));
    expect(lower).toBeInstanceOf(PaidActionError);
    expect((lower as PaidActionError).code).toBe("budget_exceeded");
    expect((lower as PaidActionError).context).toMatchObject({ limit: "budget", ceiling: "0.20" });
    expect(await moved(rail, t, before)).toEqual(NOTHING);
    expect((await f.pa.journal.intentByKey(req.intentKey))!.agentBudget).toBe(200_000n);
  });
});
