/**
 * Where the product knows the owner's keypair to be (commands/owner-key.ts), as a table: the
 * embedded sandbox's demo wallet when it is the configured owner, an agent key that is the
 * owner's own, a --owner-keypair (once, whatever its spelling); nothing without an owner or
 * for a key elsewhere; a warning only for a file this user can read.
 */
import { describe, expect, it } from "vitest";
import { ownerKeyFiles, ownerKeyWarnings, type OwnerKeySetup } from "../../src/commands/owner-key.js";

const OWNER = "Owner11111111111111111111111111111111111111";
const AGENT = "Agent11111111111111111111111111111111111111";
const WALLET = "/home/u/.paid-actions/sandbox/wallet.json";
const AGENT_KEY = "/home/u/.paid-actions/sandbox/agent-key.json";

describe("the owner's keypair files a setup names", () => {
  it.each<[string, OwnerKeySetup, Array<{ path: string; source: string }>]>([
    ["no owner: the key pays from its own account", { sandbox: { owner: OWNER, walletPath: WALLET } }, []],
    [
      "the embedded default: the demo wallet is the owner",
      { owner: OWNER, sandbox: { owner: OWNER, walletPath: WALLET }, agentKey: { path: AGENT_KEY, address: AGENT } },
      [{ path: WALLET, source: "sandbox" }],
    ],
    [
      "another owner than the sandbox's wallet: that wallet is not the owner's key",
      { owner: AGENT, sandbox: { owner: OWNER, walletPath: WALLET } },
      [],
    ],
    ["a sandbox.json from before delegate mode names no owner", { owner: OWNER, sandbox: { walletPath: WALLET } }, []],
    [
      "a configured service: the owner's key is nowhere the product knows",
      { owner: OWNER, agentKey: { path: AGENT_KEY, address: AGENT } },
      [],
    ],
    [
      "the agent key is the owner's own key",
      { owner: OWNER, agentKey: { path: "/keys/owner.json", address: OWNER } },
      [{ path: "/keys/owner.json", source: "agent-key" }],
    ],
    [
      "--owner-keypair",
      { owner: OWNER, ownerKeypair: "/media/usb/owner.json" },
      [{ path: "/media/usb/owner.json", source: "option" }],
    ],
    [
      "--owner-keypair naming the demo wallet again (another spelling): once",
      { owner: OWNER, sandbox: { owner: OWNER, walletPath: WALLET }, ownerKeypair: `${WALLET}/../wallet.json` },
      [{ path: WALLET, source: "sandbox" }],
    ],
  ])("%s", (_name, setup, files) => {
    expect(ownerKeyFiles(setup)).toEqual(files);
  });

  it("warns only for a file this user can read, naming the owner, the file and what to do", () => {
    const setup = {
      owner: OWNER,
      sandbox: { owner: OWNER, walletPath: WALLET },
      ownerKeypair: "/media/usb/owner.json",
    };
    expect(ownerKeyWarnings(setup, () => false)).toEqual([]);
    const [w, ...rest] = ownerKeyWarnings(setup, (p) => p === WALLET);
    expect(rest).toEqual([]);
    expect(w).toMatch(
      new RegExp(
        `^the owner's keypair \\(${OWNER}\\) is ${WALLET} \\(the embedded sandbox's demo wallet, kept in the home\\), readable by this user \\(.+\\): an agent with a shell as this user can grant itself any allowance`,
      ),
    );
    expect(w).toContain("`allowance grant --unsigned`, then `allowance submit`");
  });
});
