/**
 * The settlement's fast path (src/sandbox/service/settle-fast.ts) and the reading of wire
 * transactions from their bytes it stands on (src/domain/solana-wire.ts):
 *  - the bytes read the way kit's decoders read them (signatures, keys, blockhash, message
 *    hash), and whatever kit might read otherwise is not read at all;
 *  - a stock client's proof that the reference facilitator accepts is settled, co-signed as
 *    the reference signer co-signs it, and lands once; every proof or requirement the
 *    reference refuses is left to it (undefined), with nothing sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBase58Decoder, getCompiledTransactionMessageDecoder, getTransactionDecoder } from "@solana/kit";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as FacilitatorScheme } from "@x402/svm/exact/facilitator";
import type { Network, PaymentPayload as X402Payload, PaymentRequirements as X402Reqs } from "@x402/core/types";
import { FastExactSettler } from "../../src/sandbox/service/settle-fast.js";
import { ledgerFacilitatorSigner } from "../../src/sandbox/ledger/chain.js";
import { blockhashOf, messageHashOf } from "../../src/sandbox/ledger/tx-wire.js";
import { base58, keyName, readWireBase64, readWireTransaction, wireMessageHash } from "../../src/domain/solana-wire.js";
import type { PaymentPayload, PaymentRequirements } from "../../src/domain/wire.js";
import type { Ledger } from "../../src/sandbox/ledger/ledger.js";
import { SERVER_INPUT, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { expectError, freshKey } from "../helpers/api.js";

const kitTx = getTransactionDecoder();
const kitMessage = getCompiledTransactionMessageDecoder();
const kitBase58 = getBase58Decoder();

describe("wire transactions read from their bytes", () => {
  let t: TestSandbox;
  let payload: PaymentPayload;
  beforeAll(async () => {
    t = await startTestSandbox();
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    payload = JSON.parse(Buffer.from(await t.proof(quote.paymentRequirement.accepts[0]), "base64").toString());
  });
  afterAll(() => t.close());

  it("reads a proof's transaction as kit decodes it", () => {
    const wire = payload.payload.transaction;
    const ours = readWireBase64(wire)!;
    const bytes = Buffer.from(wire, "base64");
    const kit = kitTx.decode(bytes);
    const message = kitMessage.decode(kit.messageBytes);
    if (message.version === 1) throw new Error("the stock client builds v0 messages");
    expect(ours.version).toBe(message.version);
    expect(Buffer.from(ours.message).equals(Buffer.from(kit.messageBytes))).toBe(true);
    expect(ours.keys.map(keyName)).toEqual(message.staticAccounts);
    expect(ours.signatures.map((s) => (s.some((b) => b !== 0) ? base58(s) : null))).toEqual(
      Object.values(kit.signatures).map((s) => (s ? kitBase58.decode(s) : null)),
    );
    expect(keyName(ours.blockhash)).toBe(blockhashOf(kit));
    expect(wireMessageHash(ours)).toBe(messageHashOf(kit));
    expect(ours.instructions.map((ix) => [ix.programIndex, [...ix.accounts], [...ix.data]])).toEqual(
      message.instructions.map((ix) => [ix.programAddressIndex, ix.accountIndices ?? [], [...(ix.data ?? [])]]),
    );
    expect(ours.lookupTables).toBe(0);
  });

  it("names bytes in base58 as kit does, leading zeros included", () => {
    for (const bytes of [
      new Uint8Array(32),
      new Uint8Array(64),
      Uint8Array.from([0, 0, 1, 2, 255]),
      Uint8Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256),
      Uint8Array.from({ length: 64 }, (_, i) => 255 - i),
    ]) {
      expect(base58(bytes)).toBe(kitBase58.decode(bytes));
    }
  });

  it("does not read what kit might read otherwise: trailing or missing bytes, other versions, a key named twice, lax base64", () => {
    const bytes = new Uint8Array(Buffer.from(payload.payload.transaction, "base64"));
    const tx = readWireTransaction(bytes)!;
    const messageAt = bytes.length - tx.message.length;
    expect(readWireTransaction(Uint8Array.from([...bytes, 0]))).toBeUndefined();
    expect(readWireTransaction(bytes.subarray(0, bytes.length - 1))).toBeUndefined();
    const v1 = Uint8Array.from(bytes);
    v1[messageAt] = 0x81;
    expect(readWireTransaction(v1)).toBeUndefined();
    const twice = Uint8Array.from(bytes);
    // The second key (4 header bytes: version, three counts; then the key count) made the first.
    twice.set(tx.keys[0]!, messageAt + 5 + 32);
    expect(readWireTransaction(twice)).toBeUndefined();
    const oneSignatureShort = Uint8Array.from([bytes[0]! - 1, ...bytes.subarray(1 + 64)]);
    expect(readWireTransaction(oneSignatureShort)).toBeUndefined();
    expect(readWireBase64(` ${payload.payload.transaction}`)).toBeUndefined();
    expect(readWireBase64(payload.payload.transaction.replace(/=+$/, ""))).toBeUndefined();
  });
});

describe("the settlement's fast path", () => {
  let t: TestSandbox;
  let fast: FastExactSettler;
  beforeAll(async () => {
    t = await startTestSandbox();
    fast = new FastExactSettler(t.sb.ledger, t.sb.keys.feePayer, t.sb.network);
  });
  afterAll(() => t.close());

  async function proofFor(hours: number): Promise<{ payload: PaymentPayload; stored: PaymentRequirements }> {
    const quote = await t.quote("servers.provision", { ...SERVER_INPUT, durationHours: hours });
    const stored = quote.paymentRequirement.accepts[0] as PaymentRequirements;
    const payload = JSON.parse(Buffer.from(await t.proof(stored), "base64").toString()) as PaymentPayload;
    return { payload, stored };
  }

  it("settles what the reference facilitator accepts, co-signed as the reference signer does, once", async () => {
    const { payload, stored } = await proofFor(3);
    const reference = new FacilitatorScheme(ledgerFacilitatorSigner(t.sb.ledger, t.sb.keys.feePayer, t.sb.network));
    const verdict = await reference.verify(payload as unknown as X402Payload, stored as unknown as X402Reqs);
    expect(verdict.isValid).toBe(true);
    const before = await t.usdc(t.wallet.address);

    const settled = await fast.settle(payload, stored);
    expect(settled).toEqual({ success: true, transaction: expect.any(String), payer: verdict.payer });
    const landed = t.sb.ledger.transaction(settled!.transaction)!;
    const referenceSigner = toFacilitatorSvmSigner(t.sb.keys.feePayer, { defaultRpcUrl: "http://127.0.0.1:9" });
    expect(landed.wire).toBe(
      await referenceSigner.signTransaction(
        payload.payload.transaction,
        t.sb.keys.feePayer.address,
        t.sb.network as Network,
      ),
    );
    expect(before - (await t.usdc(t.wallet.address))).toBe(BigInt(stored.amount));
    // The same proof again: nothing lands twice (the ledger refuses it; the reference decides).
    expect(await fast.settle(payload, stored)).toBeUndefined();
    expect(before - (await t.usdc(t.wallet.address))).toBe(BigInt(stored.amount));
  });

  it("commits the caller's record of the settlement with the ledger's transaction; a record that throws is undone alone", async () => {
    const seqOf = (signature: string) =>
      (t.sb.db.prepare(`SELECT seq FROM ledger_log WHERE signature = ?`).get(signature) as { seq: number }).seq;
    const keyOf = (signature: string) => `fast-record-${signature}`;
    const record = (settlement: { transaction: string }) =>
      t.sb.db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?)`).run(keyOf(settlement.transaction), "recorded");
    const first = await proofFor(5);
    let seenInside: { seq: number; inTransaction: boolean } | undefined;
    const settled = await fast.settle(first.payload, first.stored, (s) => {
      // Inside the ledger's own transaction: its log row is already there, not yet committed apart.
      seenInside = { seq: seqOf(s.transaction), inTransaction: t.sb.db.inTransaction };
      record(s);
    });
    expect(settled?.success).toBe(true);
    expect(seenInside).toEqual({ seq: seqOf(settled!.transaction), inTransaction: true });
    expect(t.sb.db.prepare(`SELECT value FROM meta WHERE key = ?`).get(keyOf(settled!.transaction))).toEqual({
      value: "recorded",
    });

    const second = await proofFor(6);
    const before = await t.usdc(t.wallet.address);
    const landedAnyway = await fast.settle(second.payload, second.stored, (s) => {
      record(s);
      throw new Error("the caller's record failed");
    });
    // The payment landed and is answered; the caller's write alone was undone, so it records it itself.
    expect(landedAnyway?.success).toBe(true);
    expect(t.sb.ledger.transaction(landedAnyway!.transaction)).toBeDefined();
    expect(before - (await t.usdc(t.wallet.address))).toBe(BigInt(second.stored.amount));
    expect(t.sb.db.prepare(`SELECT value FROM meta WHERE key = ?`).get(keyOf(landedAnyway!.transaction))).toBe(
      undefined,
    );
  });

  it("leaves every proof the reference refuses to it, sending nothing", async () => {
    const { payload, stored } = await proofFor(4);
    const reference = new FacilitatorScheme(ledgerFacilitatorSigner(t.sb.ledger, t.sb.keys.feePayer, t.sb.network));
    const other = t.sb.keys.seller.address;
    const transaction = payload.payload.transaction;
    const tampered = Buffer.from(transaction, "base64");
    tampered[1 + 64 + 7] = tampered[1 + 64 + 7]! ^ 1; // the payer's signature
    const unsigned = Buffer.from(transaction, "base64");
    unsigned.fill(0, 1 + 64, 1 + 64 + 64); // no payer's signature at all
    const cases: Array<[string, PaymentPayload, PaymentRequirements]> = [
      ["amount", payload, { ...stored, amount: String(BigInt(stored.amount) + 1n) }],
      ["recipient", payload, { ...stored, payTo: other }],
      ["asset", payload, { ...stored, asset: t.sb.keys.mintAuthority.address }],
      ["memo", payload, { ...stored, extra: { ...stored.extra, memo: "qt_other" } }],
      ["fee payer", payload, { ...stored, extra: { ...stored.extra, feePayer: other } }],
      ["network", payload, { ...stored, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }],
      ["scheme", payload, { ...stored, scheme: "upto" }],
      ["signature", { ...payload, payload: { ...payload.payload, transaction: tampered.toString("base64") } }, stored],
      [
        "no signature",
        { ...payload, payload: { ...payload.payload, transaction: unsigned.toString("base64") } },
        stored,
      ],
    ];
    const before = await t.usdc(t.wallet.address);
    const feePayerLamports = t.sb.ledger.lamports(t.sb.keys.feePayer.address);
    // Refused before anything is simulated or submitted, but for the signature: the ledger's
    // submission checks it, and refuses it before charging anything.
    let ledgerCalls = 0;
    const counted = Object.assign(Object.create(t.sb.ledger) as Ledger, {
      simulate: (...a: Parameters<Ledger["simulate"]>) => (ledgerCalls++, t.sb.ledger.simulate(...a)),
      submit: (...a: Parameters<Ledger["submit"]>) => (ledgerCalls++, t.sb.ledger.submit(...a)),
    });
    const checking = new FastExactSettler(counted, t.sb.keys.feePayer, t.sb.network);
    for (const [what, p, reqs] of cases) {
      const verdict = await reference.verify(p as unknown as X402Payload, reqs as unknown as X402Reqs);
      expect(verdict.isValid, what).toBe(false);
      expect(await fast.settle(p, reqs), what).toBeUndefined();
      const calls = ledgerCalls;
      expect(await checking.settle(p, reqs), what).toBeUndefined();
      expect(ledgerCalls - calls, what).toBe(what === "signature" ? 2 : 0);
    }
    expect(await t.usdc(t.wallet.address)).toBe(before);
    expect(t.sb.ledger.lamports(t.sb.keys.feePayer.address)).toBe(feePayerLamports);
    // The untouched proof still settles: the refusals sent nothing.
    expect(await checking.settle(payload, stored)).toMatchObject({ success: true });
    expect(ledgerCalls).toBe(4);
  });
  it("answers a proof without the payer's signature as the reference refuses it: 402, nothing kept settling", async () => {
    const { payload, stored } = await proofFor(5);
    const bytes = Buffer.from(payload.payload.transaction, "base64");
    bytes.fill(0, 1 + 64, 1 + 64 + 64);
    const proof = { ...payload, payload: { ...payload.payload, transaction: bytes.toString("base64") } };
    const quoteId = String(stored.extra.memo);
    const res = await t.call("POST", "/payments/confirm", {
      body: { quoteId, paymentProof: Buffer.from(JSON.stringify(proof)).toString("base64") },
      headers: { "idempotency-key": freshKey("unsigned") },
    });
    const error = expectError(res, 402, "payment_invalid");
    expect(error.reason).toBe("invalid_exact_svm_payload_signature_invalid");
    expect(t.sb.db.prepare(`SELECT COUNT(*) AS n FROM payments WHERE quote_id = ?`).get(quoteId)).toEqual({ n: 0 });
  });
});
