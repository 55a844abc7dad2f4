/**
 * Restart persistence of the built CLI sandbox (a separate process) under kill -9 in the
 * middle of paid traffic: nothing the client was told about is lost, the ledger agrees with
 * the service's records to the atomic unit, pending work resumes, and retries with the same
 * Idempotency-Key never charge twice. One run, checked step by step: each `it` goes on from
 * where the one before it left the sandbox.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSolanaRpc, address, getBase64Encoder, signature as toSignature } from "@solana/kit";
import { getMintDecoder } from "@solana-program/token";
import { parseDecimal } from "../../src/domain/money.js";
import { KILL_AFTER_PAYMENTS, trafficUntilKilled, type KilledTraffic } from "../helpers/kill-mid-traffic.js";
import { payerFor, startCliSandbox, type CliSandbox, type Payer } from "../helpers/process.js";
import {
  ACTION,
  FUNDING,
  LONG_DELAY_MS,
  PROVIDER_DELAY_MS,
  paymentRecords,
  restartFixture,
  send,
  serverInput,
  tokenDelta,
  usdcBalance,
  waitAllFinal,
  type Request,
} from "../helpers/sandbox-restart.js";
import { apiClient, type ApiResponse, type Call } from "../helpers/sandbox.js";

/** What a step goes on from; a clear failure when the step that makes it failed. */
function made<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is missing: an earlier step failed`);
  return value;
}

describe("the CLI sandbox across restarts", () => {
  const { newHome } = restartFixture();

  describe("kill -9 mid-traffic loses nothing acknowledged, resumes pending work, and same-key retries never charge twice", () => {
    const ARGS = ["--provider-delay-ms", String(PROVIDER_DELAY_MS)];
    let home: string | undefined;
    let mint: string | undefined;
    let oldPid: number | undefined;
    let cut: KilledTraffic | undefined;
    /** Executions whose provider could not have finished before the kill. */
    let unfinishedAtKill: KilledTraffic["execAcks"] = [];
    let after: { sb: CliSandbox; call: Call; payer: Payer; rpc: ReturnType<typeof createSolanaRpc> } | undefined;
    /** Every execution of the run once all rested. */
    let all: any[] | undefined;

    it("kill -9 lands while requests are in flight, after payments were acknowledged", async () => {
      home = newHome();
      const sb = await startCliSandbox(home, ARGS);
      mint = sb.info.asset;
      cut = await trafficUntilKilled(sb, await payerFor(sb.info));
      oldPid = sb.pid;
      const exit = await sb.stop("SIGKILL", 5_000);

      expect(cut.unexpected).toEqual([]);
      expect(cut.killedAt).toBeGreaterThan(0);
      expect(exit.signal).toBe("SIGKILL");
      expect(cut.acks.length).toBeGreaterThanOrEqual(KILL_AFTER_PAYMENTS);
      // Requests were cut off by the kill: they are retried below with their same keys.
      expect(cut.interrupted.length).toBeGreaterThanOrEqual(1);
      // Executions whose provider could not have finished before the kill (created less than
      // their delay before it): they must carry on after the restart.
      const killedAt = cut.killedAt;
      unfinishedAtKill = cut.execAcks.filter(
        (e) => e.createdAt + (e.long ? LONG_DELAY_MS : PROVIDER_DELAY_MS) > killedAt,
      );
      expect(unfinishedAtKill.length).toBeGreaterThanOrEqual(1);
    }, 60_000);

    it("restarts on the same home: the stale pid file kill -9 left does not block it, and the mint is the same", async () => {
      const h = made(home, "the home");
      // kill -9 left a stale pid file behind; it must not block the restart.
      expect(readFileSync(join(h, "sandbox.pid"), "utf8").trim()).toBe(String(made(oldPid, "the first pid")));
      const sb = await startCliSandbox(h, ARGS);
      expect(sb.pid).not.toBe(oldPid);
      after = {
        sb,
        call: apiClient(sb.info.baseUrl, sb.info.apiKey),
        payer: await payerFor(sb.info),
        rpc: createSolanaRpc(sb.info.rpcUrl),
      };
      expect(sb.info.asset).toBe(mint);
    });

    it("every acknowledged execution, and every acknowledged payment's transaction, survived the kill", async () => {
      const { call, rpc } = made(after, "the restarted sandbox");
      const { acks, execAcks } = made(cut, "the traffic");
      // Every acknowledged execution exists, with its quote.
      for (const e of execAcks) {
        const res = await call("GET", `/executions/${e.executionId}`);
        expect(res.status, `acknowledged execution ${e.executionId} lost`).toBe(200);
        expect(res.body).toMatchObject({ executionId: e.executionId, quoteId: e.quoteId, action: ACTION });
      }
      // Every acknowledged payment's transaction is on the ledger.
      const ackStatuses = await rpc.getSignatureStatuses(acks.map((a) => toSignature(a.transaction))).send();
      acks.forEach((a, k) => {
        expect(
          ackStatuses.value[k],
          `acknowledged payment ${a.transaction} (${a.quoteId}) not on the ledger`,
        ).not.toBeNull();
        expect(ackStatuses.value[k]!.err).toBeNull();
      });
    });

    it("pending executions carry on by themselves after the restart", async () => {
      const { call } = made(after, "the restarted sandbox");
      const { execAcks } = made(cut, "the traffic");
      // Before any new paid request could wake the provider loop: every one reaches completed or refunded.
      const resumed = new Map((await waitAllFinal(call, 10_000)).map((e) => [e.executionId, e]));
      for (const e of execAcks) expect(resumed.get(e.executionId)?.status).toBe(e.fail ? "refunded" : "completed");
      for (const e of unfinishedAtKill) expect(resumed.has(e.executionId)).toBe(true);
    });

    it("same-key retries of what the kill cut off never charge twice, and a second retry replays the outcome", async () => {
      const { call } = made(after, "the restarted sandbox");
      const { acks, execAcks, interrupted } = made(cut, "the traffic");
      const retried: Array<{ step: string; req: Request; res: ApiResponse }> = [];
      for (const cutOff of interrupted) {
        const res = await send(call, cutOff.req);
        retried.push({ step: cutOff.step, req: cutOff.req, res });
        if (cutOff.step === "quote") {
          expect(res.status, res.text).toBe(201);
        } else if (cutOff.step === "confirm") {
          expect(res.status, res.text).toBe(200);
          expect(res.body).toMatchObject({ quoteId: cutOff.quoteId, status: "settled" });
          const amount = parseDecimal(res.body.amount)!;
          if (!acks.some((a) => a.quoteId === cutOff.quoteId))
            acks.push({ quoteId: cutOff.quoteId!, transaction: res.body.transaction, amount });
        } else {
          // The execution either is created now, or was created before the kill (its key's
          // outcome was not saved yet): then the quote names it. Never a second payment.
          if (res.status === 201) {
            expect(res.body).toMatchObject({ quoteId: cutOff.quoteId });
            execAcks.push({
              executionId: res.body.executionId,
              quoteId: cutOff.quoteId!,
              fail: cutOff.fail!,
              long: cutOff.long!,
              createdAt: Date.parse(res.body.createdAt),
            });
          } else {
            expect(res.status, res.text).toBe(409);
            expect(res.body.error).toMatchObject({ code: "quote_consumed", quoteId: cutOff.quoteId });
            expect(res.body.error.executionId).toMatch(/^exe_/);
            execAcks.push({
              executionId: res.body.error.executionId,
              quoteId: cutOff.quoteId!,
              fail: cutOff.fail!,
              long: cutOff.long!,
              createdAt: 0,
            });
          }
          const payment = res.headers["payment-response"];
          if (res.status === 201 && payment) {
            const settle = JSON.parse(Buffer.from(payment, "base64").toString("utf8"));
            expect(settle.success).toBe(true);
            if (!acks.some((a) => a.quoteId === cutOff.quoteId)) {
              const quote = await call("GET", `/quotes/${cutOff.quoteId}`);
              acks.push({
                quoteId: cutOff.quoteId!,
                transaction: settle.transaction,
                amount: parseDecimal(quote.body.amount)!,
              });
            }
          }
        }
      }
      // A second retry with the same key replays the stored outcome: nothing runs twice.
      for (const r of retried) {
        const again = await send(call, r.req);
        expect(again.status).toBe(r.res.status);
        expect(again.headers["idempotent-replayed"]).toBe("true");
        expect(again.body).toEqual(r.res.body);
      }
    });

    it("a payment acknowledged before the kill whose execution was never attempted still funds one", async () => {
      const { call } = made(after, "the restarted sandbox");
      const { acks, execAcks, proofs } = made(cut, "the traffic");
      for (const a of acks) {
        if (execAcks.some((e) => e.quoteId === a.quoteId)) continue;
        const p = proofs.get(a.quoteId)!;
        const res = await send(call, p.req);
        expect(res.status, res.text).toBe(201);
        execAcks.push({
          executionId: res.body.executionId,
          quoteId: a.quoteId,
          fail: p.fail,
          long: p.long,
          createdAt: Date.parse(res.body.createdAt),
        });
      }
    });

    it("everything settles: pending executions continue, failed ones are refunded", async () => {
      const { call } = made(after, "the restarted sandbox");
      const { execAcks } = made(cut, "the traffic");
      all = await waitAllFinal(call, 15_000);
      const byId = new Map(all.map((e) => [e.executionId, e]));
      for (const e of execAcks) {
        const record = byId.get(e.executionId);
        expect(record, `execution ${e.executionId} missing from the list`).toBeDefined();
        expect(record.quoteId).toBe(e.quoteId);
        expect(record.status).toBe(e.fail ? "refunded" : "completed");
      }
    });

    it("the service's records agree with the ledger to the atomic unit, and no USDC was made or lost", async () => {
      const { payer, rpc } = made(after, "the restarted sandbox");
      const { acks, proofs } = made(cut, "the traffic");
      const settledAll = made(all, "the settled executions");
      const m = made(mint, "the mint");
      const records = paymentRecords(made(home, "the home"));
      expect(records.filter((p) => p.status !== "settled")).toEqual([]);
      const recordByQuote = new Map(records.map((p) => [p.quote_id, p]));
      for (const a of acks) {
        const p = recordByQuote.get(a.quoteId);
        expect(p, `acknowledged payment for ${a.quoteId} missing from the service's records`).toBeDefined();
        expect(p!.transaction_sig).toBe(a.transaction);
        expect(BigInt(p!.amount)).toBe(a.amount);
      }
      const treasury = address(
        JSON.parse(Buffer.from(proofs.values().next().value!.proof, "base64").toString()).accepted.payTo as string,
      );
      let settled = 0n;
      for (const p of records) {
        const tx: any = await rpc
          .getTransaction(toSignature(p.transaction_sig!), { encoding: "base64", maxSupportedTransactionVersion: 0 })
          .send();
        expect(tx, `settled payment ${p.transaction_sig} not on the ledger`).not.toBeNull();
        expect(tx.meta.err).toBeNull();
        expect(tokenDelta(tx, payer.wallet.address, m)).toBe(-BigInt(p.amount));
        expect(tokenDelta(tx, treasury, m)).toBe(BigInt(p.amount));
        expect(p.payer).toBe(payer.wallet.address);
        settled += BigInt(p.amount);
      }
      let refunded = 0n;
      for (const e of settledAll.filter((x) => x.status === "refunded")) {
        const payment = recordByQuote.get(e.quoteId)!;
        expect(parseDecimal(e.refund.amount)).toBe(BigInt(payment.amount));
        const tx: any = await rpc
          .getTransaction(toSignature(e.refund.transaction), { encoding: "base64", maxSupportedTransactionVersion: 0 })
          .send();
        expect(tx, `refund ${e.refund.transaction} not on the ledger`).not.toBeNull();
        expect(tokenDelta(tx, payer.wallet.address, m)).toBe(BigInt(payment.amount));
        refunded += BigInt(payment.amount);
      }
      // Refund transactions are distinct (no execution refunded twice through the same transfer).
      const refundTxs = settledAll.filter((x) => x.status === "refunded").map((x) => x.refund.transaction);
      expect(new Set(refundTxs).size).toBe(refundTxs.length);

      expect(await usdcBalance(rpc, payer.wallet.address, m)).toBe(FUNDING - settled + refunded);
      expect(await usdcBalance(rpc, treasury, m)).toBe(settled - refunded);
      // Nothing else moved USDC: the whole supply is still the wallet's funding.
      const mintAccount = await rpc.getAccountInfo(address(m), { encoding: "base64" }).send();
      expect(getMintDecoder().decode(getBase64Encoder().encode(mintAccount.value!.data[0])).supply).toBe(FUNDING);
    });

    it("it keeps working after the restart", async () => {
      const { sb, call, payer, rpc } = made(after, "the restarted sandbox");
      const m = made(mint, "the mint");
      const q = await call("POST", "/quotes", {
        body: { action: ACTION, input: serverInput(999), budget: { amount: "1000", currency: "USDC" } },
      });
      expect(q.status).toBe(201);
      const before = await usdcBalance(rpc, payer.wallet.address, m);
      const proof = await payer.proof(q.body.paymentRequirement.accepts[0]);
      const created = await call("POST", "/executions", {
        body: { action: ACTION, input: serverInput(999) },
        headers: { "idempotency-key": "after-restart", "x-quote-id": q.body.quoteId, "x-payment-proof": proof },
      });
      expect(created.status, created.text).toBe(201);
      expect(await usdcBalance(rpc, payer.wallet.address, m)).toBe(
        before - BigInt(q.body.paymentRequirement.accepts[0].amount),
      );

      await sb.stop("SIGTERM");
    });
  });
});
