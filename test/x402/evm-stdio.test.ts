/**
 * The EVM rail in the built package over real stdio (node dist/cli.js serve, the embedded
 * sandbox): with PAID_ACTIONS_NETWORKS=base-sepolia and nothing else configured, paid_fetch
 * buys the sandbox's own x402 resource on its EVM ledger from the agent's EVM key (viem and
 * @x402/evm as dist/vendor bundles them) — its USDC read back from the chain — a retry pays
 * nothing, get_spending names the network, and `audit` finds the journal and the chain agree.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, http, parseAbi, type Address } from "viem";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import {
  call,
  cleanupAll,
  ensureBuilt,
  runCli,
  sandboxStarted,
  sc,
  serverEnv,
  startServer,
  text,
} from "../helpers/mcp.js";

const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("the EVM rail over stdio, in sandbox mode", () => {
  it("PAID_ACTIONS_NETWORKS=base-sepolia: paid_fetch pays the sandbox's resource on EVM, once; spending and audit say so", async () => {
    const env = { PAID_ACTIONS_NETWORKS: "base-sepolia" };
    const s = await startServer({ env });
    await s.client.listTools();
    const started = await sandboxStarted(s.home);
    const info = JSON.parse(readFileSync(join(s.home, "sandbox", "sandbox.json"), "utf8")) as {
      evm?: { rpcUrl: string; agentAddress: string };
    };
    expect(info.evm, "the sandbox's EVM ledger runs").toBeDefined();
    const chain = createPublicClient({ transport: http(info.evm!.rpcUrl) });
    const usdc = () =>
      chain.readContract({
        address: EVM_USDC[BASE_SEPOLIA]!.address as Address,
        abi: ERC20,
        functionName: "balanceOf",
        args: [info.evm!.agentAddress as Address],
      });
    const before = await usdc();

    const origin = new URL(started.baseUrl).origin;
    const args = { url: `${origin}/x402/weather?city=Porto`, intentKey: "mcp-evm-weather-porto" };
    const first = await call(s.client, "paid_fetch", args, 30_000);
    expect(first.isError, text(first)).toBeFalsy();
    const r = sc(first);
    expect(r).toMatchObject({
      status: 200,
      payment: { amount: "0.001", currency: "USDC", network: BASE_SEPOLIA, transaction: expect.stringMatching(/^0x/) },
    });
    expect(await usdc()).toBe(before - 1_000n);

    const again = sc(await call(s.client, "paid_fetch", args, 30_000));
    expect(again.intentId).toBe(r.intentId);
    expect(await usdc()).toBe(before - 1_000n);

    const spending = sc(await call(s.client, "get_spending"));
    expect(spending.byNetwork).toEqual([
      {
        network: BASE_SEPOLIA,
        name: "base-sepolia",
        spentLast24h: "0.001",
        spentTotal: "0.001",
        refunded: "0.00",
        count: 1,
      },
    ]);

    await s.close();
    const audit = await runCli(["audit", "--json"], serverEnv(s.home, env), 60_000);
    expect(audit.code, audit.stderr).toBe(0);
    const report = JSON.parse(audit.stdout);
    expect(report).toMatchObject({ ok: true, discrepancies: [] });
    expect(report.rails).toEqual([
      expect.objectContaining({ network: BASE_SEPOLIA, wallet: info.evm!.agentAddress, ok: true }),
    ]);
  });
});
