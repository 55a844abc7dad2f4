/**
 * Restart persistence of the built CLI sandbox (a separate process) killed with kill -9 at
 * its first ledger submission, just before and just after the payment lands: the ledger and
 * the service's records agree, and a retry with the same key settles it exactly once.
 */
import { describe, expect, it } from "vitest";
import { createSolanaRpc, signature as toSignature } from "@solana/kit";
import { parseDecimal } from "../../src/domain/money.js";
import { apiClient } from "../helpers/sandbox.js";
import { payerFor, startCliSandbox, writeKillOnSubmitPreload } from "../helpers/process.js";
import {
  ACTION,
  PROVIDER_DELAY_MS,
  paymentRecords,
  restartFixture,
  send,
  serverInput,
  tokenDelta,
  usdcBalance,
  type Request,
} from "../helpers/sandbox-restart.js";

describe("the CLI sandbox across restarts", () => {
  const { newHome } = restartFixture();
  it("kill -9 just before and just after a payment lands on the ledger: recovery settles it exactly once", async () => {
    const home = newHome();
    const args = ["--provider-delay-ms", String(PROVIDER_DELAY_MS)];
    // Genesis on a first, clean start.
    let sb = await startCliSandbox(home, args);
    const mint = sb.info.asset;
    expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });

    for (const when of ["before", "after"] as const) {
      // A process that dies by SIGKILL at its first ledger submission: the settlement of
      // this confirm, `before` the transfer is applied or right `after` it is committed.
      sb = await startCliSandbox(home, args, { nodeArgs: ["--import", writeKillOnSubmitPreload(home, when)] });
      let call = apiClient(sb.info.baseUrl, sb.info.apiKey);
      let payer = await payerFor(sb.info);
      let rpc = createSolanaRpc(sb.info.rpcUrl);
      const walletBefore = await usdcBalance(rpc, payer.wallet.address, mint);
      const input = serverInput(when === "before" ? 100 : 200);
      const q = await call("POST", "/quotes", {
        body: { action: ACTION, input, budget: { amount: "1000", currency: "USDC" } },
      });
      expect(q.status, q.text).toBe(201);
      const requirements = q.body.paymentRequirement.accepts[0];
      const amount = BigInt(requirements.amount);
      const treasury: string = requirements.payTo;
      const treasuryBefore = await usdcBalance(rpc, treasury, mint);
      const proof = await payer.proof(requirements);
      const confirm: Request = {
        method: "POST",
        path: "/payments/confirm",
        body: { quoteId: q.body.quoteId, paymentProof: proof },
        headers: { "idempotency-key": `confirm-${when}` },
      };
      // The client is told nothing: the connection dies with the process.
      await expect(send(call, confirm)).rejects.toThrow();
      expect((await sb.exited).signal).toBe("SIGKILL");

      sb = await startCliSandbox(home, args);
      call = apiClient(sb.info.baseUrl, sb.info.apiKey);
      payer = await payerFor(sb.info);
      rpc = createSolanaRpc(sb.info.rpcUrl);

      // What the ledger holds is what happened before the kill, and the service's records agree.
      const landed = when === "after";
      expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(landed ? walletBefore - amount : walletBefore);
      expect(await usdcBalance(rpc, treasury, mint)).toBe(landed ? treasuryBefore + amount : treasuryBefore);
      const recorded = paymentRecords(home).filter((p) => p.quote_id === q.body.quoteId);
      if (landed) {
        expect(recorded).toHaveLength(1);
        expect(recorded[0]).toMatchObject({
          status: "settled",
          payer: payer.wallet.address,
          amount: amount.toString(),
        });
        const status = await rpc.getSignatureStatuses([toSignature(recorded[0]!.transaction_sig!)]).send();
        expect(status.value[0]).not.toBeNull();
      } else {
        // Not on the ledger, but its blockhash is still valid: it could still land, so
        // the record is kept 'settling' (never 'settled') until a retry or expiry decides.
        expect(recorded).toHaveLength(1);
        expect(recorded[0]).toMatchObject({ status: "settling", transaction_sig: null });
      }

      // The client retries with the same key: settled, once.
      const retry = await send(call, confirm);
      expect(retry.status, retry.text).toBe(200);
      expect(retry.body).toMatchObject({ quoteId: q.body.quoteId, status: "settled", payer: payer.wallet.address });
      expect(parseDecimal(retry.body.amount)).toBe(amount);
      if (landed) expect(retry.body.transaction).toBe(recorded[0]!.transaction_sig);
      const tx: any = await rpc
        .getTransaction(toSignature(retry.body.transaction), { encoding: "base64", maxSupportedTransactionVersion: 0 })
        .send();
      expect(tx).not.toBeNull();
      expect(tokenDelta(tx, payer.wallet.address, mint)).toBe(-amount);
      expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(walletBefore - amount);
      expect(await usdcBalance(rpc, treasury, mint)).toBe(treasuryBefore + amount);
      const again = await send(call, confirm);
      expect(again.status).toBe(200);
      expect(again.headers["idempotent-replayed"]).toBe("true");
      expect(again.body).toEqual(retry.body);

      // The paid quote funds its execution without a second charge.
      const created = await call("POST", "/executions", {
        body: { action: ACTION, input },
        headers: { "idempotency-key": `exec-${when}`, "x-quote-id": q.body.quoteId, "x-payment-proof": proof },
      });
      expect(created.status, created.text).toBe(201);
      expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(walletBefore - amount);
      expect(paymentRecords(home).filter((p) => p.quote_id === q.body.quoteId)).toHaveLength(1);

      expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    }
  }, 60_000);
});
