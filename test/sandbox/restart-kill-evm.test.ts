/**
 * The EVM ledger across a kill -9 of the built CLI sandbox (a separate process) at the one
 * moment it can lose something: a settlement mined on the chain, and the sandbox killed just
 * before the chain's state is dumped (the chain loses it: the record goes, the quote is unpaid,
 * the same proof pays it later exactly once) or just after (the chain keeps it: the record is
 * settled on restart). Either way the EVM balances and the service's records agree, and the
 * killed sandbox's anvil does not outlive it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { isAlive } from "../../src/sandbox/home-lock.js";
import { apiClient } from "../helpers/sandbox.js";
import { startCliSandbox } from "../helpers/process.js";
import { ACTION, paymentRecords, restartFixture, send, serverInput, type Request } from "../helpers/sandbox-restart.js";
import { pollUntil } from "../helpers/wait.js";

const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const PROJECT_ROOT = join(import.meta.dirname, "../..");

/** A preload that SIGKILLs the sandbox at its first dump of the EVM chain, just before or just after it. */
function killAtDumpPreload(dir: string, when: "before" | "after"): string {
  const ledgerUrl = pathToFileURL(join(PROJECT_ROOT, "dist", "sandbox", "evm", "ledger.js")).href;
  const file = join(dir, `kill-${when}-evm-dump.mjs`);
  writeFileSync(
    file,
    `import { EvmLedger } from ${JSON.stringify(ledgerUrl)};
const persist = EvmLedger.prototype.persist;
EvmLedger.prototype.persist = async function () {
  if (${JSON.stringify(when)} === "before") process.kill(process.pid, "SIGKILL");
  await persist.call(this);
  process.kill(process.pid, "SIGKILL");
};
`,
  );
  return file;
}

interface EvmInfo {
  rpcUrl: string;
  asset: string;
  agentKeyPath: string;
}

describe("the CLI sandbox's EVM ledger across kill -9", () => {
  const { newHome } = restartFixture();
  it("killed just before and just after a settlement's chain state is dumped: chain and records agree", async () => {
    const home = newHome();
    // Genesis on a first, clean start.
    let sb = await startCliSandbox(home);
    expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });

    for (const when of ["before", "after"] as const) {
      sb = await startCliSandbox(home, [], { nodeArgs: ["--import", killAtDumpPreload(home, when)] });
      let evm = (sb.info as unknown as { evm: EvmInfo }).evm;
      const anvilPid = Number(readFileSync(join(home, "evm-node.pid"), "utf8"));
      const agent = privateKeyToAccount(readFileSync(evm.agentKeyPath, "utf8").trim() as Hex);
      const usdc = (rpcUrl: string, owner: string) =>
        createPublicClient({ transport: http(rpcUrl) }).readContract({
          address: evm.asset as Address,
          abi: ERC20,
          functionName: "balanceOf",
          args: [owner as Address],
        });
      let call = apiClient(sb.info.baseUrl, sb.info.apiKey);
      const q = await call("POST", "/quotes", {
        body: {
          action: ACTION,
          input: serverInput(when === "before" ? 300 : 400),
          budget: { amount: "1000", currency: "USDC" },
        },
      });
      expect(q.status, q.text).toBe(201);
      const requirements = q.body.paymentRequirement.accepts[1] as X402Requirements;
      const amount = BigInt(requirements.amount);
      const treasury = requirements.payTo;
      const payerBefore = await usdc(evm.rpcUrl, agent.address);
      const treasuryBefore = await usdc(evm.rpcUrl, treasury);
      const payload = await new ExactEvmScheme(agent).createPaymentPayload(2, requirements);
      const proof = Buffer.from(JSON.stringify({ ...payload, accepted: requirements })).toString("base64");
      const confirm: Request = {
        method: "POST",
        path: "/payments/confirm",
        body: { quoteId: q.body.quoteId, paymentProof: proof },
        headers: { "idempotency-key": `evm-confirm-${when}` },
      };
      // The settlement was mined; the process dies at the dump: the client is told nothing.
      await expect(send(call, confirm)).rejects.toThrow();
      expect((await sb.exited).signal).toBe("SIGKILL");
      // Its anvil goes with it (the watchdog; at worst the next start kills it).
      expect(
        (
          await pollUntil(
            async () => isAlive(anvilPid),
            (alive) => !alive,
            { timeoutMs: 5_000 },
          )
        ).done,
      ).toBe(true);

      sb = await startCliSandbox(home);
      evm = (sb.info as unknown as { evm: EvmInfo }).evm;
      call = apiClient(sb.info.baseUrl, sb.info.apiKey);
      const record = () => paymentRecords(home).find((p) => p.quote_id === q.body.quoteId);
      if (when === "before") {
        // The chain lost the transfer: so did the records; nothing was charged.
        expect(record()).toBeUndefined();
        expect(await usdc(evm.rpcUrl, agent.address)).toBe(payerBefore);
        expect(await usdc(evm.rpcUrl, treasury)).toBe(treasuryBefore);
      } else {
        // The chain kept it: the record is settled, by that transaction.
        expect(record()).toMatchObject({ status: "settled", payer: agent.address });
        expect(await usdc(evm.rpcUrl, agent.address)).toBe(payerBefore - amount);
        expect(await usdc(evm.rpcUrl, treasury)).toBe(treasuryBefore + amount);
      }
      // The client's retry (same key, same proof) settles it, exactly once in all.
      const retried = await send(call, confirm);
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body).toMatchObject({ status: "settled", network: "eip155:84532" });
      expect(record()).toMatchObject({ status: "settled", transaction_sig: retried.body.transaction });
      expect(await usdc(evm.rpcUrl, agent.address)).toBe(payerBefore - amount);
      expect(await usdc(evm.rpcUrl, treasury)).toBe(treasuryBefore + amount);
      // And it survives a clean restart.
      expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });
      sb = await startCliSandbox(home);
      evm = (sb.info as unknown as { evm: EvmInfo }).evm;
      expect(await usdc(evm.rpcUrl, agent.address)).toBe(payerBefore - amount);
      expect(record()).toMatchObject({ status: "settled", transaction_sig: retried.body.transaction });
      expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    }
  }, 120_000);
});
