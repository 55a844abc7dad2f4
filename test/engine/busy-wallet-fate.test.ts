/**
 * A busy wallet's refused proof does not stay "unknown" forever: the wallet's history since
 * signing is longer than one memo search reads (2,000 entries), so the fate is read over
 * reconciler passes (src/engine/rails/solana/memo-resume.ts) until the chain shows the proof can
 * never land, and the intent goes on. Real reference service, real RPC, real ledger.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import { refundTransferWire } from "../../src/sandbox/ledger/chain.js";
import { engineFixture, outcome, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const NOISE = 2_300;

describe("a busy wallet's refused proof", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
    // One purchase first: the treasury's 0.288 USDC pays for the noise below.
    const warm = await engineFixture({ t });
    await warm.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, image: "warm-up" } });
    await warm.close();
    // Other traffic on the wallet's token account, all of it "since signing" (within the
    // search's 10 minutes of clock skew): 1 atomic unit in, each with its own memo.
    for (let i = 0; i < NOISE; i++) {
      const wire = await refundTransferWire(t.sb.ledger, t.sb.keys, t.sb.asset, t.wallet.address, 1n, `noise-${i}`);
      const sent = t.sb.ledger.submit(wire);
      expect(sent.ok, sent.ok ? "" : sent.error).toBe(true);
    }
  }, 60_000);
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("whose blockhash expired leaves unknown over reconciler passes: never landed, re-signed once, paid once", async () => {
    let rotated = false;
    f = await engineFixture({
      t,
      open: { settleWaitMs: 0 },
      rules: [
        {
          match: on("POST", "/v1/payments/confirm"),
          action: {
            kind: "dynamic",
            choose: () => (rotated ? undefined : ((rotated = true), t.sb.ledger.rotateBlockhash(), undefined)),
          },
        },
      ],
    });
    const before = await t.usdc(t.wallet.address);
    const req = {
      action: "servers.provision",
      input: { ...SMALL_SERVER, image: "busy-wallet" },
      intentKey: "busy-wallet-fate",
    };
    const first = await outcome(f.pa.engine.pay(req));
    expect(first).toBeInstanceOf(PaidActionError);
    expect((first as PaidActionError).code, (first as PaidActionError).message).toBe("outcome_unknown");
    expect((first as PaidActionError).message).toMatch(
      /being read over several passes: 2000 transactions read in 1 pass/,
    );
    const held = (await f.pa.journal.intentByKey(req.intentKey))!;
    expect(held.attempt).toBe(0);
    expect(held.budgetState).toBe("reserved");

    let passes = 0;
    for (; passes < 5; passes++) {
      const row = (await f.pa.journal.intentByKey(req.intentKey))!;
      if (row.attempt > 0 || row.state !== held.state) break;
      await f.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
    }
    expect(passes).toBe(1);
    const payments = (await f.pa.journal.paymentsSince(0)).filter((p) => p.intentId === held.intentId);
    expect(payments.find((p) => p.quoteId === held.quoteId)?.fate).toBe("never");
    // The intent goes on with a fresh proof, which pays once.
    const paid = await f.pa.engine.pay(req);
    expect(paid.intentId).toBe(held.intentId);
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
    expect((await f.pa.journal.intent(held.intentId))!.attempt).toBe(1);
  });
});
