/**
 * The engine pays through its rails (src/engine/rails/), against the reference service: a
 * paid call is signed by the Solana rail of the configured network, and its payment record
 * carries what the rail put there — the network, the key, the account, the mint, the
 * lifetime — before the proof left; the same rail reads back the settlement. A list of
 * networks with one that cannot be paid on as configured (an EVM network without its key and
 * RPC) fails closed, naming the key, before anything is quoted.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SOLANA_DEVNET } from "../../src/domain/networks.js";
import { railsFor } from "../../src/app/index.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

describe("engine: the rails", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("a paid call's payment record carries the Solana rail's data, its network first", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_NETWORKS: "solana-devnet" } });
    expect(f.pa.config?.networks).toEqual([SOLANA_DEVNET]);
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    const record = await f.pa.journal.payment(paid.quote.quoteId);
    expect(record).toMatchObject({
      network: t.sb.network,
      payer: t.wallet.address,
      mint: t.sb.asset,
      fate: "pending",
    });
    expect(record?.network).toBe(SOLANA_DEVNET);
    expect(record?.blockhash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(record?.lastValidHeight).toEqual(expect.any(BigInt));
    expect(record?.source).toEqual(expect.any(String));
    // The rail that signed it reads the settlement back from our own RPC.
    const intent = (await f.pa.journal.intent(paid.intentId))!;
    expect(await f.pa.engine.checkSettlement(intent)).toEqual({ kind: "verified", tx: paid.payment.transaction });
    expect(await f.pa.journal.payment(paid.quote.quoteId)).toMatchObject({
      network: SOLANA_DEVNET,
      fate: "landed",
      tx: paid.payment.transaction,
    });
  });

  it("the rail says who pays from which account, and the ceiling the chain enforces: the key's own balance", async () => {
    f = await engineFixture({ t });
    const rail = await railsFor(f.pa.config!).rail(SOLANA_DEVNET);
    const account = await rail.account();
    expect(account).toMatchObject({ wallet: t.wallet.address, asset: t.sb.asset });
    expect(await rail.ceiling()).toEqual({
      kind: "balance",
      left: await t.usdc(t.wallet.address),
      account: account.account,
    });
  });

  it("an EVM network in the list without its key and RPC fails closed, naming PAID_ACTIONS_NETWORKS; nothing is quoted or paid", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_NETWORKS: "solana-devnet,base-sepolia" } });
    expect(f.pa.config).toBeUndefined();
    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toMatch(/PAID_ACTIONS_NETWORKS: names base-sepolia \(eip155:84532\), an EVM network/);
    expect(await f.pa.journal.paymentsSince(0)).toEqual([]);
  });
});
