/**
 * The payer signs with the lifetime our own RPC gave, whatever blockhash the challenge
 * offers: real proofs, built with the x402 reference client scheme against the sandbox's
 * RPC, decoded and settled at the sandbox.
 */
import { createHash } from "node:crypto";
import { getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRpcChain } from "../../src/engine/rails/solana/rpc.js";
import type { ChainPort } from "../../src/engine/rails/solana/chain.js";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import { loadPayer, loadSigner, proofBlockhash, type Payer } from "../../src/engine/rails/solana/payer.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { SERVER_INPUT, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const decode = (proof: string) => JSON.parse(Buffer.from(proof, "base64").toString("utf8"));

describe("the payer: our transaction's lifetime is ours", () => {
  let t: TestSandbox;
  let payer: Payer;
  let chain: ChainPort;
  beforeAll(async () => {
    t = await startTestSandbox();
    payer = await loadPayer(t.sb.walletPath, { mint: t.sb.asset });
    chain = await createRpcChain(t.sb.rpcUrl);
  });
  afterAll(() => t.close());

  const next = (blockhash: string) =>
    getBase58Decoder().decode(
      createHash("sha256")
        .update(Uint8Array.from(getBase58Encoder().encode(blockhash)))
        .digest(),
    );

  it.each<[string, string, (current: string) => Record<string, unknown>]>([
    [
      "a blockhash that is not valid yet",
      "future",
      (current) => ({ recentBlockhash: next(current), lastValidBlockHeight: "999999999" }),
    ],
    [
      "a blockhash of the past",
      "past",
      () => ({ recentBlockhash: "11111111111111111111111111111111", lastValidBlockHeight: "1" }),
    ],
    [
      "a blockhash that is no blockhash",
      "garbage",
      () => ({ recentBlockhash: "not base58 at all", lastValidBlockHeight: "x" }),
    ],
    ["no blockhash at all", "none", () => ({ recentBlockhash: undefined, lastValidBlockHeight: undefined })],
  ])(
    "a challenge offering %s: the transaction carries the blockhash our RPC gave; `accepted` is the challenge as given",
    async (_name, image, hint) => {
      const quote = await t.quote("servers.provision", { ...SERVER_INPUT, image: `payer-${image}` });
      const given = quote.paymentRequirement.accepts[0] as PaymentRequirements;
      const offered: PaymentRequirements = {
        ...given,
        extra: { ...given.extra, ...hint(t.sb.ledger.currentBlockhash()) },
      };
      const lifetime = await chain.latestBlockhash();
      expect(lifetime.blockhash).toBe(t.sb.ledger.currentBlockhash());
      const { proof } = await payer.createProof(offered, lifetime);
      const payload = decode(proof);
      expect(proofBlockhash(payload.payload.transaction)).toBe(lifetime.blockhash);
      expect(payload.accepted).toEqual(JSON.parse(JSON.stringify(offered)));
      // A real proof: the service settles it (the hint is not part of what binds the payment).
      const confirmed = await t.call("POST", "/payments/confirm", {
        body: { quoteId: quote.quoteId, paymentProof: proof },
        headers: { "idempotency-key": `payer-${quote.quoteId}` },
      });
      expect(confirmed.status, confirmed.text).toBe(200);
    },
  );

  it("our RPC's last valid height is where the ledger stops accepting the blockhash: at it the transfer could land, past it (the next rotation) it cannot", async () => {
    const lifetime = await chain.latestBlockhash();
    expect(await chain.finalizedHeight()).toBeLessThanOrEqual(lifetime.lastValidHeight);
    t.sb.ledger.rotateBlockhash();
    expect(await chain.finalizedHeight()).toBeGreaterThan(lifetime.lastValidHeight);
    expect(await chain.blockhashValid(lifetime.blockhash)).toBe(false);
  });

  it("the transaction is the x402 reference client's, byte for byte, for the same challenge and lifetime", async () => {
    const reference = new ExactSvmScheme(await loadSigner(t.sb.walletPath), { rpcUrl: t.sb.rpcUrl });
    const lifetime = await chain.latestBlockhash();
    for (const [image, memo] of [
      ["same-1", undefined],
      ["same-2", "a memo of the seller's, longer than a quote id, with ünïcode"],
    ] as const) {
      const quote = await t.quote("servers.provision", { ...SERVER_INPUT, image: `payer-${image}` });
      const given = quote.paymentRequirement.accepts[0] as PaymentRequirements;
      const challenge: PaymentRequirements = {
        ...given,
        extra: {
          ...given.extra,
          ...(memo ? { memo } : {}),
          recentBlockhash: lifetime.blockhash,
          lastValidBlockHeight: lifetime.lastValidHeight.toString(),
        },
      };
      const ours = decode((await payer.createProof(challenge, lifetime)).proof).payload.transaction;
      const theirs = await reference.createPaymentPayload(2, challenge as unknown as X402Requirements);
      expect(ours).toBe((theirs.payload as { transaction: string }).transaction);
    }
  });
});
