/**
 * A quiet EVM chain still keeps time: anvil mines only when a transaction arrives, so the
 * sandbox mines an empty block once the chain has gone its idle bound without one. Without
 * it, the newest block's time would never pass an unsettled authorization's validBefore and
 * a client could never conclude that the payment can never land. A chain with traffic gets
 * no extra block; the idle block is persisted with the chain's state.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

const IDLE_MS = 1_500;
const home = mkdtempSync(join(tmpdir(), "pam-evm-idle-"));
let t: TestSandbox | undefined;
afterAll(async () => {
  await t?.close();
  rmSync(home, { recursive: true, force: true });
});

describe("sandbox: the EVM ledger's idle blocks", () => {
  it("a quiet chain gets an empty block once it has gone the idle bound without one, persisted across a restart", async () => {
    t = await startTestSandbox({ home, evm: true, evmIdleBlockMs: IDLE_MS });
    const chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
    const first = await chain.getBlock({ blockTag: "latest" });
    const later = await waitFor(
      async () => {
        const b = await chain.getBlock({ blockTag: "latest" });
        return b.number > first.number ? b : undefined;
      },
      { timeoutMs: 15_000, what: "an idle block" },
    );
    expect(later.transactions).toEqual([]);
    // Mined because the chain was idle: its time is past the last block's by the bound, give or take a second.
    expect(Number(later.timestamp - first.timestamp) * 1000).toBeGreaterThanOrEqual(IDLE_MS - 1_000);
    // Not one block per check: the chain, just mined, waits for the bound again.
    const right = await chain.getBlock({ blockTag: "latest" });
    expect(right.number - later.number).toBeLessThanOrEqual(1n);

    await t.close();
    t = await startTestSandbox({ home, evm: true, evmIdleBlockMs: 3_600_000 });
    const again = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
    expect((await again.getBlock({ blockTag: "latest" })).number).toBeGreaterThanOrEqual(later.number);
  });
});
