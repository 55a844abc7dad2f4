/**
 * x402 payments against a real sandbox over HTTP that settle: every proof goes through the
 * x402 reference facilitator and settles on the sandbox's LiteSVM ledger, moving exactly the
 * quoted amount; a failed execution is refunded on the ledger; the 402 branch is paid and
 * retried with the same key. (Refused proofs: payments-refused.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { ACTION, AMOUNT, paymentChecks } from "../helpers/payment-checks.js";
import { rpcCall, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";
import { elapse } from "../helpers/wait.js";

describe("x402 payments through the reference facilitator on the ledger", () => {
  let t: TestSandbox;
  let treasury: string;

  beforeAll(async () => {
    t = await startTestSandbox();
    treasury = t.sb.keys.treasury.address;
  });
  afterAll(() => t.close());

  const { key, newQuote, confirm, execute, balances, expectBalances, executionsOf, usdcDelta } = paymentChecks(() => t);
  it("a valid proof settles and moves exactly the quoted amount from the payer to the treasury", async () => {
    const { quoteId, reqs } = await newQuote();
    expect(reqs).toMatchObject({ scheme: "exact", network: t.sb.network, asset: t.sb.asset, payTo: treasury });
    expect(reqs.extra).toMatchObject({ feePayer: t.sb.keys.feePayer.address, memo: quoteId });
    const before = await balances();

    const res = await confirm(quoteId, await t.proof(reqs));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      quoteId,
      status: "settled",
      amount: "0.288",
      currency: "USDC",
      network: t.sb.network,
      payer: t.wallet.address,
    });
    expect(res.body.paymentId).toMatch(/^pay_/);

    await expectBalances({
      [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
      [treasury]: before[treasury]! + AMOUNT,
    });
    const tx = await rpcCall(t.sb.rpcUrl, "getTransaction", [
      res.body.transaction,
      { encoding: "base64", maxSupportedTransactionVersion: 0 },
    ]);
    expect(tx).not.toBeNull();
    expect(usdcDelta(tx, t.wallet.address)).toBe(-AMOUNT);
    expect(usdcDelta(tx, treasury)).toBe(AMOUNT);
  });

  it("a failed execution is refunded on the ledger, back to the payer's balance before the payment", async () => {
    const { quoteId, reqs } = await newQuote();
    const before = await balances();
    const created = await execute(quoteId, await t.proof(reqs), { "x-sandbox-outcome": "fail" });
    expect(created.status, created.text).toBe(201);
    const settle = JSON.parse(Buffer.from(created.headers["payment-response"]!, "base64").toString("utf8"));
    expect(settle).toMatchObject({ success: true, payer: t.wallet.address, network: t.sb.network });

    const done = await waitForExecution(t.call, created.body.executionId, (e) => e.status === "refunded");
    expect(done.error).toMatchObject({ code: expect.any(String) });
    expect(done.refund).toMatchObject({ amount: "0.288", currency: "USDC", transaction: expect.any(String) });
    expect(done.refund.transaction).not.toBe(settle.transaction);

    const paymentTx = await rpcCall(t.sb.rpcUrl, "getTransaction", [
      settle.transaction,
      { encoding: "base64", maxSupportedTransactionVersion: 0 },
    ]);
    expect(paymentTx).not.toBeNull();
    expect(usdcDelta(paymentTx, t.wallet.address)).toBe(-AMOUNT);
    const refundTx = await rpcCall(t.sb.rpcUrl, "getTransaction", [
      done.refund.transaction,
      { encoding: "base64", maxSupportedTransactionVersion: 0 },
    ]);
    expect(refundTx).not.toBeNull();
    expect(usdcDelta(refundTx, t.wallet.address)).toBe(AMOUNT);
    expect(usdcDelta(refundTx, treasury)).toBe(-AMOUNT);

    await expectBalances(before);
    // Final: nothing changes afterwards, and it is refunded once. A negative check: nothing
    // marks that the provider loop has gone past a final execution, so it watches a while.
    await elapse(150);
    const later = await t.call("GET", `/executions/${created.body.executionId}`);
    expect(later.body.status).toBe("refunded");
    expect(later.body.refund.transaction).toBe(done.refund.transaction);
    await expectBalances(before);
  });

  it("the 402 branch: POST /executions without proof gets the challenge; paying it and retrying with the same key gives 201", async () => {
    const { quoteId, reqs } = await newQuote();
    const idem = key("pay-and-retry");
    const before = await balances();

    const unpaid = await execute(quoteId, undefined, {}, idem);
    expect(unpaid.status, unpaid.text).toBe(402);
    expect(unpaid.body.error.code).toBe("payment_required");
    expect(unpaid.body.error.quoteId).toBe(quoteId);
    const header = unpaid.headers["payment-required"];
    expect(header).toBeDefined();
    const challenge = JSON.parse(Buffer.from(header!, "base64").toString("utf8"));
    expect(challenge).toEqual(unpaid.body.error.paymentRequired);
    expect(challenge.x402Version).toBe(2);
    expect(challenge.resource.url).toBe(`${t.sb.baseUrl}/executions`);
    expect(challenge.accepts).toHaveLength(1);
    const offered = challenge.accepts[0] as PaymentRequirements;
    for (const f of ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"] as const)
      expect(offered[f]).toEqual(reqs[f]);
    expect(offered.extra.feePayer).toBe(reqs.extra.feePayer);
    expect(offered.extra.memo).toBe(quoteId);
    await expectBalances(before);

    const proof = await t.proof(offered);
    const paid = await execute(quoteId, proof, {}, idem);
    expect(paid.status, paid.text).toBe(201);
    expect(paid.body).toMatchObject({ quoteId, status: "pending", action: ACTION });
    await expectBalances({
      [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
      [treasury]: before[treasury]! + AMOUNT,
    });

    // The same key again is a replay of the 201: same execution, nothing charged.
    const replayed = await execute(quoteId, proof, {}, idem);
    expect(replayed.status).toBe(201);
    expect(replayed.headers["idempotent-replayed"]).toBe("true");
    expect(replayed.body.executionId).toBe(paid.body.executionId);
    expect(await executionsOf(quoteId)).toHaveLength(1);
    await expectBalances({
      [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
      [treasury]: before[treasury]! + AMOUNT,
    });
  });
});
