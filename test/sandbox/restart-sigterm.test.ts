/**
 * Restart persistence of the built CLI sandbox (a separate process) across a clean SIGTERM
 * stop: the ledger and the records are identical after the restart, the execution running
 * at the stop completes, and a proof signed before the stop still pays, exactly once.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSolanaRpc, address, signature as toSignature, type Address } from "@solana/kit";
import { parseDecimal } from "../../src/domain/money.js";
import { apiClient } from "../helpers/sandbox.js";
import { payerFor, startCliSandbox } from "../helpers/process.js";
import {
  ACTION,
  FUNDING,
  PROVIDER_DELAY_MS,
  listExecutions,
  paymentRecords,
  restartFixture,
  serverInput,
  usdcBalance,
  waitAllFinal,
} from "../helpers/sandbox-restart.js";

describe("the CLI sandbox across restarts", () => {
  const { newHome } = restartFixture();
  it("a SIGTERM stop and restart continues where it stopped: identical ledger and records, pending work resumes", async () => {
    const home = newHome();
    let sb = await startCliSandbox(home, ["--provider-delay-ms", String(PROVIDER_DELAY_MS)]);
    let call = apiClient(sb.info.baseUrl, sb.info.apiKey);
    let payer = await payerFor(sb.info);
    let rpc = createSolanaRpc(sb.info.rpcUrl);
    const mint = sb.info.asset;

    const quote = async (i: number) => {
      const res = await call("POST", "/quotes", {
        body: { action: ACTION, input: serverInput(i), budget: { amount: "1000", currency: "USDC" } },
      });
      expect(res.status, res.text).toBe(201);
      return res.body;
    };
    const pay = async (i: number, headers: Record<string, string> = {}) => {
      const q = await quote(i);
      const proof = await payer.proof(q.paymentRequirement.accepts[0]);
      const res = await call("POST", "/executions", {
        body: { action: ACTION, input: serverInput(i) },
        headers: { "idempotency-key": `exec-${i}`, "x-quote-id": q.quoteId, "x-payment-proof": proof, ...headers },
      });
      expect(res.status, res.text).toBe(201);
      return res.body;
    };

    for (let i = 0; i < 4; i++) await pay(i, i % 2 === 1 ? { "x-sandbox-outcome": "fail" } : {});
    const finals = await waitAllFinal(call, 10_000);
    expect(finals.filter((e) => e.status === "refunded")).toHaveLength(2);
    // One execution still running at the stop, and a quote paid for (signed) but not yet confirmed.
    const running = await pay(10, { "x-sandbox-delay-ms": "2000" });
    const later = await quote(11);
    const laterProof = await payer.proof(later.paymentRequirement.accepts[0]);

    const treasury: string = later.paymentRequirement.accepts[0].payTo;
    const feePayer: string = later.paymentRequirement.accepts[0].extra.feePayer;
    const capture = async () => {
      const executions = (await listExecutions(call)).filter((e) => e.executionId !== running.executionId);
      const payments = paymentRecords(home);
      const txs: unknown[] = [];
      const sigs = [
        ...payments.map((p) => p.transaction_sig!),
        ...executions.filter((e) => e.refund).map((e) => e.refund.transaction),
      ];
      for (const s of sigs) {
        txs.push(
          await rpc.getTransaction(toSignature(s), { encoding: "base64", maxSupportedTransactionVersion: 0 }).send(),
        );
      }
      const mintAccount = await rpc.getAccountInfo(address(mint), { encoding: "base64" }).send();
      return {
        executions,
        payments,
        txs,
        wallet: await usdcBalance(rpc, payer.wallet.address, mint),
        treasury: await usdcBalance(rpc, treasury, mint),
        feePayerLamports: (await rpc.getBalance(address(feePayer) as Address).send()).value,
        walletLamports: (await rpc.getBalance(payer.wallet.address).send()).value,
        mintData: mintAccount.value!.data[0],
        slot: await rpc.getSlot().send(),
      };
    };
    const before = await capture();
    expect(before.payments).toHaveLength(5);
    expect(before.txs.every((t) => t !== null)).toBe(true);
    const settledBefore = before.payments.reduce((s, p) => s + BigInt(p.amount), 0n);
    const refundedBefore = before.executions
      .filter((e) => e.refund)
      .reduce((s, e) => s + parseDecimal(e.refund.amount)!, 0n);
    expect(before.wallet).toBe(FUNDING - settledBefore + refundedBefore);

    const exit = await sb.stop("SIGTERM");
    expect(exit).toEqual({ code: 0, signal: null });
    expect(existsSync(join(home, "sandbox.pid"))).toBe(false);
    expect(sb.stderr()).toContain("state is saved");

    sb = await startCliSandbox(home, ["--provider-delay-ms", String(PROVIDER_DELAY_MS)]);
    call = apiClient(sb.info.baseUrl, sb.info.apiKey);
    payer = await payerFor(sb.info);
    rpc = createSolanaRpc(sb.info.rpcUrl);

    const after = await capture();
    expect(after.executions).toEqual(before.executions);
    expect(after.payments).toEqual(before.payments);
    expect(after.txs).toEqual(before.txs);
    expect(after.wallet).toBe(before.wallet);
    expect(after.treasury).toBe(before.treasury);
    expect(after.feePayerLamports).toBe(before.feePayerLamports);
    expect(after.walletLamports).toBe(before.walletLamports);
    expect(after.mintData).toBe(before.mintData);
    expect(after.slot).toBeGreaterThanOrEqual(before.slot);

    // The execution that was running at the stop completes.
    const all = await waitAllFinal(call, 10_000);
    expect(all.find((e) => e.executionId === running.executionId)).toMatchObject({
      status: "completed",
      quoteId: running.quoteId,
    });

    // A proof signed before the stop still pays its quote after the restart, exactly once.
    const confirm = await call("POST", "/payments/confirm", {
      body: { quoteId: later.quoteId, paymentProof: laterProof },
      headers: { "idempotency-key": "confirm-later" },
    });
    expect(confirm.status, confirm.text).toBe(200);
    const amount = BigInt(later.paymentRequirement.accepts[0].amount);
    expect(parseDecimal(confirm.body.amount)).toBe(amount);
    expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(before.wallet - amount);
    expect(await usdcBalance(rpc, treasury, mint)).toBe(before.treasury + amount);

    await sb.stop("SIGTERM");
  }, 60_000);
});
