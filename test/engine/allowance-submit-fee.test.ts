/**
 * `allowance submit` (the built CLI) against the reference service's real ledger: an
 * owner-signed grant that carries a priority fee of 0.14 SOL — what an agent could hand a
 * person as a prepared "unsigned grant" to sign — is refused before it is sent: the owner's
 * SOL and the allowance stay as they were. A grant within the fee bound is sent, its fee said
 * first, and the owner pays exactly that; the grant the command signs itself says its fee too.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Instruction,
} from "@solana/kit";
import { getApproveCheckedInstruction } from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { associatedTokenAddress } from "../../src/domain/token.js";
import { createRpcChain } from "../../src/engine/rails/solana/rpc.js";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt, runCli } from "../helpers/mcp.js";
import { rpcCall, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const BUDGET = address("ComputeBudget111111111111111111111111111111");
const le = (v: bigint, bytes: number) => Array.from({ length: bytes }, (_, i) => Number((v >> BigInt(8 * i)) & 0xffn));

let t: TestSandbox;
let f: EngineFixture;
beforeAll(async () => {
  ensureBuilt();
  t = await startTestSandbox();
  f = await engineFixture({
    t,
    env: { PAID_ACTIONS_WALLET: t.sb.agentKeyPath!, PAID_ACTIONS_OWNER: t.wallet.address },
  });
}, 120_000);
afterAll(async () => {
  await f?.close();
  await t?.close();
});

const cli = (args: string[]) => runCli(["allowance", ...args], f.env as Record<string, string>, 60_000);
const lamports = async () =>
  BigInt((await rpcCall<{ value: number }>(t.sb.rpcUrl, "getBalance", [t.wallet.address])).value);
const delegated = async () => {
  const ata = await associatedTokenAddress(t.wallet.address, t.sb.asset);
  const info = await rpcCall<any>(t.sb.rpcUrl, "getAccountInfo", [ata, { encoding: "jsonParsed" }]);
  return BigInt(info.value.data.parsed.info.delegatedAmount?.amount ?? "0");
};

/** A grant of `amount` to the agent key signed by the owner (the demo wallet), with a unit limit and price. */
async function ownerSignedGrant(amount: bigint, units: number, microLamports: bigint): Promise<string> {
  const lifetime = await (await createRpcChain(t.sb.rpcUrl)).latestBlockhash();
  const budget: Instruction[] = [
    { programAddress: BUDGET, data: new Uint8Array([2, ...le(BigInt(units), 4)]) },
    { programAddress: BUDGET, data: new Uint8Array([3, ...le(microLamports, 8)]) },
  ];
  const approve = getApproveCheckedInstruction({
    source: address(await associatedTokenAddress(t.wallet.address, t.sb.asset)),
    mint: address(t.sb.asset),
    delegate: address(t.agent.address),
    owner: t.wallet,
    amount,
    decimals: 6,
  });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(t.wallet, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions([...budget, approve], m),
  );
  return getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
}

describe("allowance submit: the owner's fee is bounded and said before sending", () => {
  it("a grant carrying a 0.14 SOL priority fee is refused before it is sent: the owner's SOL and the allowance unchanged", async () => {
    const [sol, allowance] = [await lamports(), await delegated()];
    const r = await cli(["submit", await ownerSignedGrant(900_000_000n, 1_400_000, 100_000_000n)]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("not sent: its fee would be 0.140005 SOL (140005000 lamports");
    expect(r.stderr).not.toContain("sent ");
    expect(r.stdout).toBe("");
    expect(await lamports()).toBe(sol);
    expect(await delegated()).toBe(allowance);
  });

  it("a grant within the bound is sent, its fee said first, and the owner pays exactly that", async () => {
    const sol = await lamports();
    const r = await cli(["submit", await ownerSignedGrant(6_000_000n, 20_000, 250_000n)]);
    expect(r.code, r.stderr).toBe(0);
    const said =
      "fee: 0.00001 SOL (10000 lamports: 5000 for 1 signature, a priority fee of 5000 lamports (250000 microlamports × 20000 compute units))";
    expect(r.stderr).toContain(said);
    expect(r.stderr.indexOf(said)).toBeLessThan(r.stderr.indexOf("sent "));
    expect(await delegated()).toBe(6_000_000n);
    expect(sol - (await lamports())).toBe(10_000n);
  });

  it("the grant the command signs with the owner's keypair says its fee too: 5,000 lamports", async () => {
    const sol = await lamports();
    const r = await cli(["grant", "4", "--owner-keypair", t.sb.walletPath]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("fee: 0.000005 SOL (5000 lamports: 5000 for 1 signature, no priority fee)");
    expect(await delegated()).toBe(4_000_000n);
    expect(sol - (await lamports())).toBe(5_000n);
  });
});
