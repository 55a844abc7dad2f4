/**
 * Where the owner's key is, said by the built CLI: in the embedded default the owner is the
 * sandbox's demo wallet, `<home>/sandbox/wallet.json`, readable by the server's user — `doctor`
 * warns, `allowance` warns on stderr, and the demo (`npm start`) says it. With the owner's key
 * elsewhere (a configured service whose owner's key the setup does not name) nothing is said;
 * a --owner-keypair this user can read is said once it proved to be the owner's, and an agent
 * key that is the owner's own key is said too.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceEnv } from "../helpers/engine.js";
import { cleanupAll, ensureBuilt, freshHome, runCli } from "../helpers/mcp.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => cleanupAll(), 60_000);

describe("the owner's key in the embedded default: <home>/sandbox/wallet.json", () => {
  const home = freshHome();
  const env = { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home };
  const wallet = join(home, "sandbox", "wallet.json");

  it("doctor warns that the owner's keypair is the demo wallet in the home, readable by this user", async () => {
    const r = await runCli(["doctor"], env, 90_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^\\[warn\\] owner key: the owner's keypair \\(\\w{32,44}\\) is ${esc(wallet)} \\(the embedded sandbox's demo wallet, kept in the home\\), readable by this user \\([^)]+\\): an agent with a shell as this user can grant itself any allowance with it and pay without an approval\\. Keep the owner's key where the server's user cannot read it`,
        "m",
      ),
    );
    expect(r.stdout).not.toContain("[ok  ] owner key");
  });

  it("allowance warns on stderr, and still shows the allowance on stdout", async () => {
    const r = await runCli(["allowance", "--json"], env, 90_000);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ allowance: expect.any(String) });
    expect(r.stderr).toContain(`paid-actions-mcp allowance: warning: the owner's keypair (`);
    expect(r.stderr).toContain(`) is ${wallet} (the embedded sandbox's demo wallet, kept in the home)`);
    expect(r.stderr.match(/warning: /g)).toHaveLength(1);
    // Granting with that very file says it once.
    const granted = await runCli(["allowance", "grant", "20", "--owner-keypair", wallet], env, 90_000);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stderr.match(/warning: the owner's keypair/g)).toHaveLength(1);
  });

  it("the demo (npm start) says where the owner's key is", async () => {
    const demoHome = freshHome();
    const r = await runCli(["demo", "--home", demoHome], { PATH: process.env.PATH ?? "" }, 180_000);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain(
      `) is ${join(demoHome, "sandbox", "wallet.json")} (the embedded sandbox's demo wallet, kept in the home), readable by this user`,
    );
    expect(r.stdout).toMatch(/^Warning: the owner's keypair \(/m);
    expect(r.stdout).not.toContain("whatever runs on this machine");
  }, 200_000);
});

describe("the owner's key elsewhere: a configured service, the owner's key in no file the setup names", () => {
  let t: TestSandbox;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestSandbox();
    env = {
      ...serviceEnv(t, freshHome()),
      PAID_ACTIONS_WALLET: t.sb.agentKeyPath!,
      PAID_ACTIONS_OWNER: t.wallet.address,
    };
  }, 60_000);
  afterAll(() => t?.close());

  it("doctor does not warn about the owner's key", async () => {
    const r = await runCli(["doctor"], env, 90_000);
    expect(r.stdout).toContain(`paying as the delegate of the owner ${t.wallet.address}`);
    expect(r.stdout).not.toContain("[warn] owner key");
    expect(r.stdout).toContain(
      "[ok  ] owner key: not in a file this setup names (the embedded sandbox's wallet, the agent key) that this user can read",
    );
  });

  it("allowance does not warn; granting with a --owner-keypair this user can read does, once it proved to be the owner's", async () => {
    const show = await runCli(["allowance"], env, 60_000);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stderr).toBe("");
    const wrong = await runCli(["allowance", "grant", "3", "--owner-keypair", t.sb.agentKeyPath!], env, 60_000);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).not.toContain("warning:");
    const granted = await runCli(["allowance", "grant", "3", "--owner-keypair", t.sb.walletPath], env, 60_000);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stderr).toContain(
      `paid-actions-mcp allowance: warning: the owner's keypair (${t.wallet.address}) is ${t.sb.walletPath} (given with --owner-keypair), readable by this user`,
    );
  });

  it("an agent key that is the owner's own key: doctor warns", async () => {
    const r = await runCli(["doctor"], { ...env, PAID_ACTIONS_WALLET: t.sb.walletPath }, 90_000);
    expect(r.stdout).toContain(
      `[warn] owner key: the owner's keypair (${t.wallet.address}) is ${t.sb.walletPath} (the agent key itself: the server pays with the owner's own key), readable by this user`,
    );
  });
});
