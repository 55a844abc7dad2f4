/**
 * paid_fetch with the engine SIGKILLed at each step boundary a fetch reaches, then restarted
 * with the same call: the resource is paid exactly once in every case. Killed after the paid
 * request left but before its answer was recorded, the answer is lost: the chain shows the
 * payment landed, so the purchase goes to a person and is never paid again. On each rail
 * (test/helpers/rails.ts): the sandbox's resource offers Solana and eip155:84532, and the
 * payer's and the payee's balances on the rail's ledger show each purchase paid once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Step } from "../../src/engine/engine.js";
import { runEngineChild, serviceEnv, testJournalEnv } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { startProxy, type Proxy } from "../helpers/proxy.js";
import { balances, moved, RAILS } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

/** The boundaries a fetch passes (it has no confirm or execution request of its own). */
const FETCH_STEPS: Step[] = [
  "intent_recorded",
  "quote_recorded",
  "reserved",
  "signed",
  "confirm_sent",
  "execution_recorded",
];

describe.each(RAILS)("paid_fetch on $name: a crash at every step boundary (SIGKILL), then restart", (rail) => {
  let t: TestSandbox;
  let resource: Proxy;
  let home: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    ensureBuilt();
    t = await startTestSandbox(rail.sandbox);
    resource = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""));
    home = mkdtempSync(join(tmpdir(), "pam-crash-fetch-"));
    env = {
      ...serviceEnv(t, home),
      ...rail.env(t),
      ...(await testJournalEnv()),
      PAID_ACTIONS_ALLOW_ORIGINS: resource.url,
    };
  });
  afterAll(async () => {
    await resource.close();
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  it("every purchase is paid exactly once; an answer lost to the crash goes to a person", async () => {
    const seller = rail.seller(t);
    const before = await balances(rail, t, seller);
    for (const [i, step] of FETCH_STEPS.entries()) {
      const city = ["Oslo", "Rome", "Paris", "Lima", "Quito", "Cairo"][i]!;
      const call = { fetch: { url: `${resource.url}/x402/weather?city=${city}`, intentKey: `crash-fetch-${step}` } };
      const paidBefore = resource.seen.filter((r) => r.headers["payment-signature"]).length;
      const crashed = await runEngineChild({ ...env, CHILD_CRASH_AT: step, CHILD_CALLS: JSON.stringify([call]) });
      expect(
        crashed.signal,
        `the child should die at ${step}; stderr: ${crashed.stderr}; ${JSON.stringify(crashed.lines)}`,
      ).toBe("SIGKILL");

      const restarted = await runEngineChild({ ...env, CHILD_CALLS: JSON.stringify([call]) });
      expect(restarted.code, restarted.stderr).toBe(0);
      const line = restarted.lines[0];
      if (step === "confirm_sent") {
        expect(line, `after a crash at ${step}`).toMatchObject({ ok: false, code: "execution_rejected" });
      } else {
        expect(line, `after a crash at ${step}`).toMatchObject({ ok: true, result: { status: 200 } });
        expect(line.result.payment).toMatchObject({ amount: "0.001", payTo: seller, network: rail.network });
      }
      const paidSoFar = BigInt(i + 1) * 1_000n;
      expect(await moved(rail, t, before, seller), `after a crash at ${step}`).toEqual({
        payer: paidSoFar,
        payee: paidSoFar,
      });
      const paid = resource.seen.filter((r) => r.headers["payment-signature"]).length - paidBefore;
      expect(paid, `paid requests after a crash at ${step}`).toBeLessThanOrEqual(2);
    }
  });
});
