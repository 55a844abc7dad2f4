import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_INPUT, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";

describe("a paid execution, end to end over HTTP", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

  it("quotes, settles exactly the quoted amount on the ledger, and runs the provider to completed", async () => {
    const payerBefore = await t.usdc(t.wallet.address);
    const treasury = t.sb.keys.treasury.address;
    const treasuryBefore = await t.usdc(treasury);

    const quote = await t.quote("servers.provision", SERVER_INPUT, "1.00");
    expect(quote.amount).toBe("0.288");
    expect(quote.withinBudget).toBe(true);
    const requirements = quote.paymentRequirement.accepts[0];
    expect(requirements).toMatchObject({ scheme: "exact", amount: "288000", asset: t.sb.asset, network: t.sb.network });
    expect(requirements.extra.memo).toBe(quote.quoteId);

    const proof = await t.proof(requirements);
    const confirm = await t.call("POST", "/payments/confirm", {
      body: { quoteId: quote.quoteId, paymentProof: proof },
      headers: { "idempotency-key": "confirm-1" },
    });
    expect(confirm.status).toBe(200);
    expect(confirm.body).toMatchObject({
      quoteId: quote.quoteId,
      status: "settled",
      amount: "0.288",
      payer: t.wallet.address,
    });

    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - 288_000n);
    expect(await t.usdc(treasury)).toBe(treasuryBefore + 288_000n);

    const created = await t.call("POST", "/executions", {
      body: { action: "servers.provision", input: SERVER_INPUT },
      headers: { "idempotency-key": "exec-1", "x-quote-id": quote.quoteId, "x-payment-proof": proof },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "pending", action: "servers.provision", quoteId: quote.quoteId });
    expect(created.body.executionId).toMatch(/^exe_/);
    // The proof that paid the quote is accepted again without a second settlement.
    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - 288_000n);

    const done = await waitForExecution(t.call, created.body.executionId, (e) => e.status === "completed");
    expect(done.output).toMatchObject({ serverId: created.body.serverId, status: "running", region: "eu-west-1" });
    expect(done.output.ipv4).toMatch(/^203\.0\.113\.\d+$/);
    expect(done.providerMeta).toMatchObject({ provider: "sandbox-cloud", region: "eu-west-1" });
  });
});
