/**
 * Restart persistence of the built CLI sandbox (a separate process) under kill -9 in the
 * middle of paid traffic: nothing the client was told about is lost, the ledger agrees with
 * the service's records to the atomic unit, pending work resumes, and retries with the same
 * Idempotency-Key never charge twice.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSolanaRpc, address, getBase64Encoder, signature as toSignature } from "@solana/kit";
import { getMintDecoder } from "@solana-program/token";
import { parseDecimal } from "../../src/domain/money.js";
import { apiClient, type ApiResponse } from "../helpers/sandbox.js";
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
  sleep,
  tokenDelta,
  usdcBalance,
  waitAllFinal,
  type Request,
} from "../helpers/sandbox-restart.js";

describe("the CLI sandbox across restarts", () => {
  const { newHome } = restartFixture();
  it("kill -9 mid-traffic loses nothing acknowledged, resumes pending work, and same-key retries never charge twice", async () => {
    const home = newHome();
    let sb: CliSandbox = await startCliSandbox(home, ["--provider-delay-ms", String(PROVIDER_DELAY_MS)]);
    let call = apiClient(sb.info.baseUrl, sb.info.apiKey);
    let payer: Payer = await payerFor(sb.info);
    const mint = sb.info.asset;

    // ---- traffic, then SIGKILL while requests are in flight ------------------------------
    const WORKERS = 4;
    const MAX_ITERATIONS_PER_WORKER = 25;
    const KILL_AFTER_PAYMENTS = 15;
    const acks: Array<{ quoteId: string; transaction: string; amount: bigint }> = [];
    const execAcks: Array<{ executionId: string; quoteId: string; fail: boolean; long: boolean; createdAt: number }> =
      [];
    const interrupted: Array<{ step: string; req: Request; quoteId?: string; fail?: boolean; long?: boolean }> = [];
    const proofs = new Map<string, { proof: string; req: Request; fail: boolean; long: boolean }>();
    const unexpected: string[] = [];
    let killRequested = false;
    let killedAt = 0;
    let seq = 0;

    const killNow = () => {
      if (killedAt) return;
      killedAt = Date.now();
      sb.child.kill("SIGKILL");
    };
    // Safety net: the kill happens even if traffic stalls.
    const safety = setTimeout(() => {
      killRequested = true;
      killNow();
    }, 25_000);

    /** One API request; undefined when the connection died (the process was killed). */
    const step = async (
      name: string,
      req: Request,
      meta: { quoteId?: string; fail?: boolean; long?: boolean } = {},
    ) => {
      if (!killRequested && acks.length >= KILL_AFTER_PAYMENTS && (name === "confirm" || name === "exec")) {
        // Kill while this request is on its way or being handled.
        killRequested = true;
        setTimeout(killNow, Math.floor(Math.random() * 8));
      }
      for (let attempt = 0; attempt < 4; attempt++) {
        let res: ApiResponse;
        try {
          res = await send(call, req);
        } catch (e) {
          if (killRequested) {
            interrupted.push({ step: name, req, ...meta });
          } else {
            unexpected.push(`${name} ${req.path}: ${(e as Error).message}`);
          }
          return undefined;
        }
        if (res.status === 429) {
          // The CLI sandbox is another process with the wall clock: a client obeys its Retry-After.
          await sleep(1000 * Number(res.headers["retry-after"] ?? "1"));
          continue;
        }
        return res;
      }
      unexpected.push(`${name} ${req.path}: still rate limited`);
      return undefined;
    };

    const worker = async () => {
      // Workers go on until the process is actually dead, so every one of them has a request
      // cut off by the kill however fast the service answered the one that triggered it.
      for (let n = 0; n < MAX_ITERATIONS_PER_WORKER && !killedAt; n++) {
        const i = seq++;
        const fail = i % 3 === 1;
        const long = i % 4 === 3;
        const input = serverInput(i);
        const q = await step("quote", {
          method: "POST",
          path: "/quotes",
          body: { action: ACTION, input, budget: { amount: "1000", currency: "USDC" } },
          headers: { "idempotency-key": `quote-${i}` },
        });
        if (!q) return;
        if (q.status !== 201) {
          unexpected.push(`quote ${q.status} ${q.text}`);
          return;
        }
        const quoteId: string = q.body.quoteId;
        const requirements = q.body.paymentRequirement.accepts[0];
        let proof: string;
        try {
          proof = await payer.proof(requirements);
        } catch (e) {
          if (!killRequested) unexpected.push(`proof: ${(e as Error).message}`);
          return;
        }
        const confirmReq: Request = {
          method: "POST",
          path: "/payments/confirm",
          body: { quoteId, paymentProof: proof },
          headers: { "idempotency-key": `confirm-${i}` },
        };
        const execReq: Request = {
          method: "POST",
          path: "/executions",
          body: { action: ACTION, input },
          headers: {
            "idempotency-key": `exec-${i}`,
            "x-quote-id": quoteId,
            "x-payment-proof": proof,
            ...(fail ? { "x-sandbox-outcome": "fail" } : {}),
            ...(long ? { "x-sandbox-delay-ms": String(LONG_DELAY_MS) } : {}),
          },
        };
        proofs.set(quoteId, { proof, req: execReq, fail, long });
        const c = await step("confirm", confirmReq, { quoteId, fail, long });
        if (!c) return;
        if (c.status !== 200) {
          unexpected.push(`confirm ${c.status} ${c.text}`);
          return;
        }
        expect(c.body).toMatchObject({ quoteId, status: "settled", payer: payer.wallet.address });
        expect(parseDecimal(c.body.amount)).toBe(BigInt(requirements.amount));
        acks.push({ quoteId, transaction: c.body.transaction, amount: BigInt(requirements.amount) });

        const e = await step("exec", execReq, { quoteId, fail, long });
        if (!e) return;
        if (e.status !== 201) {
          unexpected.push(`exec ${e.status} ${e.text}`);
          return;
        }
        expect(e.body).toMatchObject({ status: "pending", quoteId });
        execAcks.push({
          executionId: e.body.executionId,
          quoteId,
          fail,
          long,
          createdAt: Date.parse(e.body.createdAt),
        });
      }
    };

    try {
      await Promise.all(Array.from({ length: WORKERS }, () => worker()));
    } finally {
      clearTimeout(safety);
    }
    const oldPid = sb.pid;
    const exit = await sb.stop("SIGKILL", 5_000);

    expect(unexpected).toEqual([]);
    expect(killedAt).toBeGreaterThan(0);
    expect(exit.signal).toBe("SIGKILL");
    expect(acks.length).toBeGreaterThanOrEqual(KILL_AFTER_PAYMENTS);
    // Requests were cut off by the kill: they are retried below with their same keys.
    expect(interrupted.length).toBeGreaterThanOrEqual(1);
    // Executions whose provider could not have finished before the kill (created less than
    // their delay before it): they must carry on after the restart.
    const unfinishedAtKill = execAcks.filter(
      (e) => e.createdAt + (e.long ? LONG_DELAY_MS : PROVIDER_DELAY_MS) > killedAt,
    );
    expect(unfinishedAtKill.length).toBeGreaterThanOrEqual(1);
    // kill -9 left a stale pid file behind; it must not block the restart.
    expect(readFileSync(join(home, "sandbox.pid"), "utf8").trim()).toBe(String(oldPid));

    // ---- restart on the same home --------------------------------------------------------
    sb = await startCliSandbox(home, ["--provider-delay-ms", String(PROVIDER_DELAY_MS)]);
    expect(sb.pid).not.toBe(oldPid);
    call = apiClient(sb.info.baseUrl, sb.info.apiKey);
    payer = await payerFor(sb.info);
    const rpc = createSolanaRpc(sb.info.rpcUrl);
    expect(sb.info.asset).toBe(mint);

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

    // Pending executions carry on by themselves after the restart (before any new request
    // could wake the provider loop): every one reaches completed or refunded.
    const resumed = new Map((await waitAllFinal(call, 10_000)).map((e) => [e.executionId, e]));
    for (const e of execAcks) expect(resumed.get(e.executionId)?.status).toBe(e.fail ? "refunded" : "completed");
    for (const e of unfinishedAtKill) expect(resumed.has(e.executionId)).toBe(true);

    // ---- same-key retries of what the kill cut off ------------------------------------------
    const retried: Array<{ step: string; req: Request; res: ApiResponse }> = [];
    for (const it of interrupted) {
      const res = await send(call, it.req);
      retried.push({ step: it.step, req: it.req, res });
      if (it.step === "quote") {
        expect(res.status, res.text).toBe(201);
      } else if (it.step === "confirm") {
        expect(res.status, res.text).toBe(200);
        expect(res.body).toMatchObject({ quoteId: it.quoteId, status: "settled" });
        const amount = parseDecimal(res.body.amount)!;
        if (!acks.some((a) => a.quoteId === it.quoteId))
          acks.push({ quoteId: it.quoteId!, transaction: res.body.transaction, amount });
      } else {
        // The execution either is created now, or was created before the kill (its key's
        // outcome was not saved yet): then the quote names it. Never a second payment.
        if (res.status === 201) {
          expect(res.body).toMatchObject({ quoteId: it.quoteId });
          execAcks.push({
            executionId: res.body.executionId,
            quoteId: it.quoteId!,
            fail: it.fail!,
            long: it.long!,
            createdAt: Date.parse(res.body.createdAt),
          });
        } else {
          expect(res.status, res.text).toBe(409);
          expect(res.body.error).toMatchObject({ code: "quote_consumed", quoteId: it.quoteId });
          expect(res.body.error.executionId).toMatch(/^exe_/);
          execAcks.push({
            executionId: res.body.error.executionId,
            quoteId: it.quoteId!,
            fail: it.fail!,
            long: it.long!,
            createdAt: 0,
          });
        }
        const payment = res.headers["payment-response"];
        if (res.status === 201 && payment) {
          const settle = JSON.parse(Buffer.from(payment, "base64").toString("utf8"));
          expect(settle.success).toBe(true);
          if (!acks.some((a) => a.quoteId === it.quoteId)) {
            const quote = await call("GET", `/quotes/${it.quoteId}`);
            acks.push({
              quoteId: it.quoteId!,
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

    // Payments acknowledged before the kill whose execution was never attempted still fund one.
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

    // ---- everything settles: pending executions continue, failed ones are refunded -----------
    const all = await waitAllFinal(call, 15_000);
    const byId = new Map(all.map((e) => [e.executionId, e]));
    for (const e of execAcks) {
      const record = byId.get(e.executionId);
      expect(record, `execution ${e.executionId} missing from the list`).toBeDefined();
      expect(record.quoteId).toBe(e.quoteId);
      expect(record.status).toBe(e.fail ? "refunded" : "completed");
    }

    // ---- the service's records against the ledger, to the atomic unit ---------------------------
    const records = paymentRecords(home);
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
      expect(tokenDelta(tx, payer.wallet.address, mint)).toBe(-BigInt(p.amount));
      expect(tokenDelta(tx, treasury, mint)).toBe(BigInt(p.amount));
      expect(p.payer).toBe(payer.wallet.address);
      settled += BigInt(p.amount);
    }
    let refunded = 0n;
    for (const e of all.filter((x) => x.status === "refunded")) {
      const payment = recordByQuote.get(e.quoteId)!;
      expect(parseDecimal(e.refund.amount)).toBe(BigInt(payment.amount));
      const tx: any = await rpc
        .getTransaction(toSignature(e.refund.transaction), { encoding: "base64", maxSupportedTransactionVersion: 0 })
        .send();
      expect(tx, `refund ${e.refund.transaction} not on the ledger`).not.toBeNull();
      expect(tokenDelta(tx, payer.wallet.address, mint)).toBe(BigInt(payment.amount));
      refunded += BigInt(payment.amount);
    }
    // Refund transactions are distinct (no execution refunded twice through the same transfer).
    const refundTxs = all.filter((x) => x.status === "refunded").map((x) => x.refund.transaction);
    expect(new Set(refundTxs).size).toBe(refundTxs.length);

    expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(FUNDING - settled + refunded);
    expect(await usdcBalance(rpc, treasury, mint)).toBe(settled - refunded);
    // Nothing else moved USDC: the whole supply is still the wallet's funding.
    const mintAccount = await rpc.getAccountInfo(address(mint), { encoding: "base64" }).send();
    expect(getMintDecoder().decode(getBase64Encoder().encode(mintAccount.value!.data[0])).supply).toBe(FUNDING);

    // ---- and it keeps working after the restart ----------------------------------------------------
    const q = await call("POST", "/quotes", {
      body: { action: ACTION, input: serverInput(999), budget: { amount: "1000", currency: "USDC" } },
    });
    expect(q.status).toBe(201);
    const before = await usdcBalance(rpc, payer.wallet.address, mint);
    const proof = await payer.proof(q.body.paymentRequirement.accepts[0]);
    const created = await call("POST", "/executions", {
      body: { action: ACTION, input: serverInput(999) },
      headers: { "idempotency-key": "after-restart", "x-quote-id": q.body.quoteId, "x-payment-proof": proof },
    });
    expect(created.status, created.text).toBe(201);
    expect(await usdcBalance(rpc, payer.wallet.address, mint)).toBe(
      before - BigInt(q.body.paymentRequirement.accepts[0].amount),
    );

    await sb.stop("SIGTERM");
  }, 60_000);
});
