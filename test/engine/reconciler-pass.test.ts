/**
 * One pass of the reconciler over several due executions (the reference service over HTTP,
 * our RPC behind a recording proxy): the settlements claimed among them are read from our RPC
 * in one JSON-RPC batch, each still judged as alone — a claim naming another intent's
 * transaction, or one the chain does not have, is not taken for the payment, the transfer
 * carrying the proof's memo is found and verified in its place — and a look that finds
 * nothing new moves only the next poll, all of the pass's in one write.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Reconciler } from "../../src/engine/reconciler.js";
import { createServiceClient } from "../../src/engine/service/client.js";
import type { PaidCall } from "../../src/engine/index.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { countCalls } from "../helpers/journal-calls.mjs";
import { startProxy, type Proxy } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

/** A well-formed signature no transaction has: 64 zero bytes. */
const NO_SUCH_TX = "1".repeat(64);

interface RpcCall {
  method: string;
  params: unknown[];
}

describe("the reconciler: one pass over several due executions", () => {
  let t: TestSandbox;
  let rpc: Proxy;
  let f: EngineFixture;
  let rec: Reconciler;
  let paid: PaidCall[];
  beforeAll(async () => {
    // Executions stay pending: only settlements and schedules change.
    t = await startTestSandbox({ providerDelayMs: 3_600_000 });
    const url = new URL(t.sb.rpcUrl);
    rpc = await startProxy(url.origin);
    f = await engineFixture({ t, env: { SOLANA_RPC_URL: `${rpc.url}${url.pathname}` } });
    const client = createServiceClient({
      baseUrl: f.env.PAID_ACTIONS_BASE_URL!,
      apiKey: f.env.PAID_ACTIONS_API_KEY!,
      timeoutMs: 10_000,
      maxAttempts: 1,
    });
    rec = new Reconciler({ engine: f.pa.engine, journal: f.pa.journal, client, now: Date.now });
    paid = [];
    for (let hours = 1; hours <= 4; hours++)
      paid.push(
        await f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, durationHours: hours } }),
      );
  });
  afterAll(async () => {
    await f?.close();
    await rpc?.close();
    await t?.close();
  });

  const allDue = async () => {
    for (const p of paid) await f.pa.journal.update(p.intentId, { nextPollAt: Date.now() - 1 }, Date.now());
  };
  const rpcCalls = () => rpc.seen.map((r) => JSON.parse(r.body) as RpcCall | RpcCall[]);

  it("reads the claimed settlements in one batch and judges each as alone", async () => {
    const [a, b, c, d] = paid as [PaidCall, PaidCall, PaidCall, PaidCall];
    // b's service names a's transaction, c's one the chain never saw.
    await f.pa.journal.update(b.intentId, { paymentTx: a.payment.transaction }, Date.now());
    await f.pa.journal.update(c.intentId, { paymentTx: NO_SUCH_TX }, Date.now());
    await allDue();
    for (const p of paid) expect((await f.pa.journal.intent(p.intentId))!.settlement).toBe("claimed");
    rpc.seen.length = 0;

    await rec.runOnce();

    const batches = rpcCalls().filter((x): x is RpcCall[] => Array.isArray(x));
    expect(batches).toHaveLength(1);
    expect(batches[0]!.map((x) => x.method)).toEqual(Array(4).fill("getTransaction"));
    expect(batches[0]!.map((x) => x.params[0]).sort()).toEqual(
      [a.payment.transaction, a.payment.transaction, NO_SUCH_TX, d.payment.transaction].sort(),
    );
    // What the batch answered for a and d was not read again, one by one.
    const singles = rpcCalls().filter((x): x is RpcCall => !Array.isArray(x) && x.method === "getTransaction");
    expect(singles.map((x) => x.params[0])).not.toContain(d.payment.transaction);

    for (const p of [a, d])
      expect(await f.pa.journal.intent(p.intentId)).toMatchObject({
        settlement: "verified",
        paymentTx: p.payment.transaction,
        attention: null,
      });
    // A claim that is not this proof's transfer: the transfer carrying its memo verified instead, a person told.
    for (const [p, named] of [
      [b, a.payment.transaction],
      [c, NO_SUCH_TX],
    ] as const) {
      const row = (await f.pa.journal.intent(p.intentId))!;
      expect(row).toMatchObject({ settlement: "verified", paymentTx: p.payment.transaction });
      expect(row.attention).toContain(`the service named transaction ${named}`);
    }
  });

  it("moves the next poll of executions with nothing new in one write, their backoff doubled", async () => {
    await allDue();
    const before = await Promise.all(paid.map((p) => f.pa.journal.intent(p.intentId)));
    const calls = countCalls(f.pa.journal);
    const started = Date.now();

    await rec.runOnce();

    expect(calls.filter((m) => m === "reschedule")).toHaveLength(1);
    expect(calls).not.toContain("update");
    for (const [i, p] of paid.entries()) {
      const row = (await f.pa.journal.intent(p.intentId))!;
      const interval = Math.min(30_000, Math.max(1_000, (before[i]!.pollIntervalMs ?? 1_000) * 2));
      expect(row.pollIntervalMs).toBe(interval);
      expect(row.nextPollAt).toBeGreaterThanOrEqual(started + interval * 0.8);
      expect(row.execution).toEqual(before[i]!.execution);
      expect(row.execStatus).toBe("pending");
    }
  });
});
