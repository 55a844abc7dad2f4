/**
 * The commands per rail, the built CLI against the reference service with its EVM ledger:
 * with Base Sepolia and Solana devnet paid on, `doctor` shows each rail's key and what the
 * chain lets it spend (on EVM the key's own balance: there is no delegate) and finds the
 * journal and both chains agreeing; `allowance` shows each rail's ceiling; `audit` reads each
 * network's account and agrees, per rail.
 */
import { createPublicClient, http, parseAbi, type Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDecimal } from "../../src/domain/money.js";
import { BASE_SEPOLIA, EVM_USDC, SOLANA_DEVNET } from "../../src/domain/networks.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt, runCli } from "../helpers/mcp.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const USDC = EVM_USDC[BASE_SEPOLIA]!.address as Address;
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

describe("the commands per rail: doctor, allowance, audit", () => {
  let t: TestSandbox;
  let f: EngineFixture;
  let env: Record<string, string>;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox({ evm: true });
    f = await engineFixture({
      t,
      env: {
        PAID_ACTIONS_NETWORKS: "base-sepolia,solana-devnet",
        PAID_ACTIONS_NETWORK: "",
        PAID_ACTIONS_EVM_WALLET: t.sb.evm!.agentKeyPath,
        PAID_ACTIONS_EVM_RPC_URL: t.sb.evm!.rpcUrl,
      },
    });
    env = f.env as Record<string, string>;
  }, 180_000);
  afterAll(async () => {
    await f?.close();
    await t?.close();
  });

  it("after a payment on EVM: each rail's key and ceiling, and the journal and both chains agreeing", async () => {
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect((await f.pa.journal.payment(paid.quote.quoteId))?.network).toBe(BASE_SEPOLIA);
    await f.pa.close();
    const agent = t.sb.evm!.agentAddress;
    const chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
    const left = await chain.readContract({
      address: USDC,
      abi: ERC20,
      functionName: "balanceOf",
      args: [agent as Address],
    });

    const doctor = await runCli(["doctor"], env, 60_000);
    expect(doctor.stdout).toContain(`networks ${BASE_SEPOLIA}, ${SOLANA_DEVNET} (in this order of preference)`);
    expect(doctor.stdout).toContain(`[ok  ] wallet: ${t.sb.walletPath} (address ${t.wallet.address})`);
    expect(doctor.stdout).toContain(
      `[ok  ] evm wallet: ${t.sb.evm!.agentKeyPath} (address ${agent}) pays on ${BASE_SEPOLIA} in USDC ${USDC}`,
    );
    expect(doctor.stdout).toContain(
      `[ok  ] evm balance: ${formatDecimal(left)} USDC on ${BASE_SEPOLIA} (via ${new URL(t.sb.evm!.rpcUrl).origin}): all the chain lets this key spend there (EIP-3009 has no delegate)`,
    );
    expect(doctor.stdout).toMatch(
      /\[ok {2}\] chain: the journal and the chain agree for the last 24 h \(1 payment\(s\)/,
    );
    expect(doctor.code, doctor.stdout).toBe(0);

    const allowance = await runCli(["allowance", "--json"], env, 60_000);
    expect(allowance.code, allowance.stderr).toBe(0);
    expect(JSON.parse(allowance.stdout)).toEqual({
      rails: [
        { network: BASE_SEPOLIA, wallet: agent, account: agent, ceiling: "balance", left: formatDecimal(left) },
        {
          network: SOLANA_DEVNET,
          wallet: t.wallet.address,
          account: expect.any(String),
          ceiling: "balance",
          left: formatDecimal(await t.usdc(t.wallet.address)),
        },
      ],
    });
    const plainAllowance = await runCli(["allowance"], env, 60_000);
    expect(plainAllowance.stdout).toMatch(
      /On EVM there is no delegate \(EIP-3009\): the key's own balance is the ceiling/,
    );

    const audit = await runCli(["audit"], env, 60_000);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toContain(`Audit of EVM key ${agent} (USDC ${USDC}) on ${BASE_SEPOLIA}`);
    expect(audit.stdout).toContain(`Audit of wallet ${t.wallet.address}`);
    expect(audit.stdout).toContain("The journal and the chain agree.");
    // The RPC is named by its origin only.
    expect(audit.stdout).toContain(`via ${new URL(t.sb.evm!.rpcUrl).origin}`);
  });
});
