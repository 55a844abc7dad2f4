/**
 * A paid call against the reference service (a sandbox per file, each test its own engine
 * on it), along the paying path: end to end until the reconciler sees it completed, a retried
 * call paying once, the 402 branch, a proof refused for an expired blockhash replaced and paid
 * once, and retries through faults that never charge twice. What is refused before anything
 * is signed is paid-call-refusals.test.ts.
 */
import { hostname } from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

describe("engine: a paid call against the reference service", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("pays end to end: quote, reservation, proof, confirm, execution, all journaled; the reconciler follows it to completed", async () => {
    f = await engineFixture({ t, open: { reconcile: true, reconcilerIntervalMs: { min: 50, max: 200 } } });
    const before = await t.usdc(t.wallet.address);
    const seen: string[] = [];
    f.pa.engine.on("execution", (e: { status: string }) => seen.push(e.status));
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }, { callId: "call_e2e1" });
    expect(paid).toMatchObject({
      status: "pending",
      action: "servers.provision",
      quote: { amount: "0.288", currency: "USDC" },
      payment: { amount: "0.288" },
    });
    expect(paid.executionId).toMatch(/^exe_/);
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
    expect(f.executionsFor(paid.quote.quoteId)).toBe(1);

    const row = (await f.pa.journal.intent(paid.intentId))!;
    expect(row).toMatchObject({
      state: "executed",
      quoteId: paid.quote.quoteId,
      amount: 288_000n,
      executionId: paid.executionId,
      budgetState: "spent",
    });
    expect(row.paymentTx).toBe(paid.payment.transaction);
    expect(row.payee).toBe(t.sb.keys.treasury.address);
    expect(row.proof).toBeTruthy();

    const journal = f.pa.journal;
    await waitFor(
      async () => {
        const i = (await journal.intent(paid.intentId))!;
        return i.execStatus === "completed" && i.nextPollAt === null;
      },
      { intervalMs: 50, what: "the reconciler to reach completed" },
    );
    expect(seen[0]).toBe("pending");
    expect(seen.at(-1)).toBe("completed");
    const view = await f.pa.engine.getExecution(paid.executionId, false);
    expect(view?.output).toMatchObject({ status: "running", region: "eu-west-1" });
    expect((await f.pa.journal.intent(paid.intentId))!.nextPollAt).toBeNull();
    // The settlement the service claimed was read back from our own RPC: the priced transfer.
    expect((await f.pa.journal.intent(paid.intentId))!.settlement).toBe("verified");
    // The call's transcript is indexed in the journal, with the host and home that keep it.
    expect((await f.pa.journal.transcriptIndex(10)).find((r) => r.callId === "call_e2e1")).toMatchObject({
      host: hostname(),
      home: f.home,
    });
  });

  it("a retried call with the same intentKey lands on the same intent and pays once", async () => {
    f = await engineFixture({ t });
    const before = await t.usdc(t.wallet.address);
    const req = { action: "servers.provision", input: SMALL_SERVER, intentKey: "agent-retry-0001" };
    const a = await f.pa.engine.pay(req);
    const b = await f.pa.engine.pay(req);
    expect(b.executionId).toBe(a.executionId);
    expect(b.intentId).toBe(a.intentId);
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    const conflict = await refusal(f.pa.engine.pay({ ...req, input: { ...SMALL_SERVER, durationHours: 25 } }));
    expect(conflict.code).toBe("intent_conflict");
  });

  it("the 402 branch: no challenge in the quote, no prepare, no confirm — read the 402, pay, retry once with the same key", async () => {
    f = await engineFixture({
      t,
      rules: [
        {
          match: on("POST", "/v1/quotes"),
          action: {
            kind: "rewrite",
            transform: (q) => (delete q.paymentRequirement.accepts, delete q.paymentRequirement.x402Version, q),
          },
        },
        {
          match: on("POST", "/v1/payments/"),
          action: { kind: "status", status: 404, body: { error: { code: "not_found", message: "no such endpoint" } } },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(paid.status).toBe("pending");
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    const executions = f.proxy.seen.filter((r) => r.method === "POST" && r.path === "/v1/executions");
    expect(executions).toHaveLength(2);
    expect(executions[0]!.headers["x-payment-proof"]).toBeUndefined();
    expect(executions[1]!.headers["x-payment-proof"]).toBeTruthy();
    expect(executions[0]!.headers["idempotency-key"]).toBe(executions[1]!.headers["idempotency-key"]);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
  });

  it("a proof refused because its blockhash expired is replaced by a fresh attempt, and paid once", async () => {
    let rotated = false;
    f = await engineFixture({
      t,
      rules: [
        {
          match: on("POST", "/v1/payments/confirm"),
          action: {
            kind: "dynamic",
            choose: () => {
              if (!rotated) {
                rotated = true;
                t.sb.ledger.rotateBlockhash(); // the signed proof's blockhash is no longer accepted
              }
              return undefined;
            },
          },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(paid.status).toBe("pending");
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    const row = (await f.pa.journal.intent(paid.intentId))!;
    expect(row.attempt).toBe(1);
    expect(f.proxy.seen.filter((r) => r.path === "/v1/quotes")).toHaveLength(2);
    expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm")).toHaveLength(2);
  });

  describe("retries through faults never charge twice", () => {
    it("connection resets after the service acted, a timeout and 503s: same key, one settlement, one execution", async () => {
      f = await engineFixture({
        t,
        configFile: { http: { timeoutMs: 400, maxAttempts: 4 } },
        rules: [
          {
            match: on("POST", "/v1/quotes"),
            action: {
              kind: "status",
              status: 503,
              body: { error: { code: "unavailable", message: "later" } },
              headers: { "retry-after": "0" },
            },
            times: 2,
          },
          { match: on("POST", "/v1/payments/confirm"), action: { kind: "reset-after" }, times: 1 },
          { match: on("POST", "/v1/payments/confirm"), action: { kind: "reset-before" }, times: 1 },
          { match: on("POST", "/v1/executions"), action: { kind: "delay", ms: 900 }, times: 1 },
          {
            match: on("POST", "/v1/executions"),
            action: { kind: "status", status: 503, body: { error: { code: "unavailable", message: "later" } } },
            times: 1,
          },
        ],
      });
      const before = await t.usdc(t.wallet.address);
      const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
      expect(paid.status).toBe("pending");
      expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
      expect(f.settledFor(paid.quote.quoteId)).toBe(1);
      expect(f.executionsFor(paid.quote.quoteId)).toBe(1);
      const keys = new Set(f.proxy.seen.filter((r) => r.method === "POST").map((r) => r.headers["idempotency-key"]));
      expect(keys.size).toBe(1);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/payments/confirm").length).toBeGreaterThanOrEqual(3);
      expect(f.proxy.seen.filter((r) => r.path === "/v1/executions").length).toBeGreaterThanOrEqual(3);
    });

    it("a service that stays away: the call fails with service_unavailable; once signed, the intent is kept and finished later without a second signature", async () => {
      f = await engineFixture({
        t,
        configFile: { http: { timeoutMs: 300, maxAttempts: 2 } },
        rules: [
          {
            match: (r) => on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined,
            action: { kind: "status", status: 503, body: { error: { code: "unavailable", message: "down" } } },
          },
        ],
      });
      const before = await t.usdc(t.wallet.address);
      const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
      expect(e.code).toBe("service_unavailable");
      expect(e.retryable).toBe(true);
      const intentId = e.context.intentId as string;
      const row = (await f.pa.journal.intent(intentId))!;
      // The proof travels with the execution request, which never got through: it may be out, so it stays held.
      expect(row.state).toBe("signed");
      expect(row.budgetState).toBe("reserved");
      const proof = row.proof;
      f.proxy.rules.length = 0;
      const pa = await f.reopen();
      const after = (await pa.journal.intent(intentId))!;
      expect(after.state).toBe("executed");
      expect(after.proof).toBe(proof);
      expect(f.settledFor(after.quoteId!)).toBe(1);
      expect(f.executionsFor(after.quoteId!)).toBe(1);
      expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);
    });
  });
});
