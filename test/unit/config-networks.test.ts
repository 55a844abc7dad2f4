/**
 * The networks paid on (src/engine/config/networks.ts, read by config/chain.ts):
 * PAID_ACTIONS_NETWORKS / `networks` as ordered CAIP-2 ids or short names, what a list may
 * not hold (an unknown name, a repeat, two Solana networks, two EVM networks, an EVM network
 * without its key and RPC, a Solana network other than PAID_ACTIONS_NETWORK's, a network the
 * sandbox does not emulate), PAID_ACTIONS_NETWORK keeping its meaning when no list is given,
 * and the EVM rail's settings (PAID_ACTIONS_EVM_WALLET, PAID_ACTIONS_EVM_RPC_URL).
 */
import { describe, expect, it } from "vitest";
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../src/domain/networks.js";
import {
  BASE_MAINNET,
  BASE_SEPOLIA,
  listEntries,
  networkName,
  resolveAnyNetwork,
  resolveNetworks,
  type NetworksInput,
} from "../../src/engine/config/networks.js";
import { resolve } from "node:path";
import { ADDRESS, FILE, issues, ok, SERVICE } from "./config.fixtures.js";

const SERVICE_MODE: NetworksInput = {
  list: undefined,
  solana: undefined,
  defaultSolana: SOLANA_MAINNET,
  mode: "service",
};
const SANDBOX_MODE: NetworksInput = {
  list: undefined,
  solana: undefined,
  defaultSolana: SOLANA_DEVNET,
  mode: "sandbox",
};
/** A service whose EVM key and RPC are configured. */
const WITH_EVM: NetworksInput = { ...SERVICE_MODE, evm: { wallet: true, rpcUrl: true } };

describe("the names a list may use", () => {
  it.each<[string, string | undefined]>([
    ["solana", SOLANA_MAINNET],
    ["solana-devnet", SOLANA_DEVNET],
    ["base", BASE_MAINNET],
    ["base-sepolia", BASE_SEPOLIA],
    [SOLANA_MAINNET, SOLANA_MAINNET],
    [SOLANA_DEVNET, SOLANA_DEVNET],
    ["eip155:8453", BASE_MAINNET],
    ["eip155:84532", BASE_SEPOLIA],
    ["eip155:1", undefined],
    ["ethereum", undefined],
    ["Solana", undefined],
    ["solana:unknown", undefined],
    ["", undefined],
  ])("%s -> %s", (name, caip2) => {
    expect(resolveAnyNetwork(name)).toBe(caip2);
  });

  it("a network is named by its short name when it has one", () => {
    expect(networkName(SOLANA_DEVNET)).toBe("solana-devnet");
    expect(networkName(BASE_SEPOLIA)).toBe("base-sepolia");
    expect(networkName("eip155:1")).toBe("eip155:1");
  });

  it("a list is comma-separated text or an array, blanks dropped", () => {
    expect(listEntries(" solana , ,base-sepolia,")).toEqual(["solana", "base-sepolia"]);
    expect(listEntries(["solana-devnet", " ", " base "])).toEqual(["solana-devnet", "base"]);
    expect(listEntries("")).toEqual([]);
  });
});

describe("resolveNetworks: the networks paid on, in order of preference", () => {
  // [name, input, networks, the Solana network, whether the list named it]
  it.each<[string, NetworksInput, string[], string, boolean]>([
    ["no list, no network: the mode's default (service)", SERVICE_MODE, [SOLANA_MAINNET], SOLANA_MAINNET, false],
    ["no list, no network: the mode's default (sandbox)", SANDBOX_MODE, [SOLANA_DEVNET], SOLANA_DEVNET, false],
    [
      "no list: PAID_ACTIONS_NETWORK's network alone, as before",
      { ...SERVICE_MODE, solana: SOLANA_DEVNET },
      [SOLANA_DEVNET],
      SOLANA_DEVNET,
      false,
    ],
    ["a list of one short name", { ...SERVICE_MODE, list: "solana-devnet" }, [SOLANA_DEVNET], SOLANA_DEVNET, true],
    ["a list of one CAIP-2 id", { ...SERVICE_MODE, list: [SOLANA_MAINNET] }, [SOLANA_MAINNET], SOLANA_MAINNET, true],
    [
      "a list that agrees with PAID_ACTIONS_NETWORK",
      { ...SERVICE_MODE, list: "solana-devnet", solana: SOLANA_DEVNET },
      [SOLANA_DEVNET],
      SOLANA_DEVNET,
      true,
    ],
    ["the sandbox's own network", { ...SANDBOX_MODE, list: "solana-devnet" }, [SOLANA_DEVNET], SOLANA_DEVNET, true],
    [
      "Solana then an EVM network, its key and RPC configured",
      { ...WITH_EVM, list: "solana,base" },
      [SOLANA_MAINNET, BASE_MAINNET],
      SOLANA_MAINNET,
      true,
    ],
    [
      "an EVM network first, in our order",
      { ...WITH_EVM, list: "base,solana" },
      [BASE_MAINNET, SOLANA_MAINNET],
      SOLANA_MAINNET,
      true,
    ],
    [
      "an EVM network alone (the Solana settings keep the mode's cluster, unpaid)",
      { ...WITH_EVM, list: "base" },
      [BASE_MAINNET],
      SOLANA_MAINNET,
      false,
    ],
    [
      "the sandbox's EVM chain: its key and RPC are the sandbox's",
      { ...SANDBOX_MODE, list: "base-sepolia,solana-devnet" },
      [BASE_SEPOLIA, SOLANA_DEVNET],
      SOLANA_DEVNET,
      true,
    ],
  ])("%s", (_name, input, networks, solana, fromList) => {
    expect(resolveNetworks(input)).toEqual({ ok: true, networks, solana, fromList });
  });

  // [name, input, every problem (a pattern each)]
  it.each<[string, NetworksInput, RegExp[]]>([
    ["an empty list", { ...SERVICE_MODE, list: " , " }, [/lists no network/]],
    ["an empty array", { ...SERVICE_MODE, list: [] }, [/lists no network/]],
    [
      "an unknown name",
      { ...SERVICE_MODE, list: "solana,ethereum" },
      [/"ethereum" is not a known network; use solana, solana-devnet, base, base-sepolia/],
    ],
    ["a network named twice", { ...SERVICE_MODE, list: `solana,${SOLANA_MAINNET}` }, [/names solana twice/]],
    [
      "two Solana networks",
      { ...SERVICE_MODE, list: "solana,solana-devnet" },
      [/names solana and solana-devnet: one Solana network at a time \(SOLANA_RPC_URL serves one cluster\)/],
    ],
    [
      "an EVM network without its key and RPC",
      { ...SERVICE_MODE, list: "solana,base" },
      [
        /names base \(eip155:8453\), an EVM network: paying there needs PAID_ACTIONS_EVM_WALLET and PAID_ACTIONS_EVM_RPC_URL/,
      ],
    ],
    [
      "an EVM network with its key but no RPC",
      { ...SERVICE_MODE, list: "base", evm: { wallet: true, rpcUrl: false } },
      [/names base \(eip155:8453\), an EVM network: paying there needs PAID_ACTIONS_EVM_RPC_URL \(/],
    ],
    [
      "two EVM networks (and neither has a key or RPC)",
      { ...SERVICE_MODE, list: "base-sepolia,base" },
      [
        /names base-sepolia and base: one EVM network at a time \(PAID_ACTIONS_EVM_RPC_URL serves one chain\)/,
        /names base-sepolia \(eip155:84532\), an EVM network: paying there needs/,
        /names base \(eip155:8453\), an EVM network: paying there needs/,
      ],
    ],
    [
      "two EVM networks, even with a key and an RPC",
      { ...WITH_EVM, list: "base,base-sepolia" },
      [/names base and base-sepolia: one EVM network at a time/],
    ],
    [
      "Base mainnet in sandbox mode",
      { ...SANDBOX_MODE, list: "solana-devnet,base" },
      [/names base: the embedded sandbox emulates base-sepolia/],
    ],
    [
      "a Solana network other than PAID_ACTIONS_NETWORK's",
      { ...SERVICE_MODE, list: "solana", solana: SOLANA_DEVNET },
      [/names solana, but PAID_ACTIONS_NETWORK names solana-devnet; make them agree/],
    ],
    [
      "no Solana network, where PAID_ACTIONS_NETWORK names one",
      { ...SERVICE_MODE, list: "base", solana: SOLANA_DEVNET },
      [/an EVM network/, /does not name solana-devnet, the Solana network PAID_ACTIONS_NETWORK names/],
    ],
    [
      "mainnet in sandbox mode",
      { ...SANDBOX_MODE, list: "solana" },
      [/names solana: the embedded sandbox emulates solana-devnet/],
    ],
  ])("refuses %s, naming every problem", (_name, input, problems) => {
    const r = resolveNetworks(input);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(problems.length);
    problems.forEach((p, i) => expect(r.problems[i]).toMatch(p));
  });
});

describe("loadConfig: the networks setting", () => {
  it("PAID_ACTIONS_EVM_WALLET and PAID_ACTIONS_EVM_RPC_URL (or the file's evmWallet, evmRpcUrl) make an EVM network payable", () => {
    const evm = {
      PAID_ACTIONS_EVM_WALLET: "keys/agent-evm.key",
      PAID_ACTIONS_EVM_RPC_URL: "https://base.example/v2/KEY",
    };
    expect(ok({ ...SERVICE, ...evm, PAID_ACTIONS_NETWORKS: "base,solana" })).toMatchObject({
      networks: [BASE_MAINNET, SOLANA_MAINNET],
      evmWalletPath: resolve("keys/agent-evm.key"),
      evmRpcUrl: "https://base.example/v2/KEY",
    });
    expect(
      ok({ ...SERVICE, PAID_ACTIONS_NETWORKS: "base" }, { evmWallet: "/k/evm.key", evmRpcUrl: "https://rpc.example" }),
    ).toMatchObject({ networks: [BASE_MAINNET], evmWalletPath: "/k/evm.key", evmRpcUrl: "https://rpc.example" });
    // Paying on EVM alone, a service needs no Solana key.
    const noSolanaKey = {
      PAID_ACTIONS_BASE_URL: SERVICE.PAID_ACTIONS_BASE_URL,
      PAID_ACTIONS_API_KEY: SERVICE.PAID_ACTIONS_API_KEY,
    };
    expect(ok({ ...noSolanaKey, ...evm, PAID_ACTIONS_NETWORKS: "base" }).networks).toEqual([BASE_MAINNET]);
    expect(issues({ ...noSolanaKey, ...evm, PAID_ACTIONS_NETWORKS: "base,solana" })).toEqual([
      { key: "PAID_ACTIONS_WALLET", message: expect.stringMatching(/is required when PAID_ACTIONS_BASE_URL is set/) },
    ]);
  });

  it("the EVM RPC is held to the secure-URL rule, and never echoed", () => {
    const found = issues({
      ...SERVICE,
      PAID_ACTIONS_NETWORKS: "base",
      PAID_ACTIONS_EVM_WALLET: "/k/evm.key",
      PAID_ACTIONS_EVM_RPC_URL: "http://rpc.example/v2/SECRETKEY",
    });
    expect(found).toEqual([{ key: "PAID_ACTIONS_EVM_RPC_URL", message: expect.stringMatching(/must use https/) }]);
    expect(JSON.stringify(found)).not.toContain("SECRETKEY");
    expect(ok({ ...SERVICE, PAID_ACTIONS_EVM_RPC_URL: "http://127.0.0.1:8545" }).evmRpcUrl).toBe(
      "http://127.0.0.1:8545",
    );
  });

  it("the embedded sandbox pays base-sepolia with its own EVM key and RPC: nothing to configure", () => {
    expect(ok({ PAID_ACTIONS_NETWORKS: "base-sepolia" })).toMatchObject({ networks: [BASE_SEPOLIA], mode: "sandbox" });
    expect(issues({ PAID_ACTIONS_NETWORKS: "base" })).toEqual([
      { key: "PAID_ACTIONS_NETWORKS", message: expect.stringMatching(/the embedded sandbox emulates base-sepolia/) },
    ]);
  });

  it("limits.allowedPayees takes EVM addresses beside Solana ones", () => {
    const payees = [ADDRESS, "0x036CbD53842c5426634e7929541eC2318f3dCF7e"];
    expect(ok(SERVICE, { limits: { allowedPayees: payees } }).limits.allowedPayees).toEqual(payees);
    expect(issues(SERVICE, { limits: { allowedPayees: ["0x1234"] } })).toEqual([
      { key: `${FILE}:limits.allowedPayees`, message: '"0x1234" is not a Solana or EVM address' },
    ]);
  });

  it("without PAID_ACTIONS_NETWORKS, the one network PAID_ACTIONS_NETWORK names (or the mode's default)", () => {
    expect(ok(SERVICE)).toMatchObject({ network: SOLANA_MAINNET, networks: [SOLANA_MAINNET] });
    expect(ok({})).toMatchObject({ network: SOLANA_DEVNET, networks: [SOLANA_DEVNET] });
    expect(ok({ ...SERVICE, PAID_ACTIONS_NETWORK: "solana-devnet" })).toMatchObject({
      network: SOLANA_DEVNET,
      networkExplicit: true,
      networks: [SOLANA_DEVNET],
    });
  });

  it("PAID_ACTIONS_NETWORKS names the Solana cluster too: its mint and its public RPC follow", () => {
    expect(ok({ ...SERVICE, PAID_ACTIONS_NETWORKS: "solana-devnet" })).toMatchObject({
      network: SOLANA_DEVNET,
      networkExplicit: true,
      networks: [SOLANA_DEVNET],
      mint: USDC_MINT[SOLANA_DEVNET],
      rpcUrl: "https://api.devnet.solana.com",
    });
  });

  it("the file's `networks`, as a list or as text; the environment wins", () => {
    expect(ok(SERVICE, { networks: ["solana-devnet"] }).networks).toEqual([SOLANA_DEVNET]);
    expect(ok(SERVICE, { networks: "solana-devnet" }).networks).toEqual([SOLANA_DEVNET]);
    expect(ok({ ...SERVICE, PAID_ACTIONS_NETWORKS: "solana" }, { networks: ["solana-devnet"] }).networks).toEqual([
      SOLANA_MAINNET,
    ]);
  });

  it("each problem of the list is an issue naming its key (the variable, or the file's key)", () => {
    expect(issues({ ...SERVICE, PAID_ACTIONS_NETWORKS: "solana,base-sepolia" })).toEqual([
      {
        key: "PAID_ACTIONS_NETWORKS",
        message: expect.stringMatching(/names base-sepolia \(eip155:84532\), an EVM network/),
      },
    ]);
    expect(issues(SERVICE, { networks: ["solana", "solana-devnet"] })).toEqual([
      { key: "/etc/paid-actions/config.json:networks", message: expect.stringMatching(/one Solana network at a time/) },
    ]);
    expect(issues({ ...SERVICE, PAID_ACTIONS_NETWORK: "solana", PAID_ACTIONS_NETWORKS: "solana-devnet" })).toEqual([
      { key: "PAID_ACTIONS_NETWORKS", message: expect.stringMatching(/PAID_ACTIONS_NETWORK names solana;/) },
    ]);
    expect(issues({ PAID_ACTIONS_NETWORKS: "solana" })).toEqual([
      { key: "PAID_ACTIONS_NETWORKS", message: expect.stringMatching(/the embedded sandbox emulates solana-devnet/) },
    ]);
  });

  it("an unknown key near `networks` in the file is still named", () => {
    expect(issues(SERVICE, { networkz: ["solana"] }).map((i) => i.key)).toEqual([
      "/etc/paid-actions/config.json:networkz",
    ]);
  });
});
