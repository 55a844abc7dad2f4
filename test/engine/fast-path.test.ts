/**
 * The fast path of a paid call, counted (runs on SQLite and on PostgreSQL): two requests to
 * the service (POST /quotes, then POST /executions carrying the proof, which settles it) and
 * at most three journal commits that wait for the disk (the intent; the quote with its
 * reservation and signed proof; the outcome). The transcript's index row is the only other
 * write, committed without an fsync of its own (journal/sqlite-records.ts, pg-records.ts).
 * The money is real: one settled payment on the sandbox's ledger, verified as before.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { countCalls, NOT_DURING_A_CALL, portMethods, RELAXED, WRITES } from "../helpers/journal-calls.mjs";
import { startProxy, type Proxy } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("the fast path of a paid call", () => {
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

  it("every method of the journal's port is classified as a read or a write here", () => {
    const methods = portMethods();
    expect(methods.length).toBeGreaterThan(30);
    expect(methods).toEqual(expect.arrayContaining([...WRITES]));
  });

  it("sends two requests to the service and commits at most three times; the payment settles once, on chain", async () => {
    f = await engineFixture({ t });
    const before = await t.usdc(t.wallet.address);
    // A first call warms the blockhash held for signing; the one counted is the next.
    await f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, image: "warm" } }, { callId: "c1" });
    f.proxy.seen.length = 0;
    const calls = countCalls(f.pa.journal);

    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }, { callId: "call_fast" });
    const writes = calls.filter((name) => WRITES.has(name));
    const requests = f.proxy.seen.map((r) => `${r.method} ${r.path}`);

    expect(requests).toEqual(["POST /v1/quotes", "POST /v1/executions"]);
    expect(f.proxy.seen[1]!.headers["x-payment-proof"]).toBeTruthy();
    expect(f.proxy.seen[0]!.headers["idempotency-key"]).toBe(f.proxy.seen[1]!.headers["idempotency-key"]);
    const durable = writes.filter((name) => !RELAXED.has(name));
    expect(durable).toEqual(["insertIntent", "reserve", "update"]);
    // Without an fsync of their own: the call's transcript index, and the service's signed offer and receipt.
    expect(writes.filter((name) => RELAXED.has(name)).sort()).toEqual([
      "indexTranscript",
      "saveSellerWord",
      "saveSellerWord",
    ]);
    expect(calls.filter((name) => NOT_DURING_A_CALL.has(name))).toEqual([]);

    // The same guarantees as the step-by-step path: settled once, journaled, held until verified.
    expect(paid.status).toBe("pending");
    expect(await t.usdc(t.wallet.address)).toBe(before - 2n * 288_000n);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
    expect(f.executionsFor(paid.quote.quoteId)).toBe(1);
    const row = (await f.pa.journal.intent(paid.intentId))!;
    expect(row).toMatchObject({ state: "executed", budgetState: "spent", executionId: paid.executionId });
    expect(row.proof).toBeTruthy();
    const payment = (await f.pa.journal.payment(paid.quote.quoteId))!;
    expect(payment).toMatchObject({ intentId: paid.intentId, amount: 288_000n, fate: "pending" });
    expect(payment.sentAt).not.toBeNull();
    expect(payment.claimedTx).toBe(row.paymentTx);
    expect(row.settlement).toBe("claimed");
  });

  it("a paid_fetch: the unpaid request and the paid one, three commits that wait for the disk", async () => {
    let resource: Proxy | undefined;
    try {
      resource = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""), []);
      f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: resource.url } });
      const url = `${resource.url}/x402/weather?city=Paris`;
      await f.pa.engine.payFetch({ url, intentKey: "fetch-warm" }, { callId: "call_warm" });
      resource.seen.length = 0;
      const calls = countCalls(f.pa.journal);
      const out = await f.pa.engine.payFetch({ url, intentKey: "fetch-counted" }, { callId: "call_counted" });
      expect(out.result).toMatchObject({ status: 200 });
      expect(resource.seen.map((r) => [r.method, r.headers["payment-signature"] !== undefined])).toEqual([
        ["GET", false],
        ["GET", true],
      ]);
      const writes = calls.filter((name) => WRITES.has(name));
      expect(writes.filter((name) => !RELAXED.has(name))).toEqual(["insertIntent", "reserve", "update"]);
      // The body and the seller's receipt are written just before the outcome's commit, which carries them to the disk.
      expect(writes.slice(writes.indexOf("reserve") + 1)).toEqual(["saveResponseBody", "saveSellerWord", "update"]);
    } finally {
      await resource?.close();
    }
  });

  it("a quote that does not echo the input is preflighted: three requests, the checks of the step-by-step path", async () => {
    f = await engineFixture({
      t,
      rules: [
        {
          match: (r) => r.path === "/v1/quotes",
          action: { kind: "rewrite", transform: (q) => ({ ...q, input: undefined }) },
        },
      ],
    });
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(f.proxy.seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v1/quotes",
      "POST /v1/executions",
      "POST /v1/executions",
    ]);
    expect(f.proxy.seen[1]!.headers["x-payment-proof"]).toBeUndefined();
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
  });

  it("with PAID_ACTIONS_CONFIRM_PAYMENTS the proof goes to /payments/confirm first, then the execution is asked for", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_CONFIRM_PAYMENTS: "true" } });
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(f.proxy.seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v1/quotes",
      "POST /v1/payments/confirm",
      "POST /v1/executions",
    ]);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);
    expect((await f.pa.journal.intent(paid.intentId))!.settlement).toBe("claimed");
  });
});
