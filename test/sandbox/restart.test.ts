/**
 * Restart persistence of the built CLI sandbox (a separate process): under kill -9 in the
 * middle of paid traffic, nothing the client was told about is lost, the ledger agrees with
 * the service's records to the atomic unit, pending work resumes, and retries with the same
 * Idempotency-Key never charge twice. A clean SIGTERM stop continues exactly where it stopped.
 */
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSolanaRpc, address, getBase64Encoder, signature as toSignature, type Address } from "@solana/kit";
import { getMintDecoder } from "@solana-program/token";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import { parseDecimal } from "../../src/domain/money.js";
import { apiClient, type ApiResponse, type Call } from "../helpers/sandbox.js";
import {
  ensureBuilt,
  killAllStarted,
  payerFor,
  startCliSandbox,
  writeKillOnSubmitPreload,
  type CliSandbox,
  type Payer,
} from "../helpers/process.js";

const USDC = 1_000_000n;
const FUNDING = 1000n * USDC;
const PROVIDER_DELAY_MS = 200;
const LONG_DELAY_MS = 1_500;
const FINAL = new Set(["completed", "refunded"]);
const ACTION = "servers.provision";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const serverInput = (i: number) => ({ region: "eu-west-1", plan: "small", durationHours: 1 + i });

interface Request {
  method: string;
  path: string;
  body: unknown;
  headers: Record<string, string>;
}

interface PaymentRow {
  payment_id: string;
  quote_id: string;
  status: string;
  transaction_sig: string | null;
  payer: string | null;
  amount: string;
}

/** The service's own payment records, read from its SQLite file (read-only, WAL reader). */
function paymentRecords(home: string): PaymentRow[] {
  const db = new Database(join(home, "sandbox.sqlite"), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(`SELECT payment_id, quote_id, status, transaction_sig, payer, amount FROM payments ORDER BY payment_id`)
      .all() as PaymentRow[];
  } finally {
    db.close();
  }
}

const send = (call: Call, r: Request) => call(r.method, r.path, { body: r.body, headers: r.headers });

/** All executions of the API key, newest first (paginated, bounded). */
async function listExecutions(call: Call): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 20; page++) {
    const res: ApiResponse = await call("GET", `/executions?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
    if (!cursor) return items;
  }
  throw new Error("more than 20 pages of executions");
}

/** Polls until every execution of the key is completed or refunded (bounded). */
async function waitAllFinal(call: Call, timeoutMs: number): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const items = await listExecutions(call);
    const open = items.filter((e) => !FINAL.has(e.status));
    if (open.length === 0) return items;
    if (Date.now() > deadline) {
      throw new Error(
        `executions still not final after ${timeoutMs} ms: ${JSON.stringify(open.map((e) => [e.executionId, e.status]))}`,
      );
    }
    await sleep(100);
  }
}

/** Amount (atomic) moved out of `owner`'s token account by a landed transaction, per getTransaction meta. */
function tokenDelta(tx: any, owner: string, mint: string): bigint {
  const pick = (list: any[]) => list.find((b) => b.owner === owner && b.mint === mint);
  const pre = pick(tx.meta.preTokenBalances ?? []);
  const post = pick(tx.meta.postTokenBalances ?? []);
  return BigInt(post?.uiTokenAmount.amount ?? "0") - BigInt(pre?.uiTokenAmount.amount ?? "0");
}

async function usdcBalance(rpc: ReturnType<typeof createSolanaRpc>, owner: string, mint: string): Promise<bigint> {
  const ata = await associatedTokenAddress(owner, mint);
  return BigInt((await rpc.getTokenAccountBalance(ata).send()).value.amount);
}

const homes: string[] = [];
function newHome(): string {
  const home = mkdtempSync(join(tmpdir(), "pam-restart-"));
  homes.push(home);
  return home;
}

describe("the CLI sandbox across restarts", () => {
  beforeAll(() => {
    ensureBuilt();
  }, 60_000);

  afterAll(() => {
    killAllStarted();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  });

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
          await sleep(1000 * Number(res.headers["retry-after"] ?? "1"));
          continue;
        }
        return res;
      }
      unexpected.push(`${name} ${req.path}: still rate limited`);
      return undefined;
    };

    const worker = async () => {
      for (let n = 0; n < MAX_ITERATIONS_PER_WORKER && !killRequested; n++) {
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
