/**
 * The EVM rail (src/engine/rails/evm/) against the reference service's EVM ledger (anvil as
 * eip155:84532, USDC with its EIP-712 domain): with PAID_ACTIONS_NETWORKS=base-sepolia a
 * paid action pays the v1 service on EVM from the agent's EVM key — exactly the price, read
 * back from the chain — journaled with its nonce and validity before the proof left; with
 * Solana first it pays on Solana; both in one journal, one daily cap counting both, and the
 * spend broken down by network. The rail's key, ceiling and checks; the audit per rail.
 */
import { createPublicClient, http, parseAbi, type Address } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "../../src/app/audit.js";
import { railsFor } from "../../src/app/index.js";
import { BASE_SEPOLIA, EVM_USDC, SOLANA_DEVNET } from "../../src/domain/networks.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type SeenRequest } from "../helpers/proxy.js";
import { pollUntil } from "../helpers/wait.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const USDC = EVM_USDC[BASE_SEPOLIA]!.address as Address;
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

/**
 * The start of the next whole second (the chain's block times are whole seconds): an audit
 * from there sees this test's transactions and none of an earlier test's on the same keys.
 */
async function nextSecond(): Promise<number> {
  const at = (Math.floor(Date.now() / 1000) + 1) * 1000;
  await new Promise((r) => setTimeout(r, at - Date.now() + 5));
  return at;
}

describe("engine: the EVM rail on the sandbox's EVM ledger", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  let chain: ReturnType<typeof createPublicClient>;
  const usdc = (owner: string) =>
    chain.readContract({ address: USDC, abi: ERC20, functionName: "balanceOf", args: [owner as Address] });
  /** The env that pays on EVM first (or only), with the sandbox's EVM key and RPC. */
  const evmEnv = (networks: string): Record<string, string> => ({
    PAID_ACTIONS_NETWORKS: networks,
    PAID_ACTIONS_NETWORK: "",
    PAID_ACTIONS_EVM_WALLET: t.sb.evm!.agentKeyPath,
    PAID_ACTIONS_EVM_RPC_URL: t.sb.evm!.rpcUrl,
  });

  beforeAll(async () => {
    t = await startTestSandbox({ evm: true });
    chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("PAID_ACTIONS_NETWORKS=base-sepolia: a paid action pays the v1 service on EVM, exactly the price, once", async () => {
    f = await engineFixture({ t, env: evmEnv("base-sepolia") });
    const since = await nextSecond();
    expect(f.pa.config?.networks).toEqual([BASE_SEPOLIA]);
    const agent = t.sb.evm!.agentAddress;
    const treasury = t.sb.evmLedger!.keys.treasury.address;
    const [agent0, treasury0] = [await usdc(agent), await usdc(treasury)];

    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: SMALL_SERVER,
      intentKey: "evm-pays-once",
    });
    expect(paid.payment.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdc(agent)).toBe(agent0 - 288_000n);
    expect(await usdc(treasury)).toBe(treasury0 + 288_000n);

    const record = (await f.pa.journal.payment(paid.quote.quoteId))!;
    expect(record).toMatchObject({
      network: BASE_SEPOLIA,
      payer: agent,
      source: agent,
      mint: USDC,
      payee: treasury,
      amount: 288_000n,
      blockhash: null,
      lastValidHeight: null,
    });
    expect(record.nonce).toMatch(/^0x[0-9a-f]{64}$/);
    expect(record.validAfter).toBe(0n);
    // Ours: at most five minutes after signing, whatever the quote's timeout.
    const signedS = BigInt(Math.floor(record.signedAt / 1000));
    expect(record.validBefore! > signedS).toBe(true);
    expect(record.validBefore! <= signedS + 300n).toBe(true);

    // The rail that signed it reads the settlement back from our own EVM RPC.
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(await f.pa.engine.checkSettlement(intent)).toEqual({ kind: "verified", tx: paid.payment.transaction });
    expect(await f.pa.journal.payment(paid.quote.quoteId)).toMatchObject({
      fate: "landed",
      tx: paid.payment.transaction,
    });

    // The retry with the same intentKey pays nothing.
    const again = await f.pa.engine.pay({
      action: "servers.provision",
      input: SMALL_SERVER,
      intentKey: "evm-pays-once",
    });
    expect(again.intentId).toBe(paid.intentId);
    expect(await usdc(agent)).toBe(agent0 - 288_000n);
    expect(f.settledFor(paid.quote.quoteId)).toBe(1);

    // The audit reads the key's USDC on base-sepolia and finds the journal right.
    const { report } = await runAudit(f.pa, { since, now: Date.now() });
    expect(report.discrepancies).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.rails).toEqual([
      expect.objectContaining({
        network: BASE_SEPOLIA,
        wallet: agent,
        walletTokenAccount: agent,
        mint: USDC,
        ok: true,
      }),
    ]);
    expect(report.payments).toEqual([expect.objectContaining({ quoteId: paid.quote.quoteId, status: "on_chain" })]);
  });

  it("Solana first pays on Solana, EVM first on EVM: both in one journal, one daily cap counting both, spend by network", async () => {
    f = await engineFixture({
      t,
      env: { ...evmEnv("solana-devnet,base-sepolia"), PAID_ACTIONS_MAX_PER_DAY: "0.7" },
    });
    const since = await nextSecond();
    const onSolana = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect((await f.pa.journal.payment(onSolana.quote.quoteId))?.network).toBe(SOLANA_DEVNET);
    expect(onSolana.payment.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,90}$/);

    const home = f.home;
    await f.pa.close();
    // The same journal, EVM first now.
    f.env.PAID_ACTIONS_NETWORKS = "base-sepolia,solana-devnet";
    await f.reopen();
    expect(f.home).toBe(home);
    const onEvm = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect((await f.pa.journal.payment(onEvm.quote.quoteId))?.network).toBe(BASE_SEPOLIA);
    expect(onEvm.payment.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    // 0.288 + 0.288 spent; a third would pass 0.7 in 24 h, whichever network it would be paid on.
    const agent0 = await usdc(t.sb.evm!.agentAddress);
    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
    expect(e.code).toBe("budget_exceeded");
    expect(e.context).toMatchObject({ limit: "maxPerDay", spentLast24h: "0.576" });
    expect(await usdc(t.sb.evm!.agentAddress)).toBe(agent0);

    const s = await f.pa.engine.spending();
    expect(s.spentLast24h).toBe("0.576");
    expect(s.byNetwork).toEqual([
      {
        network: BASE_SEPOLIA,
        name: "base-sepolia",
        spentLast24h: "0.288",
        spentTotal: "0.288",
        refunded: "0.00",
        count: 1,
      },
      {
        network: SOLANA_DEVNET,
        name: "solana-devnet",
        spentLast24h: "0.288",
        spentTotal: "0.288",
        refunded: "0.00",
        count: 1,
      },
    ]);

    // One audit, each rail its own network's payments.
    const { report } = await runAudit(f.pa, { since, now: Date.now() });
    expect(report.discrepancies).toEqual([]);
    expect(report.rails.map((r) => [r.network, r.ok])).toEqual([
      [BASE_SEPOLIA, true],
      [SOLANA_DEVNET, true],
    ]);
    expect(report.payments.map((p) => [p.quoteId, p.status]).sort()).toEqual(
      [
        [onSolana.quote.quoteId, "on_chain"],
        [onEvm.quote.quoteId, "on_chain"],
      ].sort(),
    );
  });

  it("a failed execution refunded on EVM: the reconciler reads the refund from our EVM RPC and credits exactly that back", async () => {
    f = await engineFixture({
      t,
      env: evmEnv("base-sepolia"),
      open: { reconcile: false },
      // The provider fails, so the service refunds the payment on the EVM ledger, for real.
      rules: [
        {
          match: on("POST", "/v1/executions"),
          action: {
            kind: "dynamic",
            choose: (r: SeenRequest) => ((r.headers["x-sandbox-outcome"] = "fail"), undefined),
          },
        },
      ],
    });
    const agent = t.sb.evm!.agentAddress;
    const before = await usdc(agent);
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "evm-refund" },
    });
    const followed = await pollUntil(
      async () => {
        await f!.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
        return (await f!.pa.journal.intent(paid.intentId))!;
      },
      (row) => row.nextPollAt === null,
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    const row = followed.value;
    expect(row).toMatchObject({
      execStatus: "refunded",
      refundState: "verified",
      refundCredit: 288_000n,
      settlement: "verified",
      attention: null,
    });
    expect(row.refundTx).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdc(agent)).toBe(before);
    expect((await f.pa.engine.spending()).committedLast24h).toBe("0.00");
  });

  it("the rail's account and ceiling: the key's own USDC balance; a price above it is refused unsigned", async () => {
    f = await engineFixture({ t, env: evmEnv("base-sepolia") });
    const rail = await railsFor(f.pa.config!).rail(BASE_SEPOLIA);
    expect(rail.kind).toBe("evm");
    const agent = t.sb.evm!.agentAddress;
    expect(await rail.account()).toEqual({ wallet: agent, account: agent, asset: USDC });
    const left = await usdc(agent);
    expect(await rail.ceiling()).toEqual({ kind: "balance", left, account: agent });
    const e = await refusal(rail.admit(left + 1n));
    expect(e.code).toBe("balance_insufficient");
    expect(e.message).toMatch(/a person must add USDC to that key/);
    await expect(rail.admit(left)).resolves.toBeUndefined();
  });

  it("an EVM network without its key or RPC, in service mode, fails closed naming both keys", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_NETWORKS: "base-sepolia", PAID_ACTIONS_NETWORK: "" } });
    expect(f.pa.config).toBeUndefined();
    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toMatch(/needs PAID_ACTIONS_EVM_WALLET and PAID_ACTIONS_EVM_RPC_URL/);
    expect(await f.pa.journal.paymentsSince(0)).toEqual([]);
  });
});
