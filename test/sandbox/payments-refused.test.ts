/**
 * x402 proofs a real sandbox refuses over HTTP: every proof goes through the x402 reference
 * facilitator on the sandbox's LiteSVM ledger, and each refusal is checked on the wire
 * (status, code, reason) and on the ledger (no balance moved, the quote still unpaid).
 */
import { generateKeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureTokenAccount, fundWallet } from "../../src/sandbox/ledger/chain.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { ACTION, AMOUNT, paymentChecks } from "../helpers/payment-checks.js";
import {
  createSecondMint,
  decodeProof,
  encodeProof,
  feePayerAuthorityTransaction,
  flipSignatureBit,
  signatureSlotBytes,
  signerSlots,
  tokenBalance,
  withAccepted,
  withTransaction,
} from "../helpers/proofs.js";
import { SERVER_INPUT, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("x402 payments through the reference facilitator on the ledger", () => {
  let t: TestSandbox;
  let treasury: string;

  beforeAll(async () => {
    t = await startTestSandbox();
    treasury = t.sb.keys.treasury.address;
  });
  afterAll(() => t.close());

  const {
    key,
    newQuote,
    confirm,
    execute,
    present,
    balances,
    expectBalances,
    expectInvalid,
    expectStillUnpaid,
    executionsOf,
  } = paymentChecks(() => t);
  describe("refused proofs move nothing", () => {
    it("a. wrong amount: accepted matches the quote, the transaction transfers another amount (facilitator rejects)", async () => {
      for (const [via, amount] of [
        ["confirm", AMOUNT - 1n],
        ["execute", AMOUNT / 2n],
        ["confirm", AMOUNT + 1_000n],
      ] as const) {
        const { quoteId, reqs } = await newQuote();
        const proof = await t.proof({ ...reqs, amount: amount.toString() }, { accepted: reqs });
        // The binding the service checks itself is satisfied: it is the facilitator that refuses.
        expect(decodeProof(proof).accepted).toEqual(reqs);
        const before = await balances();
        const res = await present(via, quoteId, proof);
        expectInvalid(res, "invalid_exact_svm_payload_amount_mismatch", quoteId);
        await expectBalances(before);
        await expectStillUnpaid(quoteId);
        expect(await executionsOf(quoteId)).toEqual([]);
      }
    });

    it("a'. accepted itself differs from the stored requirements (service binding rejects)", async () => {
      const { quoteId, reqs } = await newQuote();
      const cheaper = { ...reqs, amount: "1" };
      const proof = await t.proof(cheaper); // accepted = the cheaper requirements
      const before = await balances();
      expectInvalid(await confirm(quoteId, proof), /amount_mismatch/, quoteId);
      await expectBalances(before);
      await expectStillUnpaid(quoteId);
    });

    it("b. wrong mint: the transaction transfers another SPL token", async () => {
      const mint2 = await createSecondMint(t);
      await fundWallet(t.sb.ledger, t.sb.keys, mint2, t.wallet.address, 10_000_000n);
      await ensureTokenAccount(t.sb.ledger, t.sb.keys, treasury, mint2);
      expect(await tokenBalance(t, t.wallet.address, mint2)).toBe(10_000_000n);

      for (const via of ["confirm", "execute"] as const) {
        const { quoteId, reqs } = await newQuote();
        const proof = await t.proof({ ...reqs, asset: mint2 }, { accepted: reqs });
        const before = await balances();
        const before2 = [await tokenBalance(t, t.wallet.address, mint2), await tokenBalance(t, treasury, mint2)];
        const res = await present(via, quoteId, proof);
        expectInvalid(res, "invalid_exact_svm_payload_mint_mismatch", quoteId);
        await expectBalances(before);
        expect([await tokenBalance(t, t.wallet.address, mint2), await tokenBalance(t, treasury, mint2)]).toEqual(
          before2,
        );
        await expectStillUnpaid(quoteId);
        expect(await executionsOf(quoteId)).toEqual([]);
      }
    });

    it("c. wrong payee: the transaction pays another address's token account", async () => {
      const other = (await generateKeyPairSigner()).address;
      await ensureTokenAccount(t.sb.ledger, t.sb.keys, other, t.sb.asset);
      for (const via of ["confirm", "execute"] as const) {
        const { quoteId, reqs } = await newQuote();
        const proof = await t.proof({ ...reqs, payTo: other }, { accepted: reqs });
        const before = await balances(other);
        expect(before[other]).toBe(0n);
        const res = await present(via, quoteId, proof);
        expectInvalid(res, "invalid_exact_svm_payload_recipient_mismatch", quoteId);
        await expectBalances(before);
        await expectStillUnpaid(quoteId);
      }
    });

    it("d. the service's fee payer as transfer authority is refused (fee payer transferring funds)", async () => {
      const feePayer = t.sb.keys.feePayer.address;
      // Give the fee payer USDC, so the attack would really move money if it were settled.
      await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, feePayer, 5_000_000n);
      const { quoteId, reqs } = await newQuote();
      const wire = await feePayerAuthorityTransaction(t, reqs);
      expect(signerSlots(wire)).toEqual([feePayer]);
      expect(signatureSlotBytes(wire, 0).every((b) => b === 0)).toBe(true);
      const proof = encodeProof({ x402Version: 2, accepted: reqs, payload: { transaction: wire } });
      const before = await balances(feePayer);
      expect(before[feePayer]).toBe(5_000_000n);

      expectInvalid(
        await confirm(quoteId, proof),
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
        quoteId,
      );
      expectInvalid(
        await execute(quoteId, proof),
        "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
        quoteId,
      );
      await expectBalances(before);
      await expectStillUnpaid(quoteId);
    });

    it("e. a proof made for quote A, presented to quote B, is refused (memo mismatch) and still pays A", async () => {
      const a = await newQuote();
      const b = await newQuote();
      const proofA = await t.proof(a.reqs);
      const presented = withAccepted(proofA, b.reqs);
      const before = await balances();

      expectInvalid(await confirm(b.quoteId, presented), "invalid_exact_svm_payload_memo_mismatch", b.quoteId);
      expectInvalid(await execute(b.quoteId, presented), "invalid_exact_svm_payload_memo_mismatch", b.quoteId);
      // As is, A's accepted names A: the service's own binding refuses it for B.
      expectInvalid(await confirm(b.quoteId, proofA), "memo_mismatch", b.quoteId);
      await expectBalances(before);
      await expectStillUnpaid(b.quoteId);
      await expectStillUnpaid(a.quoteId);

      // The refusals did not burn the proof: it still pays the quote it was made for.
      const paid = await confirm(a.quoteId, proofA);
      expect(paid.status, paid.text).toBe(200);
      expect(paid.body.quoteId).toBe(a.quoteId);
      await expectBalances({
        [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
        [treasury]: before[treasury]! + AMOUNT,
      });
    });

    it("f. replay of a settled proof: refused for another quote, the same payment for its own", async () => {
      const a = await newQuote();
      const b = await newQuote();
      const proof = await t.proof(a.reqs);
      const start = await balances();
      const first = await confirm(a.quoteId, proof);
      expect(first.status, first.text).toBe(200);
      const afterFirst = {
        [t.wallet.address]: start[t.wallet.address]! - AMOUNT,
        [treasury]: start[treasury]! + AMOUNT,
      };
      await expectBalances(afterFirst);

      // Same transaction bytes, rebound to B.
      const replay = withAccepted(proof, b.reqs);
      expect(decodeProof(replay).payload.transaction).toBe(decodeProof(proof).payload.transaction);
      for (const res of [
        await confirm(b.quoteId, replay),
        await execute(b.quoteId, replay),
        await confirm(b.quoteId, proof),
      ]) {
        expect(res.status, res.text).toBe(409);
        expect(res.body.error.code).toBe("payment_already_used");
      }
      await expectBalances(afterFirst);
      await expectStillUnpaid(b.quoteId);

      // The same proof for its own quote, under a new key (not an idempotent replay).
      const again = await confirm(a.quoteId, proof);
      expect(again.status, again.text).toBe(200);
      expect(again.headers["idempotent-replayed"]).toBeUndefined();
      expect(again.body).toEqual(first.body);
      await expectBalances(afterFirst);

      // And it funds exactly one execution of A, with nothing settled twice.
      const created = await execute(a.quoteId, proof);
      expect(created.status, created.text).toBe(201);
      const settle = JSON.parse(Buffer.from(created.headers["payment-response"]!, "base64").toString("utf8"));
      expect(settle).toMatchObject({ success: true, transaction: first.body.transaction, payer: t.wallet.address });
      await expectBalances(afterFirst);
    });

    it("g. the same proof fired concurrently settles exactly once", async () => {
      const { quoteId, reqs } = await newQuote();
      const proof = await t.proof(reqs);
      const before = await balances();

      const responses = await Promise.all(
        [0, 1, 2, 3, 4, 5].map((i) =>
          i % 2 === 0
            ? confirm(quoteId, proof, `race-c-${i}-${quoteId}`)
            : execute(quoteId, proof, {}, `race-e-${i}-${quoteId}`),
        ),
      );
      const settled = responses.filter((r) => r.status === 200);
      const created = responses.filter((r) => r.status === 201);
      expect(
        settled.length + created.length,
        responses.map((r) => `${r.status} ${r.text}`).join("\n"),
      ).toBeGreaterThanOrEqual(1);
      expect(created.length).toBeLessThanOrEqual(1);

      // Exactly one settlement on the ledger.
      await expectBalances({
        [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
        [treasury]: before[treasury]! + AMOUNT,
      });
      const payment = await confirm(quoteId, proof);
      expect(payment.status, payment.text).toBe(200);
      const signature = payment.body.transaction as string;

      for (const r of responses) {
        if (r.status === 200) {
          expect(r.body).toEqual(payment.body);
        } else if (r.status === 201) {
          expect(r.body.quoteId).toBe(quoteId);
          const settle = JSON.parse(Buffer.from(r.headers["payment-response"]!, "base64").toString("utf8"));
          expect(settle.transaction).toBe(signature);
        } else if (r.status === 409) {
          expect(["idempotency_in_progress", "payment_already_used", "quote_consumed"]).toContain(r.body.error.code);
        } else {
          expect(r.status, r.text).toBe(402);
          expect(r.body.error.code).toBe("payment_invalid");
        }
      }

      const executions = await executionsOf(quoteId);
      expect(executions.length).toBe(created.length);
      if (created.length === 1) expect(executions[0].executionId).toBe(created[0]!.body.executionId);
      await expectBalances({
        [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
        [treasury]: before[treasury]! + AMOUNT,
      });
    });

    it("h. a proof signed against an expired blockhash is refused; a fresh one pays", async () => {
      const { quoteId, reqs } = await newQuote();
      const proof = await t.proof(reqs);
      t.sb.ledger.rotateBlockhash();
      expect(t.sb.ledger.isBlockhashValid(String(reqs.extra.recentBlockhash))).toBe(false);
      const before = await balances();
      expectInvalid(await confirm(quoteId, proof), /simulation_failed|blockhash/i, quoteId);
      await expectBalances(before);
      await expectStillUnpaid(quoteId);

      const prepared = await t.call("POST", "/payments/prepare", {
        body: { quoteId },
        headers: { "idempotency-key": key("prep") },
      });
      expect(prepared.status, prepared.text).toBe(200);
      const fresh = prepared.body.paymentRequired.accepts[0] as PaymentRequirements;
      expect(fresh.extra.recentBlockhash).not.toBe(reqs.extra.recentBlockhash);
      const paid = await confirm(quoteId, await t.proof(fresh));
      expect(paid.status, paid.text).toBe(200);
      await expectBalances({
        [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
        [treasury]: before[treasury]! + AMOUNT,
      });
    });

    it("i. a tampered payer signature is refused; the untampered proof still pays", async () => {
      const { quoteId, reqs } = await newQuote();
      const proof = await t.proof(reqs);
      const wire = decodeProof(proof).payload.transaction;
      // Slot 0 is the fee payer's (still empty), slot 1 the payer's.
      expect(signerSlots(wire)).toEqual([t.sb.keys.feePayer.address, t.wallet.address]);
      expect(signatureSlotBytes(wire, 0).every((b) => b === 0)).toBe(true);
      expect(signatureSlotBytes(wire, 1).some((b) => b !== 0)).toBe(true);
      const tampered = withTransaction(proof, flipSignatureBit(wire, 1));
      expect(signatureSlotBytes(decodeProof(tampered).payload.transaction, 1).equals(signatureSlotBytes(wire, 1))).toBe(
        false,
      );

      const before = await balances();
      expectInvalid(await confirm(quoteId, tampered), "invalid_exact_svm_payload_signature_invalid", quoteId);
      expectInvalid(await execute(quoteId, tampered), "invalid_exact_svm_payload_signature_invalid", quoteId);
      await expectBalances(before);
      await expectStillUnpaid(quoteId);

      const paid = await confirm(quoteId, proof);
      expect(paid.status, paid.text).toBe(200);
      await expectBalances({
        [t.wallet.address]: before[t.wallet.address]! - AMOUNT,
        [treasury]: before[treasury]! + AMOUNT,
      });
    });

    it("j. a proof that is not base64 JSON or not an x402 v2 payload is refused as invalid_payload", async () => {
      const { quoteId, reqs } = await newQuote();
      const good = decodeProof(await t.proof(reqs));
      const b64 = (s: string) => Buffer.from(s).toString("base64");
      const malformed = [
        "%%% not base64 at all %%%",
        b64("this is not json"),
        b64("[1,2,3]"),
        encodeProof({ ...good, x402Version: 1 }),
        encodeProof({ x402Version: 2, accepted: reqs }),
        encodeProof({ x402Version: 2, payload: good.payload }),
        encodeProof({ ...good, payload: { transaction: 42 } }),
      ];
      const before = await balances();
      for (const proof of malformed) {
        for (const via of ["confirm", "execute"] as const) {
          const res = await present(via, quoteId, proof);
          expectInvalid(res, "invalid_payload");
        }
      }
      // Well-formed payload, but a transaction that does not decode.
      const garbageTx = encodeProof({ ...good, payload: { transaction: b64("not a transaction") } });
      expectInvalid(await confirm(quoteId, garbageTx), /could_not_be_decoded/, quoteId);

      // Without X-Quote-Id, a malformed proof says so instead of opening a new quote.
      const bare = await t.call("POST", "/executions", {
        body: { action: ACTION, input: SERVER_INPUT },
        headers: { "idempotency-key": key("bare"), "x-payment-proof": b64("nope") },
      });
      expectInvalid(bare, "invalid_payload");

      await expectBalances(before);
      await expectStillUnpaid(quoteId);
    });
  });
});
