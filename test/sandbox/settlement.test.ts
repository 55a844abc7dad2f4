/**
 * Truthful settlement: when the x402 reference facilitator reports a settlement as pending
 * or failed after it has sent the transaction, the service answers from what the ledger
 * holds — settled if it landed, 503 (retry with the same key) while it could still land,
 * 402 only once it never can — and never answers a charged payer with payment_invalid.
 *
 * The facilitator runs its real code path; the only fault is the narrowly scoped hook on its
 * signer (`FacilitatorFaults`): confirmation that times out, or a transaction held in flight.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FacilitatorFaults } from "../../src/sandbox/index.js";
import { mayHaveBeenSent } from "../../src/sandbox/service/settlement.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { expectError, freshKey } from "../helpers/api.js";
import { rpcCall, SERVER_INPUT, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const ACTION = "servers.provision";
const AMOUNT = 288_000n; // 0.288 USDC for SERVER_INPUT

interface Harness {
  t: TestSandbox;
  faults: FacilitatorFaults;
  treasury: string;
}

async function harness(home?: string): Promise<Harness> {
  const faults = new FacilitatorFaults();
  const t = await startTestSandbox({ facilitatorFaults: faults, ...(home ? { home } : {}) });
  return { t, faults, treasury: t.sb.keys.treasury.address };
}

async function newQuote(t: TestSandbox): Promise<{ quoteId: string; reqs: PaymentRequirements }> {
  const quote = await t.quote(ACTION, SERVER_INPUT);
  return { quoteId: quote.quoteId, reqs: quote.paymentRequirement.accepts[0] as PaymentRequirements };
}

const confirm = (t: TestSandbox, quoteId: string, paymentProof: string, key = freshKey("confirm")) =>
  t.call("POST", "/payments/confirm", { body: { quoteId, paymentProof }, headers: { "idempotency-key": key } });

const execute = (t: TestSandbox, quoteId: string, proof?: string, key = freshKey("exec")) =>
  t.call("POST", "/executions", {
    body: { action: ACTION, input: SERVER_INPUT },
    headers: { "idempotency-key": key, "x-quote-id": quoteId, ...(proof ? { "x-payment-proof": proof } : {}) },
  });

function paymentRows(
  t: TestSandbox,
  quoteId: string,
): Array<{ status: string; transaction_sig: string | null; payer: string | null }> {
  return t.sb.db
    .prepare(`SELECT status, transaction_sig, payer FROM payments WHERE quote_id = ?`)
    .all(quoteId) as Array<{
    status: string;
    transaction_sig: string | null;
    payer: string | null;
  }>;
}

async function balances(h: Harness): Promise<{ payer: bigint; treasury: bigint }> {
  return { payer: await h.t.usdc(h.t.wallet.address), treasury: await h.t.usdc(h.treasury) };
}

/** The ledger moved exactly `amount` once from the payer to the treasury since `before`. */
async function expectMovedOnce(
  h: Harness,
  before: { payer: bigint; treasury: bigint },
  amount = AMOUNT,
): Promise<void> {
  expect(await balances(h)).toEqual({ payer: before.payer - amount, treasury: before.treasury + amount });
}

describe("mayHaveBeenSent: which failed facilitator settlements may have moved money", () => {
  it.each([
    [{ errorReason: "invalid_exact_svm_payload_amount_mismatch", transaction: "" }, false],
    [{ errorReason: "invalid_exact_svm_transaction_simulation_failed", transaction: "" }, false],
    [{ errorReason: "invalid_exact_svm_transaction_failed", transaction: "" }, false], // the ledger refused the send
    [{ errorReason: "settlement_pending", transaction: "5sig" }, true],
    [{ errorReason: "settlement_pending", transaction: "" }, true],
    [{ errorReason: "invalid_exact_svm_transaction_failed", transaction: "5sig" }, true], // failed after sending
    [{ errorReason: "duplicate_settlement", transaction: "" }, true],
    [{ errorReason: "post_settlement_transfer_not_confirmed", transaction: "5sig" }, true],
  ])("%j → %s", (result, expected) => {
    expect(mayHaveBeenSent(result)).toBe(expected);
  });
});

describe("a settlement the facilitator reports pending after sending", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(() => h.t.close());

  it("confirmation times out but the transfer landed: 200 settled, the money moved once, the record kept", async () => {
    const { t, faults } = h;
    const { quoteId, reqs } = await newQuote(t);
    const before = await balances(h);
    faults.pendingAfterSend(1);
    const res = await confirm(t, quoteId, await t.proof(reqs));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ quoteId, status: "settled", amount: "0.288", payer: t.wallet.address });
    await expectMovedOnce(h, before);
    expect(paymentRows(t, quoteId)).toEqual([
      { status: "settled", transaction_sig: res.body.transaction, payer: t.wallet.address },
    ]);
    const tx = await rpcCall(t.sb.rpcUrl, "getTransaction", [
      res.body.transaction,
      { encoding: "base64", maxSupportedTransactionVersion: 0 },
    ]);
    expect(tx.meta.err).toBeNull();

    // The paid quote funds its execution without a second charge.
    const created = await execute(t, quoteId);
    expect(created.status, created.text).toBe(201);
    await expectMovedOnce(h, before);
  });

  it("the same on POST /executions with the proof attached: 201, charged once", async () => {
    const { t, faults } = h;
    const { quoteId, reqs } = await newQuote(t);
    const before = await balances(h);
    faults.pendingAfterSend(1);
    const proof = await t.proof(reqs);
    const key = freshKey("exec");
    const res = await execute(t, quoteId, proof, key);
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ quoteId, status: "pending" });
    await expectMovedOnce(h, before);
    expect(paymentRows(t, quoteId)).toMatchObject([{ status: "settled" }]);
    const replay = await execute(t, quoteId, proof, key);
    expect(replay.status).toBe(201);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    await expectMovedOnce(h, before);
  });

  it("still in flight: 503 with Retry-After and the record kept; once it lands, the same key gets 200 settled, charged once", async () => {
    const { t, faults } = h;
    const { quoteId, reqs } = await newQuote(t);
    const before = await balances(h);
    faults.holdInFlight(1);
    const proof = await t.proof(reqs);
    const key = freshKey("confirm");
    const pending = await confirm(t, quoteId, proof, key);
    const error = expectError(pending, 503, "unavailable");
    expect(error).toMatchObject({ quoteId, reason: "settlement_pending" });
    expect(Number(pending.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(paymentRows(t, quoteId)).toEqual([{ status: "settling", transaction_sig: null, payer: null }]);
    expect(await balances(h)).toEqual(before);
    const [held] = faults.heldSignatures();
    expect(held).toBeTypeOf("string");

    // While it may land, nothing else pays the quote: not the same key again (it is still in
    // flight), not the quote without a proof, not a second proof.
    expectError(await confirm(t, quoteId, proof, key), 503, "unavailable");
    expectError(await execute(t, quoteId), 503, "unavailable");
    expectError(
      await confirm(
        t,
        quoteId,
        await t.proof(
          (await t.call("POST", "/payments/prepare", { body: { quoteId } })).body.paymentRequired.accepts[0],
        ),
      ),
      503,
      "unavailable",
    );
    expect(await balances(h)).toEqual(before);

    // The network lands it, late.
    const landed = faults.landHeld();
    expect(landed.map((r) => r.ok)).toEqual([true]);
    const retry = await confirm(t, quoteId, proof, key);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toMatchObject({ quoteId, status: "settled", transaction: held, payer: t.wallet.address });
    await expectMovedOnce(h, before);
    expect(paymentRows(t, quoteId)).toEqual([{ status: "settled", transaction_sig: held, payer: t.wallet.address }]);
    const created = await execute(t, quoteId);
    expect(created.status, created.text).toBe(201);
    await expectMovedOnce(h, before);
  });

  it("in flight until its blockhash expires: then, and only then, 402 payment_invalid with nothing moved; a new proof pays", async () => {
    const { t, faults } = h;
    const { quoteId, reqs } = await newQuote(t);
    const before = await balances(h);
    faults.holdInFlight(1);
    const proof = await t.proof(reqs);
    const key = freshKey("confirm");
    expectError(await confirm(t, quoteId, proof, key), 503, "unavailable");

    t.sb.ledger.rotateBlockhash();
    // The held transaction can never land now.
    expect(faults.landHeld().map((r) => r.ok)).toEqual([false]);
    const refused = await confirm(t, quoteId, proof, key);
    const error = expectError(refused, 402, "payment_invalid");
    expect(error.quoteId).toBe(quoteId);
    expect(paymentRows(t, quoteId)).toEqual([]);
    expect(await balances(h)).toEqual(before);

    const prepared = await t.call("POST", "/payments/prepare", { body: { quoteId } });
    const paid = await confirm(t, quoteId, await t.proof(prepared.body.paymentRequired.accepts[0]));
    expect(paid.status, paid.text).toBe(200);
    await expectMovedOnce(h, before);
  });

  it("a verification failure (wrong amount) is still 402 payment_invalid, moves nothing and leaves no record, even with a fault armed", async () => {
    const { t, faults } = h;
    const { quoteId, reqs } = await newQuote(t);
    const before = await balances(h);
    faults.pendingAfterSend(1);
    const proof = await t.proof({ ...reqs, amount: (AMOUNT - 1n).toString() }, { accepted: reqs });
    for (const res of [await confirm(t, quoteId, proof), await execute(t, quoteId, proof)]) {
      const error = expectError(res, 402, "payment_invalid");
      expect(error.reason).toBe("invalid_exact_svm_payload_amount_mismatch");
    }
    expect(paymentRows(t, quoteId)).toEqual([]);
    expect(await balances(h)).toEqual(before);
    // Nothing was sent, so the armed fault is still waiting for a settlement that sends.
    const good = await confirm(t, quoteId, await t.proof(reqs));
    expect(good.status, good.text).toBe(200);
    await expectMovedOnce(h, before);
    faults.reset();
  });
});

describe("a kept 'settling' record across a restart", () => {
  const home = mkdtempSync(join(tmpdir(), "pam-settle-restart-"));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("the restarted service keeps it while its blockhash is valid, and the retry sends it again: settled once", async () => {
    let h = await harness(home);
    const { quoteId, reqs } = await newQuote(h.t);
    const before = await balances(h);
    h.faults.holdInFlight(1);
    const proof = await h.t.proof(reqs);
    const key = freshKey("confirm");
    expectError(await confirm(h.t, quoteId, proof, key), 503, "unavailable");
    await h.t.close(); // the held transaction is lost with the process

    h = await harness(home);
    try {
      expect(paymentRows(h.t, quoteId)).toEqual([{ status: "settling", transaction_sig: null, payer: null }]);
      const retry = await confirm(h.t, quoteId, proof, key);
      expect(retry.status, retry.text).toBe(200);
      expect(retry.body).toMatchObject({ quoteId, status: "settled" });
      await expectMovedOnce(h, before);
      expect(paymentRows(h.t, quoteId)).toMatchObject([{ status: "settled", transaction_sig: retry.body.transaction }]);
    } finally {
      await h.t.close();
    }
  });
});
