/**
 * The traffic of test/sandbox/restart-kill-mid-traffic.test.ts: paid requests from several
 * workers against the built CLI sandbox, SIGKILLed while requests are in flight once enough
 * payments were acknowledged. Returns what the client was told (acknowledged payments and
 * executions) and what the kill cut off (to retry with the same keys after the restart).
 */
import { expect } from "vitest";
import { parseDecimal } from "../../src/domain/money.js";
import type { CliSandbox, Payer } from "./process.js";
import { ACTION, LONG_DELAY_MS, send, serverInput, sleep, type Request } from "./sandbox-restart.js";
import { apiClient, type ApiResponse } from "./sandbox.js";

const WORKERS = 4;
const MAX_ITERATIONS_PER_WORKER = 25;
export const KILL_AFTER_PAYMENTS = 15;

export interface PaymentAck {
  quoteId: string;
  transaction: string;
  amount: bigint;
}

export interface ExecutionAck {
  executionId: string;
  quoteId: string;
  fail: boolean;
  long: boolean;
  createdAt: number;
}

export interface Interrupted {
  step: string;
  req: Request;
  quoteId?: string;
  fail?: boolean;
  long?: boolean;
}

export interface KilledTraffic {
  acks: PaymentAck[];
  execAcks: ExecutionAck[];
  interrupted: Interrupted[];
  /** Each quote's proof and the execution request it was to be sent with. */
  proofs: Map<string, { proof: string; req: Request; fail: boolean; long: boolean }>;
  unexpected: string[];
  /** When the SIGKILL was sent (0: never). */
  killedAt: number;
}

/** Runs the traffic until `sb` is SIGKILLed mid-request (or 25 s passed: the kill comes anyway). */
export async function trafficUntilKilled(sb: CliSandbox, payer: Payer): Promise<KilledTraffic> {
  const call = apiClient(sb.info.baseUrl, sb.info.apiKey);
  const out: KilledTraffic = {
    acks: [],
    execAcks: [],
    interrupted: [],
    proofs: new Map(),
    unexpected: [],
    killedAt: 0,
  };
  const { acks, execAcks, interrupted, proofs, unexpected } = out;
  let killRequested = false;
  let seq = 0;

  const killNow = () => {
    if (out.killedAt) return;
    out.killedAt = Date.now();
    sb.child.kill("SIGKILL");
  };
  // Safety net: the kill happens even if traffic stalls.
  const safety = setTimeout(() => {
    killRequested = true;
    killNow();
  }, 25_000);

  /** One API request; undefined when the connection died (the process was killed). */
  const step = async (name: string, req: Request, meta: { quoteId?: string; fail?: boolean; long?: boolean } = {}) => {
    if (!killRequested && acks.length >= KILL_AFTER_PAYMENTS && (name === "confirm" || name === "exec")) {
      // Kill while this request is on its way or being handled (a random moment of it: the
      // fault's own timing, not a sync).
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
    for (let n = 0; n < MAX_ITERATIONS_PER_WORKER && !out.killedAt; n++) {
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
  return out;
}
