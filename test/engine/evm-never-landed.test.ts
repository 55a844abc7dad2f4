/**
 * An EVM proof that is never settled (the EVM rail's fate rule, on the sandbox's EVM ledger):
 * a proxy in front of the v1 service keeps the proof the engine hands over and answers a
 * refusal without settling it. While our RPC's newest block is before the authorization's
 * validBefore the chain cannot tell (the budget stays reserved, nothing is signed again); once
 * anvil's time is moved to validBefore through the RPC (evm_setNextBlockTimestamp, evm_mine)
 * the proof can never land, and the next call signs once more and pays once. The kept proof
 * is then refused by the facilitator and moves nothing: what a hostile test (stage 3) does
 * with a proof it kept — `proofs` below — to settle it late. The released payment is
 * watched until our newest block is well past its validBefore.
 */
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { rpcCall, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const USDC = EVM_USDC[BASE_SEPOLIA]!.address as Address;
const TOKEN = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function authorizationState(address, bytes32) view returns (bool)",
]);
const PRICE = 288_000n;

describe("engine: an EVM proof never settled", () => {
  let t: TestSandbox;
  let f: EngineFixture;
  let chain: ReturnType<typeof createPublicClient>;
  /** The proofs the proxy kept instead of passing them on (base64 x402 payloads: secrets). */
  const proofs: string[] = [];
  const usdc = (owner: string) =>
    chain.readContract({ address: USDC, abi: TOKEN, functionName: "balanceOf", args: [owner as Address] });
  /** Mines one block at `timestamp` (unix seconds) on the sandbox's anvil, through its RPC. */
  const mineAt = async (timestamp: bigint) => {
    await rpcCall(t.sb.evm!.rpcUrl, "evm_setNextBlockTimestamp", [`0x${timestamp.toString(16)}`]);
    await rpcCall(t.sb.evm!.rpcUrl, "evm_mine", []);
  };

  beforeAll(async () => {
    t = await startTestSandbox({ evm: true });
    chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
    f = await engineFixture({
      t,
      env: {
        PAID_ACTIONS_NETWORKS: "base-sepolia",
        PAID_ACTIONS_NETWORK: "",
        PAID_ACTIONS_EVM_WALLET: t.sb.evm!.agentKeyPath,
        PAID_ACTIONS_EVM_RPC_URL: t.sb.evm!.rpcUrl,
      },
      open: { settleWaitMs: 0 },
      rules: [
        {
          match: (r) => on("POST", "/v1/executions")(r) && typeof r.headers["x-payment-proof"] === "string",
          action: {
            kind: "dynamic",
            choose: (r) => {
              proofs.push(r.headers["x-payment-proof"] as string);
              return {
                kind: "status",
                status: 402,
                body: { error: { code: "payment_invalid", message: "the proof was not settled", reason: "kept" } },
              };
            },
          },
          times: 1,
        },
      ],
    });
  });
  afterAll(async () => {
    await f?.close();
    await t?.close();
  });

  it("cannot tell before validBefore; can never land once our RPC's block is there; then signs once more and pays once", async () => {
    const agent = t.sb.evm!.agentAddress;
    const treasury = t.sb.evmLedger!.keys.treasury.address;
    const [agent0, treasury0] = [await usdc(agent), await usdc(treasury)];
    const req = { action: "servers.provision", input: SMALL_SERVER, intentKey: "evm-never-landed" };

    // The proof is kept, not settled: the chain cannot tell yet, and nothing is signed again.
    const first = await outcome(f.pa.engine.pay(req));
    expect(first).toMatchObject({ code: "outcome_unknown" });
    expect(proofs).toHaveLength(1);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent.state).toBe("unsettled");
    expect(intent.budgetState).toBe("reserved");
    const kept = (await f.pa.journal.payment(intent.quoteId!))!;
    expect(kept).toMatchObject({ network: BASE_SEPOLIA, fate: "pending" });
    const payload = JSON.parse(Buffer.from(proofs[0]!, "base64").toString("utf8")) as {
      payload: { authorization: { nonce: string; validBefore: string } };
    };
    // The proof that left is the one journaled: its nonce and validBefore.
    expect(payload.payload.authorization.nonce).toBe(kept.nonce);
    expect(BigInt(payload.payload.authorization.validBefore)).toBe(kept.validBefore);

    // Leave a moment between the first signature and the chain's jump to its validBefore: the
    // chain's clock then runs ahead of ours by less than a proof's validity, and the next
    // proof (valid as long as the first was, from later) can still land.
    await new Promise((r) => setTimeout(r, 3_000));
    // One block just before validBefore: still the chain cannot tell.
    await mineAt(kept.validBefore! - 1n);
    expect(await outcome(f.pa.engine.pay(req))).toMatchObject({ code: "outcome_unknown" });
    expect((await f.pa.journal.paymentsSince(0)).length).toBe(1);
    expect(await usdc(agent)).toBe(agent0);

    // Our RPC's newest block at validBefore, the nonce unused there: it can never land, and the
    // next attempt signs once more (a fresh nonce) and pays once.
    await mineAt(kept.validBefore!);
    const paid = await outcome(f.pa.engine.pay(req));
    expect(paid).toMatchObject({ intentId: intent.intentId, payment: { transaction: expect.stringMatching(/^0x/) } });
    const payments = await f.pa.journal.paymentsSince(0);
    expect(payments.map((p) => [p.quoteId === kept.quoteId, p.fate])).toEqual([
      [true, "never"],
      [false, "pending"],
    ]);
    expect(payments[1]!.nonce).not.toBe(kept.nonce);
    expect(await usdc(agent)).toBe(agent0 - PRICE);
    expect(await usdc(treasury)).toBe(treasury0 + PRICE);
    const used = (nonce: string) =>
      chain.readContract({
        address: USDC,
        abi: TOKEN,
        functionName: "authorizationState",
        args: [agent as Address, nonce as Hex],
      });
    expect(await used(kept.nonce!)).toBe(false);
    expect(await used(payments[1]!.nonce!)).toBe(true);

    // The kept proof, settled late through the facilitator: refused, nothing moves.
    const facilitator = new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl });
    const late = JSON.parse(Buffer.from(proofs[0]!, "base64").toString("utf8")) as PaymentPayload;
    const answer = await facilitator
      .settle(late, late.accepted as PaymentRequirements)
      .catch((e: { success?: boolean }) => e);
    expect(answer).toMatchObject({ success: false });
    expect(await used(kept.nonce!)).toBe(false);
    expect(await usdc(agent)).toBe(agent0 - PRICE);

    // The released payment is watched for a late landing until our newest block is well past
    // validBefore (10 minutes), the nonce still unused: then the watch ends.
    expect(await f.pa.engine.watchReleased()).toEqual({ watched: 1, landed: 0 });
    expect(await f.pa.journal.payment(kept.quoteId)).toMatchObject({ fate: "never", watch: true });
    await mineAt(kept.validBefore! + 600n);
    expect(await f.pa.engine.watchReleased()).toEqual({ watched: 1, landed: 0 });
    expect(await f.pa.journal.payment(kept.quoteId)).toMatchObject({ fate: "never", watch: false });
    expect(await f.pa.engine.watchReleased()).toEqual({ watched: 0, landed: 0 });
  });
});
