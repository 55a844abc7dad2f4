/**
 * A service that chooses the blockhash our payment is signed with. A proxy in front of the
 * service's /v1 (the RPC is the user's own, untouched) puts in every challenge — the quote's
 * requirements, the preflight 402 (body and PAYMENT-REQUIRED header), /payments/prepare — an
 * `extra.recentBlockhash` that is not valid yet (on this ledger the next one is predictable:
 * LiteSVM's next blockhash is the SHA-256 of the current one). It keeps the first proofs it
 * is handed, answers 402 payment_invalid, and once the ledger reaches that blockhash it
 * settles every kept proof at the service. Signed with that blockhash, a proof would land
 * then; signed with ours, it can no longer. The ledger decides what was paid.
 *
 * Solana's alone: an EVM authorization carries no blockhash, and its lifetime (validBefore)
 * is ours, never a hint of the service's. The kept proofs settled later, on EVM:
 * evm-kept-proofs.test.ts. The late landing an RPC's lagging history hid has no EVM case yet:
 * the app's options give a test no way to put a lagging EVM RPC in front of the rail.
 */
import { createHash } from "node:crypto";
import { getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { afterEach, describe, expect, it } from "vitest";
import { runAudit } from "../../src/app/audit.js";
import type { ChainPort } from "../../src/engine/rails/solana/chain.js";
import { PaidActionError } from "../../src/engine/errors.js";
import { proofBlockhash } from "../../src/engine/rails/solana/payer.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type ProxyAction, type ProxyRule, type SeenRequest } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;

/** The blockhash this ledger moves to next (LiteSVM: SHA-256 of the current one's bytes). */
function nextBlockhash(current: string): string {
  return getBase58Decoder().decode(
    createHash("sha256")
      .update(Uint8Array.from(getBase58Encoder().encode(current)))
      .digest(),
  );
}

interface Kept {
  quoteId: string;
  proof: string;
  /** The blockhash the proof's transaction was signed with. */
  blockhash: string;
  /** The future blockhash the challenge named when it was handed over. */
  offered: string;
  /** The ledger's blockhash when it was handed over: the one our RPC gave at signing. */
  current: string;
}

/** The lying proxy: future blockhashes in every challenge, the first `keep` proofs kept and refused. */
function futureBlockhashProxy(t: TestSandbox, keep: number, kept: Kept[], offered: string[]): ProxyRule[] {
  const future = () => {
    const next = nextBlockhash(t.sb.ledger.currentBlockhash());
    offered.push(next);
    return next;
  };
  const withFuture = (accepts: any[] | undefined) =>
    accepts?.map((a) => ({
      ...a,
      extra: { ...a.extra, recentBlockhash: future(), lastValidBlockHeight: "999999999" },
    }));
  const keepIt = (quoteId: string, proof: string): ProxyAction => {
    const decoded = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
    kept.push({
      quoteId,
      proof,
      blockhash: proofBlockhash(decoded.payload.transaction)!,
      offered: offered[offered.length - 1]!,
      current: t.sb.ledger.currentBlockhash(),
    });
    return {
      kind: "status",
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
      match: on("POST", "/v1/quotes"),
      action: {
        kind: "rewrite",
        transform: (q) =>
          q.paymentRequirement
            ? {
                ...q,
                paymentRequirement: { ...q.paymentRequirement, accepts: withFuture(q.paymentRequirement.accepts) },
              }
            : q,
      },
    },
    {
      match: on("POST", "/v1/payments/prepare"),
      action: {
        kind: "rewrite",
        transform: (b) =>
          b.paymentRequired
            ? { ...b, paymentRequired: { ...b.paymentRequired, accepts: withFuture(b.paymentRequired.accepts) } }
            : b,
      },
    },
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
      match: on("POST", "/v1/executions"),
      action: {
        kind: "dynamic",
        choose: (r) => {
          const proof = proofIn(r);
          if (proof) return kept.length >= keep ? undefined : keepIt(String(r.headers["x-quote-id"]), proof);
          // The preflight's 402: a future blockhash in its body and in its PAYMENT-REQUIRED header.
          return {
            kind: "rewrite",
            transform: (b, res) => {
              const challenge = b?.error?.paymentRequired;
              if (!challenge) return b;
              const lying = { ...challenge, accepts: withFuture(challenge.accepts) };
              res.headers["payment-required"] = Buffer.from(JSON.stringify(lying)).toString("base64");
              return { ...b, error: { ...b.error, paymentRequired: lying } };
            },
          };
        },
      },
    },
  ];
}

const said = (r: PaidCall | PaidActionError) =>
  r instanceof PaidActionError ? `${r.code}: ${r.message}` : `paid: ${r.executionId}`;

describe("a service that chooses the blockhash our payment is signed with", () => {
  let t: TestSandbox | undefined;
  let f: EngineFixture | undefined;
  afterEach(async () => {
    // Every refusal that said nothing was charged: no transfer for it on the ledger, its kept proofs replayed.
    await f?.checkRefusals();
    await f?.close();
    await t?.close();
    f = undefined;
    t = undefined;
  });

  /** The proxy settles every kept proof at the service itself, once the ledger has reached the blockhash it offered. */
  async function settleKept(sandbox: TestSandbox, kept: Kept[]): Promise<number[]> {
    const statuses: number[] = [];
    for (const k of kept) {
      const res = await sandbox.call("POST", "/payments/confirm", {
        body: { quoteId: k.quoteId, paymentProof: k.proof },
        headers: { "idempotency-key": `proxy-${k.quoteId}-${sandbox.sb.ledger.currentBlockhash()}` },
      });
      statuses.push(res.status);
    }
    return statuses;
  }

  for (const keep of [1, 2, 3]) {
    it(`${keep} proof(s) kept and settled later: one debit, never "nothing was charged" while a kept proof can still land, the caps hold, the audit agrees`, async () => {
      const sandbox = (t = await startTestSandbox());
      const kept: Kept[] = [];
      const offered: string[] = [];
      // A fresh challenge for every attempt (prepare too): every path the hint could come in by is lied on.
      f = await engineFixture({
        t: sandbox,
        rules: futureBlockhashProxy(sandbox, keep, kept, offered),
        env: { PAID_ACTIONS_MAX_PER_DAY: "0.50" },
        open: { settleWaitMs: 0, challengeMaxAgeMs: 0 },
      });
      const start = Date.now();
      const before = await sandbox.usdc(sandbox.wallet.address);
      const req = {
        action: "servers.provision",
        input: { ...SMALL_SERVER, image: `future-${keep}` },
        intentKey: `future-blockhash-${keep}`,
      };
      const answers: string[] = [];
      let paid: PaidCall | undefined;
      for (let round = 0; round < 3 * keep + 4 && !paid; round++) {
        const r = await outcome(f.pa.engine.pay(req));
        answers.push(said(r));
        // A kept proof can still land while the ledger accepts the blockhash it was signed with.
        const liveProofs = kept.filter((k) => k.blockhash === sandbox.sb.ledger.currentBlockhash());
        if (liveProofs.length > 0)
          expect(said(r), `round ${round}: ${liveProofs.length} kept proof(s) can still land`).not.toMatch(
            /nothing was charged/i,
          );
        expect(BigInt(Math.round(Number((await f.pa.engine.spending()).committedLast24h) * 1e6))).toBeLessThanOrEqual(
          500_000n,
        );
        if (!(r instanceof PaidActionError)) {
          paid = r;
          break;
        }
        expect(["outcome_unknown", "payment_invalid"]).toContain(r.code);
        // Time passes: the ledger moves to the blockhash the service offered, and the proxy settles what it kept.
        sandbox.sb.ledger.rotateBlockhash();
        for (const status of await settleKept(sandbox, kept)) expect(status).not.toBe(200);
      }
      expect(paid, answers.join("\n")).toBeDefined();
      expect(kept).toHaveLength(keep);
      // Every proof was signed with the blockhash our RPC gave at the time, never the one offered.
      for (const k of kept) {
        expect(k.blockhash).toBe(k.current);
        expect(k.blockhash).not.toBe(k.offered);
      }
      // One debit, for the one execution.
      expect(await sandbox.usdc(sandbox.wallet.address)).toBe(before - PRICE);
      const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
      expect(intent).toMatchObject({ state: "executed", budgetState: "spent", budgetAmount: PRICE, attempt: keep });
      expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
      const payments = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intent.intentId);
      expect(payments.map((p) => p.fate).sort()).toEqual([...Array(keep).fill("never"), "pending"].sort());
      for (const p of payments) expect(p.lastValidHeight).not.toBeNull();
      // The attempt that gave up last said so only once no kept proof could land.
      expect(answers.filter((a) => /nothing was charged/.test(a)).length).toBeLessThanOrEqual(1);
      // The audit: every outflow is a journaled payment, and no payment believed never to land is on chain.
      const audit = await runAudit(f.pa, { now: Date.now(), since: start });
      expect(audit.report.discrepancies).toEqual([]);
      expect(audit.report.ok).toBe(true);
      // The released payments stay watched until our height is well past their last valid height; nothing landed.
      expect((await f.pa.journal.watchedPayments(10)).map((p) => p.quoteId).sort()).toEqual(
        payments
          .filter((p) => p.fate === "never")
          .map((p) => p.quoteId)
          .sort(),
      );
      expect(await f.pa.engine.watchReleased()).toEqual({ watched: keep, landed: 0 });
      sandbox.sb.ledger.rotateBlockhash();
      expect(await f.pa.engine.watchReleased()).toMatchObject({ landed: 0 });
      expect(await f.pa.journal.watchedPayments(10)).toEqual([]);
    });
  }

  it("a kept proof settled while it can still land: the chain shows it, it is spent once, no second proof is signed", async () => {
    const sandbox = (t = await startTestSandbox());
    const kept: Kept[] = [];
    f = await engineFixture({
      t: sandbox,
      rules: futureBlockhashProxy(sandbox, 1, kept, []),
      open: { settleWaitMs: 0 },
    });
    const before = await sandbox.usdc(sandbox.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "future-live" },
      intentKey: "future-blockhash-live",
    };
    const first = await outcome(f.pa.engine.pay(req));
    expect(first).toBeInstanceOf(PaidActionError);
    expect(said(first)).toMatch(/^outcome_unknown: .*may still land/);
    expect(await settleKept(sandbox, kept)).toEqual([200]);
    sandbox.sb.ledger.rotateBlockhash();
    const second = await outcome(f.pa.engine.pay(req));
    expect(second, said(second)).not.toBeInstanceOf(PaidActionError);
    expect(await sandbox.usdc(sandbox.wallet.address)).toBe(before - PRICE);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent).toMatchObject({ state: "executed", budgetState: "spent", attempt: 0, settlement: "verified" });
    expect((await f.pa.journal.payment(intent.quoteId!))!.fate).toBe("landed");
  });

  it("a late landing the chain had hidden (an RPC whose history lagged): spent on top, counted against the caps, handed to a person with the evidence; the audit agrees", async () => {
    const sandbox = (t = await startTestSandbox());
    const kept: Kept[] = [];
    // Our own RPC, with a history that does not show the kept proof's transfer until told to.
    const hidden = new Set<string>();
    let lagging = true;
    const { createRpcChain } = await import("../../src/engine/rails/solana/rpc.js");
    const lag = async (): Promise<ChainPort> => {
      const real = await createRpcChain(sandbox.sb.rpcUrl);
      return {
        ...real,
        signaturesFor: async (address, opts) =>
          (await real.signaturesFor(address, opts)).filter((e) => !(lagging && hidden.has(e.signature))),
      };
    };
    f = await engineFixture({
      t: sandbox,
      rules: futureBlockhashProxy(sandbox, 1, kept, []),
      env: { PAID_ACTIONS_MAX_PER_DAY: "0.50" },
      open: { settleWaitMs: 0, chain: lag },
    });
    const before = await sandbox.usdc(sandbox.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "future-late" },
      intentKey: "future-blockhash-late",
    };
    expect(await outcome(f.pa.engine.pay(req))).toBeInstanceOf(PaidActionError);
    // The proxy settles the kept proof while it is valid; our RPC's history does not show it (yet).
    const settled = await sandbox.call("POST", "/payments/confirm", {
      body: { quoteId: kept[0]!.quoteId, paymentProof: kept[0]!.proof },
      headers: { "idempotency-key": "proxy-late" },
    });
    expect(settled.status).toBe(200);
    hidden.add(settled.body.transaction);
    sandbox.sb.ledger.rotateBlockhash();
    const paid = await outcome(f.pa.engine.pay(req));
    expect(paid, said(paid)).not.toBeInstanceOf(PaidActionError);
    expect(await sandbox.usdc(sandbox.wallet.address)).toBe(before - 2n * PRICE);
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.288");
    // The history catches up: the watch finds the transfer of the payment believed never to land.
    lagging = false;
    expect(await f.pa.engine.watchReleased()).toEqual({ watched: 1, landed: 1 });
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent).toMatchObject({ state: "executed", budgetState: "spent", budgetAmount: 2n * PRICE });
    expect(intent.attention).toContain(`landed in transaction ${settled.body.transaction}`);
    expect(intent.attention).toContain(`quote ${kept[0]!.quoteId}`);
    expect((await f.pa.engine.needsAttention()).map((v) => v.intentId)).toContain(intent.intentId);
    expect(await f.pa.journal.payment(kept[0]!.quoteId)).toMatchObject({
      fate: "landed",
      tx: settled.body.transaction,
      watch: false,
    });
    // It counts: 0.576 held, so the 0.50 daily cap refuses the next purchase.
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.576");
    const next = await outcome(
      f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, image: "after-late" } }),
    );
    expect(next).toBeInstanceOf(PaidActionError);
    expect((next as PaidActionError).code).toBe("budget_exceeded");
    expect(await sandbox.usdc(sandbox.wallet.address)).toBe(before - 2n * PRICE);
    const audit = await runAudit(f.pa, { now: Date.now() });
    expect(audit.report.discrepancies).toEqual([]);
  });
});
