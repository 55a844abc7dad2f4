/**
 * Kept proofs on EVM, where future-blockhash.test.ts keeps them on Solana: a service that is
 * handed our EIP-3009 authorizations keeps the first ones (answering 402 payment_invalid) and
 * tries to settle them later. Solana's lie there — a blockhash hint from the future — has no
 * analog here: the lifetime of an authorization is its validBefore, which is ours (rules.ts:
 * now plus a short bound), not the service's. What carries over is the rule: a proof that left
 * counts as possibly spent until our own RPC shows it landed or can never land; "can never
 * land" only once our RPC's newest block is at its validBefore with the nonce unused there;
 * then it is signed again, once. Anvil mines only when a transaction arrives, so the chain's
 * time is moved through its RPC (evm_setNextBlockTimestamp, evm_mine), each test on a chain of
 * its own (the clock never goes back). The EVM ledger's balances decide what was paid.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runAudit } from "../../src/app/audit.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { VALIDITY_BOUND_S } from "../../src/engine/rails/evm/rules.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type ProxyRule, type SeenRequest } from "../helpers/proxy.js";
import { authorizationOf, authorizationUsed, balances, EVM, mineAt, moved } from "../helpers/rails.js";
import { rpcCall, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;

interface Kept {
  quoteId: string;
  proof: string;
  nonce: string;
  validBefore: bigint;
}

/** The proxy: the first `keep` proofs (at /payments/confirm or with POST /executions) kept and refused. */
function keepingProxy(keep: number, kept: Kept[]): ProxyRule[] {
  const keepIt = (quoteId: string, proof: string) => {
    const { nonce, validBefore } = authorizationOf(proof);
    kept.push({ quoteId, proof, nonce, validBefore });
    return {
      kind: "status" as const,
      status: 402,
      body: {
        error: {
          code: "payment_invalid",
          message: "payment proof rejected by the facilitator: transaction_failed",
          reason: "transaction_failed",
        },
      },
    };
  };
  const proofIn = (r: SeenRequest) =>
    typeof r.headers["x-payment-proof"] === "string" ? (r.headers["x-payment-proof"] as string) : undefined;
  return [
    {
      match: on("POST", "/v1/payments/confirm"),
      action: {
        kind: "dynamic",
        choose: (r) => {
          if (kept.length >= keep) return undefined;
          const body = JSON.parse(r.body);
          return keepIt(body.quoteId, body.paymentProof);
        },
      },
    },
    {
      match: (r) => on("POST", "/v1/executions")(r) && proofIn(r) !== undefined,
      action: {
        kind: "dynamic",
        choose: (r) => (kept.length >= keep ? undefined : keepIt(String(r.headers["x-quote-id"]), proofIn(r)!)),
      },
    },
  ];
}

const said = (r: PaidCall | PaidActionError) =>
  r instanceof PaidActionError ? `${r.code}: ${r.message}` : `paid: ${r.executionId}`;

describe("kept EVM proofs settled later", () => {
  let t: TestSandbox | undefined;
  let f: EngineFixture | undefined;
  afterEach(async () => {
    // Every refusal that said nothing was charged: its authorization unused on the EVM ledger, the kept proofs replayed.
    await f?.checkRefusals();
    await f?.close();
    await t?.close();
    f = undefined;
    t = undefined;
  });

  /** Our RPC's newest block's time (unix seconds). */
  const chainTime = async (sb: TestSandbox) =>
    BigInt(
      (await rpcCall<{ timestamp: string }>(sb.sb.evm!.rpcUrl, "eth_getBlockByNumber", ["latest", false])).timestamp,
    );

  /** The proxy settles every kept proof at the service itself; the statuses it got. */
  async function settleKept(sb: TestSandbox, kept: Kept[]): Promise<number[]> {
    const statuses: number[] = [];
    for (const k of kept) {
      const res = await sb.call("POST", "/payments/confirm", {
        body: { quoteId: k.quoteId, paymentProof: k.proof },
        headers: { "idempotency-key": `proxy-${k.nonce}-${await chainTime(sb)}` },
      });
      statuses.push(res.status);
    }
    return statuses;
  }

  for (const keep of [1, 2, 3]) {
    it(`${keep} proof(s) kept and settled later: 'can never land' only past validBefore, signed again once each, one debit, the audit agrees`, async () => {
      const sb = (t = await startTestSandbox(EVM.sandbox));
      const kept: Kept[] = [];
      f = await engineFixture({
        t: sb,
        env: { ...EVM.env(sb), PAID_ACTIONS_MAX_PER_DAY: "0.50" },
        rules: keepingProxy(keep, kept),
        open: { settleWaitMs: 0, challengeMaxAgeMs: 0 },
      });
      const start = Date.now();
      const agent = EVM.payer(sb);
      const before = await balances(EVM, sb);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: `evm-kept-${keep}` },
        intentKey: `evm-kept-${keep}`,
      };
      const answers: string[] = [];
      let paid: PaidCall | undefined;
      for (let round = 0; round < 3 * keep + 4 && !paid; round++) {
        const r = await outcome(f.pa.engine.pay(req));
        answers.push(said(r));
        // A kept proof can still land while our RPC's newest block is before its validBefore.
        const live = async () => {
          const now = await chainTime(sb);
          return kept.filter((k) => now < k.validBefore);
        };
        const landable = (await live()).length;
        if (landable > 0)
          expect(said(r), `round ${round}: ${landable} kept proof(s) can still land`).not.toMatch(
            /nothing was charged/i,
          );
        if (!(r instanceof PaidActionError)) {
          paid = r;
          break;
        }
        expect(["outcome_unknown", "payment_invalid"]).toContain(r.code);
        if (r.code === "outcome_unknown") {
          // Asked again at once: the chain cannot tell yet, so nothing is signed again.
          const payments = (await f.pa.journal.paymentsSince(0)).length;
          expect(said(await outcome(f.pa.engine.pay(req)))).toMatch(/^outcome_unknown: /);
          expect((await f.pa.journal.paymentsSince(0)).length).toBe(payments);
        }
        // Time passes (5 s, then the chain's jump to the newest kept proof's validBefore), and
        // the service settles what it kept: too late, refused. The chain's clock then runs ahead
        // of ours by the proofs' lifetime less those 5 s: the margin the next proof lands in.
        const waiting = await live();
        if (waiting.length === 0) continue;
        await new Promise((ok) => setTimeout(ok, 5_000));
        await mineAt(sb, waiting[waiting.length - 1]!.validBefore);
        for (const status of await settleKept(sb, kept)) expect(status).not.toBe(200);
      }
      expect(paid, answers.join("\n")).toBeDefined();
      expect(kept).toHaveLength(keep);
      // Every kept authorization: its own nonce, valid no longer than our bound, never used.
      expect(new Set(kept.map((k) => k.nonce)).size).toBe(keep);
      const payments = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === paid!.intentId);
      for (const k of kept) {
        const record = payments.find((p) => p.nonce === k.nonce)!;
        expect(record.fate).toBe("never");
        expect(record.validBefore).toBe(k.validBefore);
        expect(k.validBefore <= BigInt(Math.floor(record.signedAt / 1000) + VALIDITY_BOUND_S)).toBe(true);
        expect(await authorizationUsed(sb, agent, k.nonce)).toBe(false);
      }
      // One debit, for the one execution, read from the EVM ledger.
      expect(await moved(EVM, sb, before)).toEqual({ payer: PRICE, payee: PRICE });
      const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
      expect(intent).toMatchObject({ state: "executed", budgetState: "spent", budgetAmount: PRICE, attempt: keep });
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
      expect(payments.map((p) => p.fate).sort()).toEqual([...Array(keep).fill("never"), "pending"].sort());
      // The attempt that gave up last said so only once no kept proof could land.
      expect(answers.filter((a) => /nothing was charged/.test(a)).length).toBeLessThanOrEqual(1);
      // The audit: every outflow is a journaled payment, and no payment believed never to land is on chain.
      const audit = await runAudit(f.pa, { now: Date.now(), since: start });
      expect(audit.report.discrepancies).toEqual([]);
      expect(audit.report.ok).toBe(true);
      // The released payments stay watched until our newest block is well past their validBefore; nothing landed.
      expect((await f.pa.journal.watchedPayments(10)).map((p) => p.quoteId).sort()).toEqual(
        payments
          .filter((p) => p.fate === "never")
          .map((p) => p.quoteId)
          .sort(),
      );
      expect(await f.pa.engine.watchReleased()).toEqual({ watched: keep, landed: 0 });
      await mineAt(sb, (await chainTime(sb)) + 601n);
      expect(await f.pa.engine.watchReleased()).toMatchObject({ landed: 0 });
      expect(await f.pa.journal.watchedPayments(10)).toEqual([]);
    });
  }

  it("a kept proof settled while it can still land: our RPC shows it, it is spent once, no second proof is signed", async () => {
    const sb = (t = await startTestSandbox(EVM.sandbox));
    const kept: Kept[] = [];
    f = await engineFixture({
      t: sb,
      env: EVM.env(sb),
      rules: keepingProxy(1, kept),
      open: { settleWaitMs: 0 },
    });
    const before = await balances(EVM, sb);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "evm-kept-live" },
      intentKey: "evm-kept-live",
    };
    const first = await outcome(f.pa.engine.pay(req));
    expect(first).toBeInstanceOf(PaidActionError);
    expect(said(first)).toMatch(/^outcome_unknown: .*may still land/);
    expect(await settleKept(sb, kept)).toEqual([200]);
    const second = await outcome(f.pa.engine.pay(req));
    expect(second, said(second)).not.toBeInstanceOf(PaidActionError);
    expect(await moved(EVM, sb, before)).toEqual({ payer: PRICE, payee: PRICE });
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent).toMatchObject({ state: "executed", budgetState: "spent", attempt: 0, settlement: "verified" });
    expect((await f.pa.journal.payment(intent.quoteId!))!.fate).toBe("landed");
    expect(await authorizationUsed(sb, EVM.payer(sb), kept[0]!.nonce)).toBe(true);
  });
});
