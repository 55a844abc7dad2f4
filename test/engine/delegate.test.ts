/**
 * Delegate mode against the reference service on its real ledger, settled by the x402
 * reference facilitator: the agent key pays from the owner's USDC account within the
 * allowance the owner granted on chain, the token program enforcing it; the `allowance`
 * command (the built CLI) reads, grants and revokes it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
  signTransaction,
} from "@solana/kit";
import { createRpcChain } from "../../src/engine/rails/solana/rpc.js";
import { exactTransfer } from "../../src/engine/rails/solana/transfer.js";
import { PaidActionError } from "../../src/engine/errors.js";
import { associatedTokenAddress } from "../../src/domain/token.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt, runCli } from "../helpers/mcp.js";
import { rpcCall, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const DEMO_ALLOWANCE = 25_000_000n;

describe("delegate mode: the agent key spends the owner's USDC within the allowance the chain enforces", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  const delegateEnv = () => ({ PAID_ACTIONS_WALLET: t.sb.agentKeyPath!, PAID_ACTIONS_OWNER: t.wallet.address });
  const cli = (args: string[]) => runCli(["allowance", ...args], f!.env as Record<string, string>, 60_000);
  const allowanceJson = async () => {
    const r = await cli(["--json"]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as {
      owner: string;
      delegate: string;
      tokenAccount: string;
      allowance: string;
      ownerBalance: string;
    };
  };
  /** The ledger's own view of the owner's token account. */
  const ledgerAccount = async () => {
    const ata = await associatedTokenAddress(t.wallet.address, t.sb.asset);
    const info = await rpcCall<any>(t.sb.rpcUrl, "getAccountInfo", [ata, { encoding: "jsonParsed" }]);
    return info.value.data.parsed.info as {
      owner: string;
      tokenAmount: { amount: string };
      delegate?: string;
      delegatedAmount?: { amount: string };
    };
  };

  it("the sandbox's first start: the demo wallet granted the agent key 25 USDC as its delegate; the RPC shows it (jsonParsed) and sandbox.json names both", async () => {
    const account = await ledgerAccount();
    expect(account.owner).toBe(t.wallet.address);
    expect(account.delegate).toBe(t.agent.address);
    expect(BigInt(account.delegatedAmount!.amount)).toBeLessThanOrEqual(DEMO_ALLOWANCE);
    expect(t.sb.agentAddress).toBe(t.agent.address);
    expect(t.sb.owner).toBe(t.wallet.address);
    const mint = await rpcCall<any>(t.sb.rpcUrl, "getAccountInfo", [t.sb.asset, { encoding: "jsonParsed" }]);
    expect(mint.value.data.parsed).toMatchObject({ type: "mint", info: { decimals: 6, isInitialized: true } });
  });

  it("a paid call moves the price from the owner's account and nothing from the agent key's; the allowance drops by the price; `allowance --json` agrees with the ledger", async () => {
    f = await engineFixture({ t, env: delegateEnv() });
    const before = await allowanceJson();
    expect(before).toMatchObject({
      owner: t.wallet.address,
      delegate: t.agent.address,
      tokenAccount: String(await associatedTokenAddress(t.wallet.address, t.sb.asset)),
    });
    const ownerBefore = await t.usdc(t.wallet.address);
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "delegate-pays" },
    });
    expect(paid.status).toBe("pending");
    expect(await t.usdc(t.wallet.address)).toBe(ownerBefore - PRICE);
    expect(await t.usdc(t.agent.address)).toBe(0n);
    const after = await allowanceJson();
    const ledger = await ledgerAccount();
    expect(BigInt(Math.round(Number(before.allowance) * 1e6)) - BigInt(Math.round(Number(after.allowance) * 1e6))).toBe(
      PRICE,
    );
    expect(BigInt(Math.round(Number(after.allowance) * 1e6))).toBe(BigInt(ledger.delegatedAmount!.amount));
    expect(BigInt(Math.round(Number(after.ownerBalance) * 1e6))).toBe(BigInt(ledger.tokenAmount.amount));
    // The journal records the source, and the chain check of the settlement passes.
    const payment = (await f.pa.journal.paymentsSince(0)).find((p) => p.intentId === paid.intentId)!;
    expect(payment).toMatchObject({
      payer: t.agent.address,
      source: String(await associatedTokenAddress(t.wallet.address, t.sb.asset)),
    });
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(await f.pa.engine.checkSettlement(intent)).toMatchObject({ kind: "verified" });
  });

  it("doctor: in delegate mode it shows the owner and the allowance left; paying from the key's own account is a warning", async () => {
    f = await engineFixture({ t, env: delegateEnv() });
    const delegate = await runCli(["doctor"], f.env as Record<string, string>, 60_000);
    expect(delegate.stdout).toContain(`paying as the delegate of the owner ${t.wallet.address}`);
    expect(delegate.stdout).toMatch(/\[ok {2}\] allowance: \d+\.\d+ USDC left to spend from the owner's \d+\.\d+ USDC/);
    expect(delegate.stdout).not.toContain("can spend everything in its account");
    const own = await runCli(
      ["doctor"],
      { ...(f.env as Record<string, string>), PAID_ACTIONS_WALLET: t.sb.walletPath, PAID_ACTIONS_OWNER: "" },
      60_000,
    );
    expect(own.stdout).toMatch(/\[warn\] wallet: the key in this home can spend everything in its account/);
  });

  it("the proof is the reference client's layout: compute limit, compute price, TransferChecked, memo, the fee payer's slot left empty — only the source and authority differ", async () => {
    const quote = await t.quote("servers.provision", { ...SMALL_SERVER, image: "layout" });
    const requirements = quote.paymentRequirement.accepts[0] as PaymentRequirements;
    const lifetime = await (await createRpcChain(t.sb.rpcUrl)).latestBlockhash();
    const source = await associatedTokenAddress(t.wallet.address, t.sb.asset);
    const mine = decode(
      await exactTransfer({
        authority: t.agent,
        source,
        payeeAccount: await associatedTokenAddress(requirements.payTo, requirements.asset),
        requirements,
        lifetime,
      }),
    );
    const reference = decode(
      JSON.parse(
        Buffer.from(
          await t.proof({ ...requirements, extra: { ...requirements.extra, recentBlockhash: lifetime.blockhash } }),
          "base64",
        ).toString(),
      ).payload.transaction,
    );
    expect(mine.instructions.map((i) => [i.program, i.data])).toEqual(
      reference.instructions.map((i) => [i.program, i.data]),
    );
    const [m, r] = [mine.instructions[2]!, reference.instructions[2]!];
    expect(m.accounts[0]).toBe(String(source));
    expect(r.accounts[0]).toBe(String(await associatedTokenAddress(t.wallet.address, t.sb.asset)));
    expect(m.accounts[3]).toBe(t.agent.address);
    expect(r.accounts[3]).toBe(t.wallet.address);
    expect(m.accounts.slice(1, 3)).toEqual(r.accounts.slice(1, 3));
    expect(mine.feePayer).toBe(requirements.extra.feePayer);
    expect(mine.emptySlots).toEqual([0]);
  });

  it("a proof for more than the allowance left, built with the agent key and sent straight to the service, is refused by the facilitator and moves nothing", async () => {
    f = await engineFixture({ t, env: delegateEnv() });
    const granted = await cli(["grant", "0.1", "--owner-keypair", t.sb.walletPath]);
    expect(granted.code, granted.stderr).toBe(0);
    const quote = await t.quote("servers.provision", { ...SMALL_SERVER, image: "over-allowance" });
    const requirements = quote.paymentRequirement.accepts[0] as PaymentRequirements;
    const lifetime = await (await createRpcChain(t.sb.rpcUrl)).latestBlockhash();
    const transaction = await exactTransfer({
      authority: t.agent,
      source: await associatedTokenAddress(t.wallet.address, t.sb.asset),
      payeeAccount: await associatedTokenAddress(requirements.payTo, requirements.asset),
      requirements,
      lifetime,
    });
    const proof = Buffer.from(
      JSON.stringify({ x402Version: 2, accepted: requirements, payload: { transaction } }),
    ).toString("base64");
    const owner = await t.usdc(t.wallet.address);
    const treasury = await t.usdc(requirements.payTo);
    const res = await t.call("POST", "/payments/confirm", {
      body: { quoteId: quote.quoteId, paymentProof: proof },
      headers: { "idempotency-key": `over-${quote.quoteId}` },
    });
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe("payment_invalid");
    expect(await t.usdc(t.wallet.address)).toBe(owner);
    expect(await t.usdc(requirements.payTo)).toBe(treasury);
    expect(BigInt((await ledgerAccount()).delegatedAmount!.amount)).toBe(100_000n);
  });

  it("`allowance revoke`: the next paid call answers allowance_exhausted before signing and nothing moves; `grant` again and it pays", async () => {
    f = await engineFixture({ t, env: delegateEnv() });
    const revoked = await cli(["revoke", "--owner-keypair", t.sb.walletPath]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await ledgerAccount()).delegate).toBeUndefined();
    expect(await allowanceJson()).toMatchObject({ allowance: "0.00" });
    const owner = await t.usdc(t.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "revoked" },
      intentKey: "delegate-revoked",
    };
    const refused = await outcome(f.pa.engine.pay(req));
    expect(refused).toBeInstanceOf(PaidActionError);
    expect((refused as PaidActionError).code).toBe("allowance_exhausted");
    expect((refused as PaidActionError).message).toMatch(/owner must grant more allowance.*nothing was signed/);
    expect(await t.usdc(t.wallet.address)).toBe(owner);
    const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(intent).toMatchObject({ proof: null, budgetState: "released" });
    expect(await f.pa.journal.payment(intent.quoteId!)).toBeUndefined();

    const granted = await cli(["grant", "5", "--owner-keypair", t.sb.walletPath]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout).toMatch(/Allowance {6}5\.00 USDC left/);
    const paid = await outcome(f.pa.engine.pay(req));
    expect(paid, String(paid)).not.toBeInstanceOf(PaidActionError);
    expect(await t.usdc(t.wallet.address)).toBe(owner - PRICE);
    expect(await allowanceJson()).toMatchObject({ allowance: "4.712" });
  });

  it("grant --unsigned prints a transaction for the owner's wallet; submit sends it once signed, and refuses one that is not an allowance of this key", async () => {
    f = await engineFixture({ t, env: delegateEnv() });
    const unsigned = await cli(["grant", "7.5", "--unsigned"]);
    expect(unsigned.code, unsigned.stderr).toBe(0);
    const wire = unsigned.stdout.trim();
    expect(unsigned.stderr).toContain("sets this server's allowance to 7.50 USDC");
    const notYet = await cli(["submit", wire]);
    expect(notYet.code).toBe(1);
    expect(notYet.stderr).toContain("not signed yet");
    // The owner's wallet signs it (here: the owner's key, as a wallet would).
    const tx = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
    const signed = await signTransaction([t.wallet.keyPair], tx);
    const signedWire = getBase64Decoder().decode(getTransactionEncoder().encode(signed));
    const sent = await cli(["submit", signedWire]);
    expect(sent.code, sent.stderr).toBe(0);
    expect(BigInt((await ledgerAccount()).delegatedAmount!.amount)).toBe(7_500_000n);
    // A revoke for another delegate's sake, or garbage, is refused before anything is sent.
    expect((await cli(["submit", "AAAA"])).stderr).toContain("not a base64 Solana transaction");
    const other = await runCli(["allowance", "revoke", "--unsigned"], {
      ...(f.env as Record<string, string>),
      PAID_ACTIONS_OWNER: t.agent.address,
    });
    const foreign = await cli(["submit", other.stdout.trim()]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/not sent: its fee payer is/);
  });
});

/** The parts of a wire transaction a layout comparison needs. */
function decode(wire: string) {
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  if (message.version !== 0) throw new Error("expected a v0 message");
  const keys = message.staticAccounts.map(String);
  return {
    feePayer: keys[0],
    emptySlots: Object.values(tx.signatures).flatMap((s, i) => (s === null ? [i] : [])),
    instructions: message.instructions.map((ix) => ({
      program: keys[ix.programAddressIndex],
      data: Buffer.from(ix.data ?? []).toString("hex"),
      accounts: (ix.accountIndices ?? []).map((i) => keys[i]!),
    })),
  };
}
