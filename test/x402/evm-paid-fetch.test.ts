/**
 * paid_fetch on eip155:84532 against a stock @x402/express seller that no one here wrote
 * (paymentMiddleware, x402ResourceServer over HTTPFacilitatorClient, @x402/evm's exact server
 * scheme) settling through the sandbox's facilitator on its EVM ledger: the engine's EVM rail
 * pays exactly the price from the agent's EVM key to the payee — balances read from the chain
 * — the retry with the same intentKey pays nothing, and the audit finds no discrepancy. A
 * seller that only names Solana is not paid by a server that pays on EVM alone.
 */
import { createPublicClient, http, parseAbi, type Address } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "../../src/app/audit.js";
import { BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import { engineFixture, refusal, type EngineFixture } from "../helpers/engine.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { startSeller, stopAllSellers } from "../helpers/sellers.js";

const USDC = EVM_USDC[BASE_SEPOLIA]!.address as Address;
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const json = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString("utf8")) as unknown;

describe("paid_fetch on eip155:84532: a stock @x402/express seller through the sandbox's facilitator", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  let chain: ReturnType<typeof createPublicClient>;
  const usdc = (owner: string) =>
    chain.readContract({ address: USDC, abi: ERC20, functionName: "balanceOf", args: [owner as Address] });
  const env = (sellerUrl: string) => ({
    PAID_ACTIONS_NETWORKS: "base-sepolia",
    PAID_ACTIONS_NETWORK: "",
    PAID_ACTIONS_EVM_WALLET: t.sb.evm!.agentKeyPath,
    PAID_ACTIONS_EVM_RPC_URL: t.sb.evm!.rpcUrl,
    PAID_ACTIONS_ALLOW_ORIGINS: sellerUrl,
  });

  beforeAll(async () => {
    t = await startTestSandbox({ evm: true });
    chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
  });
  afterAll(async () => {
    await stopAllSellers();
    await t.close();
  });
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("pays exactly the price from the agent's EVM key to the payee; the retry pays nothing; the audit agrees", async () => {
    const payee = privateKeyToAccount(generatePrivateKey()).address;
    const s = await startSeller({
      framework: "express",
      facilitatorUrl: t.sb.facilitatorUrl,
      network: BASE_SEPOLIA,
      payTo: payee,
    });
    f = await engineFixture({ t, env: env(s.url) });
    const agent = t.sb.evm!.agentAddress;
    const [agent0, payee0] = [await usdc(agent), await usdc(payee)];

    const get = await f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: "evm-fetch-get-1" });
    expect(get.result).toMatchObject({
      status: 200,
      payment: { amount: "0.01", payTo: payee, network: BASE_SEPOLIA, transaction: expect.stringMatching(/^0x/) },
    });
    expect(json(get.body)).toMatchObject({ data: expect.anything() });
    const post = await f.pa.engine.payFetch({ url: `${s.url}/paid/echo`, method: "POST", body: { hello: "evm" } });
    expect(post.result).toMatchObject({ status: 200, payment: { amount: "0.02" } });
    expect(json(post.body)).toEqual({ hello: "evm" });
    expect(await usdc(agent)).toBe(agent0 - 30_000n);
    expect(await usdc(payee)).toBe(payee0 + 30_000n);
    const seen = (await s.requests()).length;

    // The retry with the same intentKey: the same answer from the journal, nothing sent, nothing paid.
    const again = await f.pa.engine.payFetch({ url: `${s.url}/paid/data`, intentKey: "evm-fetch-get-1" });
    expect(json(again.body)).toEqual(json(get.body));
    expect((await s.requests()).length).toBe(seen);
    expect(await usdc(agent)).toBe(agent0 - 30_000n);

    // Each payment journaled on base-sepolia with its nonce; the settlement the seller named is verified on chain.
    const payments = await f.pa.journal.paymentsSince(0);
    expect(payments.map((p) => [p.network, p.payee, p.amount])).toEqual([
      [BASE_SEPOLIA, payee, 10_000n],
      [BASE_SEPOLIA, payee, 20_000n],
    ]);
    const intent = (await f.pa.journal.intent(get.result.intentId!))!;
    expect(await f.pa.engine.checkSettlement(intent)).toEqual({
      kind: "verified",
      tx: get.result.payment!.transaction,
    });

    const { report } = await runAudit(f.pa, { now: Date.now() });
    expect(report.discrepancies).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.payments.map((p) => p.status)).toEqual(["on_chain", "on_chain"]);
    expect(report.outflows.map((o) => [o.amount, o.matched])).toEqual([
      ["0.01", true],
      ["0.02", true],
    ]);
  });

  it("a seller that names only Solana is not paid by a server that pays on base-sepolia alone", async () => {
    const s = await startSeller({
      framework: "express",
      facilitatorUrl: t.sb.facilitatorUrl,
      network: t.sb.network,
      payTo: t.sb.keys.seller.address,
    });
    f = await engineFixture({ t, env: env(s.url) });
    const agent0 = await usdc(t.sb.evm!.agentAddress);
    const e = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/data` }));
    expect(e.code).toBe("payment_unsupported");
    expect(e.message).toMatch(new RegExp(`exact on ${BASE_SEPOLIA} in USDC ${USDC}`));
    expect((await s.requests()).filter((r) => r.paid)).toEqual([]);
    expect(await usdc(t.sb.evm!.agentAddress)).toBe(agent0);
  });
});
