/**
 * The ledger-backed facilitator signer (src/sandbox/ledger/chain.ts) co-signs a payer's
 * transaction itself, without the reference signer's extra decoding, and remembers the
 * co-signature for the settlement's second request of it: the wire transaction it gives is
 * the reference `toFacilitatorSvmSigner`'s, byte for byte, every time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toFacilitatorSvmSigner } from "@x402/svm";
import type { Network } from "@x402/core/types";
import { ledgerFacilitatorSigner } from "../../src/sandbox/ledger/chain.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { SERVER_INPUT } from "../helpers/api.js";

describe("the facilitator signer's co-signature", () => {
  let t: TestSandbox;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());

  it("is the reference signer's, byte for byte, on the first request and the remembered second", async () => {
    const network = t.sb.network as Network;
    const ours = ledgerFacilitatorSigner(t.sb.ledger, t.sb.keys.feePayer, t.sb.network);
    const reference = toFacilitatorSvmSigner(t.sb.keys.feePayer, { defaultRpcUrl: "http://127.0.0.1:9" });
    for (let i = 0; i < 3; i++) {
      const quote = await t.quote("servers.provision", { ...SERVER_INPUT, durationHours: 1 + i });
      const proof = JSON.parse(
        Buffer.from(await t.proof(quote.paymentRequirement.accepts[0]), "base64").toString(),
      ) as { payload: { transaction: string } };
      const transaction = proof.payload.transaction;
      const expected = await reference.signTransaction(transaction, t.sb.keys.feePayer.address, network);
      expect(expected).not.toBe(transaction);
      expect(await ours.signTransaction(transaction, t.sb.keys.feePayer.address, network)).toBe(expected);
      expect(await ours.signTransaction(transaction, t.sb.keys.feePayer.address, network)).toBe(expected);
      expect(await ours.signTransaction(transaction, t.sb.keys.feePayer.address, network)).toBe(expected);
    }
    // A fee payer that is not the sandbox's is refused as the reference refuses it.
    const transaction = "AQ==";
    await expect(ours.signTransaction(transaction, t.sb.keys.treasury.address, network)).rejects.toThrow(
      /No signer for feePayer/,
    );
  });
});
