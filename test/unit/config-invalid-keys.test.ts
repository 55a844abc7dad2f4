/**
 * loadConfig (src/engine/config/config.ts) on invalid input: each invalid key of the
 * environment and the file is named exactly, every issue is reported at once, and an unknown
 * key gets the known one it resembles.
 */
import { describe, expect, it } from "vitest";
import { describeIssues, loadConfig } from "../../src/engine/config/config.js";
import { SOLANA_MAINNET } from "../../src/domain/networks.js";
import { ADDRESS, API_KEY, FILE, files, HOME, issues, load, ok, SERVICE } from "./config.fixtures.js";

describe("loadConfig: each invalid key is named", () => {
  // [name, env, file, the exact keys reported]
  it.each<[string, Record<string, string>, unknown, string[]]>([
    // base URL
    [
      "a base URL over http to another host",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "http://actions.example.com/v1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL over http to a look-alike of localhost",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "http://localhost.evil.com/v1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL without /v1",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "https://actions.example.com/api" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL with a query",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "https://actions.example.com/v1?x=1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL with credentials",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "https://user:pw@actions.example.com/v1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL that is not a URL",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "actions.example.com/v1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a base URL of another scheme",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: "ftp://actions.example.com/v1" },
      undefined,
      ["PAID_ACTIONS_BASE_URL"],
    ],
    [
      "a file base URL over http",
      {},
      { baseUrl: "http://actions.example.com/v1", apiKey: API_KEY, wallet: "/k.json" },
      [`${FILE}:baseUrl`],
    ],
    // service mode needs a key and a wallet
    [
      "no API key in service mode",
      { PAID_ACTIONS_BASE_URL: SERVICE.PAID_ACTIONS_BASE_URL, PAID_ACTIONS_WALLET: "/k.json" },
      undefined,
      ["PAID_ACTIONS_API_KEY"],
    ],
    [
      "no wallet in service mode",
      { PAID_ACTIONS_BASE_URL: SERVICE.PAID_ACTIONS_BASE_URL, PAID_ACTIONS_API_KEY: API_KEY },
      undefined,
      ["PAID_ACTIONS_WALLET"],
    ],
    [
      "neither",
      { PAID_ACTIONS_BASE_URL: SERVICE.PAID_ACTIONS_BASE_URL },
      undefined,
      ["PAID_ACTIONS_API_KEY", "PAID_ACTIONS_WALLET"],
    ],
    ["an API key with a space", { ...SERVICE, PAID_ACTIONS_API_KEY: "two words" }, undefined, ["PAID_ACTIONS_API_KEY"]],
    [
      "a file API key with a newline",
      {},
      { baseUrl: SERVICE.PAID_ACTIONS_BASE_URL, apiKey: "abc\ndef", wallet: "/k.json" },
      [`${FILE}:apiKey`],
    ],
    // RPC
    [
      "an RPC URL over http to a remote host",
      { ...SERVICE, SOLANA_RPC_URL: "http://rpc.example.com" },
      undefined,
      ["SOLANA_RPC_URL"],
    ],
    [
      "an RPC URL over http to a private address",
      { ...SERVICE, SOLANA_RPC_URL: "http://10.0.0.5:8899" },
      undefined,
      ["SOLANA_RPC_URL"],
    ],
    [
      "an RPC URL over http to 0.0.0.0",
      { ...SERVICE, SOLANA_RPC_URL: "http://0.0.0.0:8899" },
      undefined,
      ["SOLANA_RPC_URL"],
    ],
    ["an RPC URL over ws", { ...SERVICE, SOLANA_RPC_URL: "ws://127.0.0.1:8900" }, undefined, ["SOLANA_RPC_URL"]],
    ["an RPC URL that is not a URL", { ...SERVICE, SOLANA_RPC_URL: "rpc.example.com" }, undefined, ["SOLANA_RPC_URL"]],
    ["a file RPC URL over http", SERVICE, { rpcUrl: "http://rpc.example.com" }, [`${FILE}:rpcUrl`]],
    [
      "an RPC URL over http in sandbox mode too",
      { SOLANA_RPC_URL: "http://rpc.example.com" },
      undefined,
      ["SOLANA_RPC_URL"],
    ],
    // network
    ["an unknown network", { ...SERVICE, PAID_ACTIONS_NETWORK: "ethereum" }, undefined, ["PAID_ACTIONS_NETWORK"]],
    [
      "an unknown CAIP-2 id",
      { ...SERVICE, PAID_ACTIONS_NETWORK: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z" },
      undefined,
      ["PAID_ACTIONS_NETWORK"],
    ],
    ["mainnet in sandbox mode", { PAID_ACTIONS_NETWORK: "solana" }, undefined, ["PAID_ACTIONS_NETWORK"]],
    ["a file network in sandbox mode", {}, { network: SOLANA_MAINNET }, [`${FILE}:network`]],
    // amounts
    ["a negative maxPerCall", { PAID_ACTIONS_MAX_PER_CALL: "-1" }, undefined, ["PAID_ACTIONS_MAX_PER_CALL"]],
    ["an exponent maxPerDay", { PAID_ACTIONS_MAX_PER_DAY: "1e3" }, undefined, ["PAID_ACTIONS_MAX_PER_DAY"]],
    ["7 decimals in maxTotal", { PAID_ACTIONS_MAX_TOTAL: "0.0000001" }, undefined, ["PAID_ACTIONS_MAX_TOTAL"]],
    ["a word as approvalAbove", { PAID_ACTIONS_APPROVAL_ABOVE: "one" }, undefined, ["PAID_ACTIONS_APPROVAL_ABOVE"]],
    [
      "an amount beyond u64",
      { PAID_ACTIONS_MAX_PER_CALL: "18446744073709.551616" },
      undefined,
      ["PAID_ACTIONS_MAX_PER_CALL"],
    ],
    ["a file float amount", {}, { limits: { maxPerCall: 1e-7 } }, [`${FILE}:limits.maxPerCall`]],
    ["a file amount of the wrong type", {}, { limits: { maxPerDay: true } }, [`${FILE}:limits.maxPerDay`]],
    // allowActions
    ["an allow list of commas only", { PAID_ACTIONS_ALLOW_ACTIONS: " , " }, undefined, ["PAID_ACTIONS_ALLOW_ACTIONS"]],
    ["an upper-case pattern", { PAID_ACTIONS_ALLOW_ACTIONS: "Servers.*" }, undefined, ["PAID_ACTIONS_ALLOW_ACTIONS"]],
    [
      "a pattern with a regex",
      { PAID_ACTIONS_ALLOW_ACTIONS: "servers.(provision|delete)" },
      undefined,
      ["PAID_ACTIONS_ALLOW_ACTIONS"],
    ],
    ["a three-part pattern", { PAID_ACTIONS_ALLOW_ACTIONS: "a.b.c" }, undefined, ["PAID_ACTIONS_ALLOW_ACTIONS"]],
    [
      "two bad patterns, two issues",
      { PAID_ACTIONS_ALLOW_ACTIONS: "servers.*,A,b c" },
      undefined,
      ["PAID_ACTIONS_ALLOW_ACTIONS", "PAID_ACTIONS_ALLOW_ACTIONS"],
    ],
    [
      "a bad file pattern",
      {},
      { limits: { allowActions: ["servers.*", "servers/provision"] } },
      [`${FILE}:limits.allowActions`],
    ],
    // perAction
    [
      "a perAction key that is no action name",
      {},
      { limits: { perAction: { "Servers Provision": "1" } } },
      [`${FILE}:limits.perAction.Servers Provision`],
    ],
    [
      "a perAction key with a regex",
      {},
      { limits: { perAction: { "servers.(.*)": "1" } } },
      [`${FILE}:limits.perAction.servers.(.*)`],
    ],
    [
      "a perAction bad amount",
      {},
      { limits: { perAction: { "servers.provision": "-2" } } },
      [`${FILE}:limits.perAction.servers.provision`],
    ],
    [
      "a perAction amount of the wrong type",
      {},
      { limits: { perAction: { "servers.provision": null } } },
      [`${FILE}:limits.perAction.servers.provision`],
    ],
    // allowedPayees
    [
      "a payee that is not a Solana address",
      {},
      { limits: { allowedPayees: [ADDRESS, "0xdeadbeef"] } },
      [`${FILE}:limits.allowedPayees`],
    ],
    ["payees not as a list", {}, { limits: { allowedPayees: ADDRESS } }, [`${FILE}:limits.allowedPayees`]],
    // strict schema
    ["an unknown top-level key", {}, { baseURL: "https://x.example.com/v1" }, [`${FILE}:baseURL`]],
    ["an unknown limits key", {}, { limits: { maxPerDya: "5" } }, [`${FILE}:limits.maxPerDya`]],
    [
      "two unknown keys, two issues",
      {},
      { limits: { perActions: {}, allowPayees: [] } },
      [`${FILE}:limits.perActions`, `${FILE}:limits.allowPayees`],
    ],
    ["an unknown http key", {}, { http: { timeout: 5 } }, [`${FILE}:http.timeout`]],
    ["an http timeout out of range", {}, { http: { timeoutMs: 5 } }, [`${FILE}:http.timeoutMs`]],
    ["a file that is not an object", {}, [1, 2], [`${FILE}:(root)`]],
    // the file itself
    ["a file that is not JSON", {}, "{ limits: }", [FILE]],
  ])("%s", (_name, env, file, keys) => {
    expect(issues(env, file).map((i) => i.key)).toEqual(keys);
  });

  it("a perAction __proto__ key neither applies nor pollutes", () => {
    const perAction = ok({}, '{"limits":{"perAction":{"__proto__":"1","servers.*":"2"}}}').limits.perAction;
    expect(Object.getPrototypeOf(perAction)).toBe(Object.prototype);
    expect(Object.keys(perAction)).toEqual(["servers.*"]);
  });

  it("an unreadable file is named by PAID_ACTIONS_CONFIG", () => {
    const r = loadConfig({ PAID_ACTIONS_HOME: HOME, PAID_ACTIONS_CONFIG: "/nowhere.json" }, files({}));
    expect(r).toEqual({
      ok: false,
      home: HOME,
      issues: [{ key: "PAID_ACTIONS_CONFIG", message: "cannot read config file /nowhere.json" }],
    });
  });

  it("reports every issue at once, and the home even when invalid", () => {
    const r = load({
      PAID_ACTIONS_BASE_URL: "http://x.example.com/api",
      PAID_ACTIONS_MAX_PER_CALL: "x",
      PAID_ACTIONS_ALLOW_ACTIONS: "!",
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.home).toBe(HOME);
    expect(r.issues.map((i) => i.key)).toEqual([
      "PAID_ACTIONS_BASE_URL",
      "PAID_ACTIONS_BASE_URL",
      "PAID_ACTIONS_API_KEY",
      "PAID_ACTIONS_WALLET",
      "PAID_ACTIONS_MAX_PER_CALL",
      "PAID_ACTIONS_ALLOW_ACTIONS",
    ]);
    expect(describeIssues(r.issues)).toMatch(
      /^PAID_ACTIONS_BASE_URL: must use https .*; PAID_ACTIONS_ALLOW_ACTIONS: "!" is not an action pattern/,
    );
  });

  it("suggests the known key an unknown one resembles", () => {
    expect(issues({}, { limits: { maxPerDya: "5" } })[0]!.message).toBe("is not a known key; did you mean maxPerDay?");
    expect(issues({}, { rpcURL: "https://x" })[0]!.message).toBe("is not a known key; did you mean rpcUrl?");
  });
});
