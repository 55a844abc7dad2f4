/**
 * loadConfig (src/engine/config/config.ts): the defaults of each mode, every key of the
 * config file, and the environment winning over the file.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../src/engine/config/config.js";
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../src/domain/networks.js";
import { ADDRESS, API_KEY, FILE, files, HOME, ok, SERVICE } from "./config.fixtures.js";

describe("loadConfig: defaults", () => {
  it("sandbox mode without a base URL: devnet, default limits, no RPC (the sandbox provides it)", () => {
    const c = ok({});
    expect(c).toMatchObject({
      mode: "sandbox",
      baseUrl: undefined,
      apiKey: undefined,
      walletPath: undefined,
      rpcUrl: undefined,
      network: SOLANA_DEVNET,
      networkExplicit: false,
      mint: USDC_MINT[SOLANA_DEVNET],
      home: HOME,
      limits: {
        maxPerCall: 5_000_000n,
        maxPerDay: 25_000_000n,
        maxTotal: undefined,
        approvalAbove: 1_000_000n,
        allowActions: ["*"],
        perAction: {},
        allowedPayees: undefined,
      },
      http: { timeoutMs: 10_000, maxAttempts: 4 },
      configFile: undefined,
    });
  });

  it("service mode with a base URL: mainnet and its public RPC", () => {
    const c = ok(SERVICE);
    expect(c).toMatchObject({
      mode: "service",
      baseUrl: "https://actions.example.com/v1",
      apiKey: API_KEY,
      walletPath: resolve("/keys/agent.json"),
      rpcUrl: "https://api.mainnet-beta.solana.com",
      network: SOLANA_MAINNET,
      mint: USDC_MINT[SOLANA_MAINNET],
    });
  });

  it("service mode on devnet defaults to the devnet RPC", () => {
    expect(ok({ ...SERVICE, PAID_ACTIONS_NETWORK: "solana-devnet" })).toMatchObject({
      network: SOLANA_DEVNET,
      networkExplicit: true,
      rpcUrl: "https://api.devnet.solana.com",
    });
  });

  it("a base URL with a trailing slash is kept without it", () => {
    expect(ok({ ...SERVICE, PAID_ACTIONS_BASE_URL: "https://actions.example.com/api/v1/" }).baseUrl).toBe(
      "https://actions.example.com/api/v1",
    );
  });
});

describe("loadConfig: the file, and the environment winning over it", () => {
  const file = {
    baseUrl: "https://file.example.com/v1",
    apiKey: "file-key-123456",
    wallet: "/keys/file.json",
    rpcUrl: "https://rpc.file.example.com",
    network: "solana",
    limits: {
      maxPerCall: "10",
      maxPerDay: 50,
      maxTotal: "100",
      approvalAbove: "2",
      allowActions: ["servers.*", "domains.register"],
      perAction: { "domains.register": "15", "servers.*": 3 },
      allowedPayees: [ADDRESS],
    },
    http: { timeoutMs: 2000, maxAttempts: 2 },
  };

  it("reads every key of the file", () => {
    expect(ok({}, file)).toMatchObject({
      mode: "service",
      baseUrl: "https://file.example.com/v1",
      apiKey: "file-key-123456",
      walletPath: resolve("/keys/file.json"),
      rpcUrl: "https://rpc.file.example.com",
      network: SOLANA_MAINNET,
      limits: {
        maxPerCall: 10_000_000n,
        maxPerDay: 50_000_000n,
        maxTotal: 100_000_000n,
        approvalAbove: 2_000_000n,
        allowActions: ["servers.*", "domains.register"],
        perAction: { "domains.register": 15_000_000n, "servers.*": 3_000_000n },
        allowedPayees: [ADDRESS],
      },
      http: { timeoutMs: 2000, maxAttempts: 2 },
      configFile: FILE,
    });
  });

  it.each<[string, Record<string, string>, (c: Config) => unknown, unknown]>([
    [
      "base URL",
      { PAID_ACTIONS_BASE_URL: "https://env.example.com/v1" },
      (c) => c.baseUrl,
      "https://env.example.com/v1",
    ],
    ["API key", { PAID_ACTIONS_API_KEY: "env-key-123456" }, (c) => c.apiKey, "env-key-123456"],
    ["wallet", { PAID_ACTIONS_WALLET: "/keys/env.json" }, (c) => c.walletPath, resolve("/keys/env.json")],
    [
      "RPC URL",
      { SOLANA_RPC_URL: "https://rpc.env.example.com/?api-key=abc" },
      (c) => c.rpcUrl,
      "https://rpc.env.example.com/?api-key=abc",
    ],
    ["network", { PAID_ACTIONS_NETWORK: "solana-devnet" }, (c) => c.network, SOLANA_DEVNET],
    ["home", { PAID_ACTIONS_HOME: "/tmp/elsewhere" }, (c) => c.home, resolve("/tmp/elsewhere")],
    ["maxPerCall", { PAID_ACTIONS_MAX_PER_CALL: "1.5" }, (c) => c.limits.maxPerCall, 1_500_000n],
    ["maxPerDay", { PAID_ACTIONS_MAX_PER_DAY: "7" }, (c) => c.limits.maxPerDay, 7_000_000n],
    ["maxTotal", { PAID_ACTIONS_MAX_TOTAL: "70" }, (c) => c.limits.maxTotal, 70_000_000n],
    ["approvalAbove", { PAID_ACTIONS_APPROVAL_ABOVE: "0" }, (c) => c.limits.approvalAbove, 0n],
    [
      "allowActions",
      { PAID_ACTIONS_ALLOW_ACTIONS: " dns.* , domains.register " },
      (c) => c.limits.allowActions,
      ["dns.*", "domains.register"],
    ],
    ["nothing, when the variable is empty", { PAID_ACTIONS_MAX_PER_CALL: "" }, (c) => c.limits.maxPerCall, 10_000_000n],
  ])("the environment wins: %s", (_name, env, get, value) => {
    expect(get(ok(env, file))).toEqual(value);
  });

  it("a file home is used when the environment names none", () => {
    const r = loadConfig({ PAID_ACTIONS_CONFIG: FILE }, files({ [FILE]: JSON.stringify({ home: "/tmp/file-home" }) }));
    expect(r.ok && r.config.home).toBe(resolve("/tmp/file-home"));
  });
});
