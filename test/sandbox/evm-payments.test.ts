/**
 * The v1 service on the EVM ledger: a quote's `accepts` lists Solana then eip155:84532; a
 * proof built by the stock @x402/evm client scheme against the EVM entry pays the quote once
 * (/payments/confirm, then POST /executions with the same proof), the same proof is refused
 * for another quote, and a failed execution is refunded by a real USDC transfer back to the
 * payer on the chain; proofs for ten quotes confirmed at once all settle (the facilitator key
 * sends one transaction at a time, each with its own nonce). Balances are read from the chain
 * over JSON-RPC.
 */
import { readFileSync } from "node:fs";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_INPUT, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";

const EVM_NETWORK = "eip155:84532";
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const ACTION = "servers.provision";

describe("v1 quotes paid on the EVM ledger", () => {
  let t: TestSandbox;
  let chain: ReturnType<typeof createPublicClient>;
  const usdc = (owner: string) =>
    chain.readContract({
      address: t.sb.evm!.asset as Address,
      abi: ERC20,
      functionName: "balanceOf",
      args: [owner as Address],
    });
  const agent = () => privateKeyToAccount(readFileSync(t.sb.evm!.agentKeyPath, "utf8").trim() as Hex);
  /** A proof as a stock client builds one for the quote's EVM entry: base64 JSON PaymentPayload. */
  const evmProof = async (requirements: X402Requirements) => {
    const result = await new ExactEvmScheme(agent()).createPaymentPayload(2, requirements);
    return Buffer.from(JSON.stringify({ ...result, accepted: requirements })).toString("base64");
  };
  const quote = async (input: Record<string, unknown>) => {
    const q = await t.call("POST", "/quotes", {
      body: { action: ACTION, input, budget: { amount: "100", currency: "USDC" } },
    });
    expect(q.status, q.text).toBe(201);
    return q.body;
  };

  beforeAll(async () => {
    t = await startTestSandbox({ evm: true });
    chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a quote accepts Solana first, then USDC on eip155:84532 paid to the service's EVM treasury", async () => {
    const q = await quote(SERVER_INPUT);
    const accepts = q.paymentRequirement.accepts;
    expect(accepts.map((a: { network: string }) => a.network)).toEqual([t.sb.network, EVM_NETWORK]);
    expect(accepts[1]).toEqual({
      scheme: "exact",
      network: EVM_NETWORK,
      amount: accepts[0].amount,
      asset: t.sb.evm!.asset,
      payTo: t.sb.evmLedger!.keys.treasury.address,
      maxTimeoutSeconds: accepts[0].maxTimeoutSeconds,
      extra: { name: "USDC", version: "2", memo: q.quoteId },
    });
    const prepared = await t.call("POST", "/payments/prepare", { body: { quoteId: q.quoteId } });
    expect(prepared.status, prepared.text).toBe(200);
    expect(prepared.body.paymentRequired.accepts[1]).toEqual(accepts[1]);
  });

  it("an EVM proof pays its quote once: confirm, then execute with it; again, or for another quote, it is refused", async () => {
    const q = await quote({ ...SERVER_INPUT, durationHours: 2 });
    const requirements = q.paymentRequirement.accepts[1];
    const amount = BigInt(requirements.amount);
    const treasury: string = requirements.payTo;
    const [payerBefore, treasuryBefore] = [await usdc(agent().address), await usdc(treasury)];
    const proof = await evmProof(requirements);

    const confirmed = await t.call("POST", "/payments/confirm", {
      body: { quoteId: q.quoteId, paymentProof: proof },
      headers: { "idempotency-key": "evm-confirm-1" },
    });
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body).toMatchObject({ status: "settled", network: EVM_NETWORK, payer: agent().address });
    const receipt = await chain.getTransactionReceipt({ hash: confirmed.body.transaction as Hex });
    expect(receipt.status).toBe("success");
    expect(await usdc(agent().address)).toBe(payerBefore - amount);
    expect(await usdc(treasury)).toBe(treasuryBefore + amount);

    const executed = await t.call("POST", "/executions", {
      body: { action: ACTION, input: { ...SERVER_INPUT, durationHours: 2 } },
      headers: { "idempotency-key": "evm-exec-1", "payment-signature": proof, "x-quote-id": q.quoteId },
    });
    expect(executed.status, executed.text).toBe(201);
    // The same proof for the same quote again: the quote already funded its execution.
    const again = await t.call("POST", "/executions", {
      body: { action: ACTION, input: { ...SERVER_INPUT, durationHours: 2 } },
      headers: { "idempotency-key": "evm-exec-2", "payment-signature": proof, "x-quote-id": q.quoteId },
    });
    expect(again.status).toBe(409);
    // And for another quote of the same price: the proof is spent.
    const other = await quote({ ...SERVER_INPUT, durationHours: 2 });
    const reused = await t.call("POST", "/payments/confirm", {
      body: { quoteId: other.quoteId, paymentProof: proof },
      headers: { "idempotency-key": "evm-confirm-2" },
    });
    expect(reused.status, reused.text).toBe(409);
    expect(reused.body.error.code).toBe("payment_already_used");
    expect(await usdc(agent().address)).toBe(payerBefore - amount);
    expect(await usdc(treasury)).toBe(treasuryBefore + amount);
  });

  it("EVM proofs for ten quotes confirmed at once all settle, each once: the facilitator key sends one at a time", async () => {
    const quotes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => quote({ ...SERVER_INPUT, durationHours: 1, image: `at-once-${i}` })),
    );
    const total = quotes.reduce((sum, q) => sum + BigInt(q.paymentRequirement.accepts[1].amount), 0n);
    const treasury: string = quotes[0].paymentRequirement.accepts[1].payTo;
    const [payerBefore, treasuryBefore] = [await usdc(agent().address), await usdc(treasury)];
    const proofs = await Promise.all(quotes.map((q) => evmProof(q.paymentRequirement.accepts[1])));
    const confirmed = await Promise.all(
      quotes.map((q, i) =>
        t.call("POST", "/payments/confirm", {
          body: { quoteId: q.quoteId, paymentProof: proofs[i] },
          headers: { "idempotency-key": `evm-at-once-${i}` },
        }),
      ),
    );
    for (const c of confirmed) {
      expect(c.status, c.text).toBe(200);
      expect(c.body).toMatchObject({ status: "settled", network: EVM_NETWORK });
    }
    expect(new Set(confirmed.map((c) => c.body.transaction)).size).toBe(10);
    expect(await usdc(agent().address)).toBe(payerBefore - total);
    expect(await usdc(treasury)).toBe(treasuryBefore + total);
  });

  it("a failed execution paid on the EVM ledger is refunded by a real USDC transfer back to the payer", async () => {
    const input = { ...SERVER_INPUT, durationHours: 3 };
    const q = await quote(input);
    const requirements = q.paymentRequirement.accepts[1];
    const amount = BigInt(requirements.amount);
    const treasury: string = requirements.payTo;
    const payerBefore = await usdc(agent().address);
    const treasuryBefore = await usdc(treasury);
    const executed = await t.call("POST", "/executions", {
      body: { action: ACTION, input },
      headers: {
        "idempotency-key": "evm-exec-fail",
        "payment-signature": await evmProof(requirements),
        "x-quote-id": q.quoteId,
        "x-sandbox-outcome": "fail",
      },
    });
    expect(executed.status, executed.text).toBe(201);
    expect(await usdc(agent().address)).toBe(payerBefore - amount);
    const done = await waitForExecution(t.call, executed.body.executionId, (e) => e.status === "refunded");
    expect(done.refund).toMatchObject({ amount: q.amount, currency: "USDC" });
    const refund = await chain.getTransactionReceipt({ hash: done.refund.transaction as Hex });
    expect(refund.status).toBe("success");
    expect(await usdc(agent().address)).toBe(payerBefore);
    expect(await usdc(treasury)).toBe(treasuryBefore);
  });
});
