import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  actionAllowed,
  describeIssues,
  journalOf,
  loadConfig,
  unknownPerActionKeys,
  type Config,
  type ConfigIssue,
} from "../../src/engine/config/config.js";
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../src/domain/networks.js";

const HOME = resolve("/tmp/paid-actions-unit-home");
const FILE = "/etc/paid-actions/config.json";
const API_KEY = "pak_live_0123456789abcdefghijklmnopqrstuv";
const SERVICE = {
  PAID_ACTIONS_BASE_URL: "https://actions.example.com/v1",
  PAID_ACTIONS_API_KEY: API_KEY,
  PAID_ACTIONS_WALLET: "/keys/agent.json",
};
const ADDRESS = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";

/** A readFile over an in-memory map: no real files. `undefined` content = unreadable. */
function files(map: Record<string, string | undefined>): (path: string) => string {
  return (path) => {
    const text = map[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
    return text;
  };
}

function load(env: Record<string, string>, file?: unknown) {
  const withFile = file === undefined ? env : { PAID_ACTIONS_CONFIG: FILE, ...env };
  const text = typeof file === "string" ? file : JSON.stringify(file);
  return loadConfig({ PAID_ACTIONS_HOME: HOME, ...withFile }, files(file === undefined ? {} : { [FILE]: text }));
}

function ok(env: Record<string, string>, file?: unknown): Config {
  const r = load(env, file);
  if (!r.ok) throw new Error(`expected a valid config, got: ${describeIssues(r.issues)}`);
  return r.config;
}

function issues(env: Record<string, string>, file?: unknown): ConfigIssue[] {
  const r = load(env, file);
  if (r.ok) throw new Error("expected config issues, got a valid config");
  return r.issues;
}

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

describe("loadConfig: the RPC URL", () => {
  it.each([
    "https://api.mainnet-beta.solana.com",
    "https://mainnet.helius-rpc.com/?api-key=0123456789",
    "https://solana-mainnet.g.alchemy.com/v2/KEY0123456789",
    "https://user:pass@rpc.example.com",
    "http://127.0.0.1:8899",
    "http://127.0.0.2:8899",
    "http://127.255.255.254",
    "http://127.1:8899",
    "http://localhost:8899/solana",
    "http://LOCALHOST:8899",
    "http://[::1]:8899",
  ])("accepts %s", (rpc) => {
    expect(ok({ ...SERVICE, SOLANA_RPC_URL: rpc }).rpcUrl).toBe(rpc);
  });

  it.each([
    "http://rpc.example.com",
    "http://128.0.0.1:8899",
    "http://127.0.0.1.nip.io:8899",
    "http://localhost.example.com",
    "http://[::2]:8899",
    "http://[::ffff:10.0.0.1]",
    "http://10.0.0.1",
    "http://0.0.0.0:8899",
  ])("refuses plain http to %s", (rpc) => {
    expect(issues({ ...SERVICE, SOLANA_RPC_URL: rpc })).toEqual([
      {
        key: "SOLANA_RPC_URL",
        message: "must use https (plain http is allowed only for a loopback host: 127.x.x.x, localhost, [::1])",
      },
    ]);
  });
});

describe("loadConfig: the PostgreSQL journal URL", () => {
  it.each([
    ["a loopback server without TLS", "postgres://pam@127.0.0.1:5432/journal"],
    ["postgresql:// with a password, loopback", "postgresql://pam:s3cret@localhost/journal"],
    ["a remote server with sslmode=verify-full", "postgres://pam@db.example.com:5432/journal?sslmode=verify-full"],
    ["a remote server with sslmode=require", "postgres://pam@db.example.com/journal?sslmode=require"],
  ])("accepts %s", (_what, url) => {
    expect(ok({ PAID_ACTIONS_JOURNAL_URL: url }).journalUrl).toBe(url);
  });

  it("reads journalUrl from the file; absent, the journal is SQLite in the home", () => {
    expect(ok({}, { journalUrl: "postgres://pam@127.0.0.1/j" }).journalUrl).toBe("postgres://pam@127.0.0.1/j");
    expect(ok({}).journalUrl).toBeUndefined();
  });

  it.each([
    ["not a URL", "journal.example.com", /is not a PostgreSQL URL/],
    ["another scheme", "mysql://db.example.com/journal", /must be a postgres:\/\//],
    ["no database", "postgres://pam@127.0.0.1:5432/", /names no database/],
    ["a remote host without TLS", "postgres://pam@db.example.com/journal", /must use TLS/],
    ["a remote host with sslmode=prefer", "postgres://pam@db.example.com/journal?sslmode=prefer", /must use TLS/],
  ])("refuses %s, naming PAID_ACTIONS_JOURNAL_URL", (_what, url, message) => {
    const r = load({ PAID_ACTIONS_JOURNAL_URL: url });
    expect(r.ok).toBe(false);
    const issue = !r.ok ? r.issues.find((i) => i.key === "PAID_ACTIONS_JOURNAL_URL") : undefined;
    expect(issue?.message).toMatch(message);
  });

  it("a broken configuration still names the journal: the URL when it is valid, `invalid` when it is not (no fallback to SQLite)", () => {
    expect(
      journalOf(load({ PAID_ACTIONS_JOURNAL_URL: "postgres://pam@127.0.0.1/j", PAID_ACTIONS_MAX_PER_DAY: "lots" })),
    ).toEqual({ url: "postgres://pam@127.0.0.1/j" });
    expect(
      journalOf(
        load({ PAID_ACTIONS_JOURNAL_URL: "postgres://pam@db.example.com/j", PAID_ACTIONS_MAX_PER_DAY: "lots" }),
      ),
    ).toEqual({ invalid: true });
    expect(journalOf(load({ PAID_ACTIONS_MAX_PER_DAY: "lots" }))).toEqual({});
    expect(journalOf(load({ PAID_ACTIONS_JOURNAL_URL: "postgres://pam@127.0.0.1/j" }))).toEqual({
      url: "postgres://pam@127.0.0.1/j",
    });
  });

  it("never echoes the URL's password in an issue", () => {
    const r = load({
      PAID_ACTIONS_JOURNAL_URL: "postgres://pam:hunter2-secret@db.example.com/journal",
      PAID_ACTIONS_MAX_PER_CALL: "hunter2-secret",
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && describeIssues(r.issues)).not.toContain("hunter2-secret");
  });
});

describe("loadConfig: issues never carry secrets", () => {
  const SECRET = "SECRETsecret0123456789";
  it.each<[string, Record<string, string>, unknown]>([
    [
      "the query of an http RPC URL",
      { ...SERVICE, SOLANA_RPC_URL: `http://rpc.example.com/?api-key=${SECRET}` },
      undefined,
    ],
    ["the path of an http RPC URL", { ...SERVICE, SOLANA_RPC_URL: `http://rpc.example.com/v2/${SECRET}` }, undefined],
    [
      "the password of an http RPC URL",
      { ...SERVICE, SOLANA_RPC_URL: `http://u:${SECRET}@rpc.example.com` },
      undefined,
    ],
    [
      "an RPC URL that does not parse",
      { ...SERVICE, SOLANA_RPC_URL: `https://rpc example.com/?api-key=${SECRET}` },
      undefined,
    ],
    ["an RPC URL with no scheme", { ...SERVICE, SOLANA_RPC_URL: `rpc.example.com/?api-key=${SECRET}` }, undefined],
    ["a file RPC URL of another scheme", SERVICE, { rpcUrl: `wss://rpc.example.com/?api-key=${SECRET}` }],
    [
      "the password of a base URL",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: `https://u:${SECRET}@actions.example.com/v1` },
      undefined,
    ],
    [
      "the query of a base URL",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: `https://actions.example.com/v1?key=${SECRET}` },
      undefined,
    ],
    [
      "a base URL that does not parse",
      { ...SERVICE, PAID_ACTIONS_BASE_URL: `https://x y/v1?key=${SECRET}` },
      undefined,
    ],
    [
      "an API key put in the wrong place",
      { ...SERVICE, PAID_ACTIONS_API_KEY: SECRET, PAID_ACTIONS_MAX_PER_CALL: SECRET, PAID_ACTIONS_NETWORK: SECRET },
      undefined,
    ],
    [
      "an API key in the file, wrongly typed elsewhere",
      {},
      {
        baseUrl: "https://a.example.com/v1",
        wallet: "/k",
        apiKey: SECRET,
        limits: { allowActions: SECRET, perAction: { "x.y": SECRET } },
      },
    ],
    ["an API key with a space", { ...SERVICE, PAID_ACTIONS_API_KEY: `${SECRET} x` }, undefined],
  ])("%s", (_name, env, file) => {
    const text = describeIssues(issues(env, file));
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(SECRET.slice(0, 8));
  });
});

describe("unknownPerActionKeys", () => {
  const CATALOG = ["servers.provision", "servers.delete", "domains.register", "domains.check", "companies.form"];
  it.each<[string, string[], string | undefined, ConfigIssue[]]>([
    ["every key known", ["servers.provision", "servers.*", "*.register", "*"], undefined, []],
    [
      "a misspelt name, with the nearest suggested",
      ["server.provision"],
      FILE,
      [
        {
          key: `${FILE}:limits.perAction.server.provision`,
          message: "names no action of the service's catalog, so it caps nothing; did you mean servers.provision?",
        },
      ],
    ],
    [
      "a transposition",
      ["domains.regsiter"],
      undefined,
      [
        {
          key: "limits.perAction.domains.regsiter",
          message: "names no action of the service's catalog, so it caps nothing; did you mean domains.register?",
        },
      ],
    ],
    [
      "a name far from all",
      ["boats.charter"],
      undefined,
      [
        {
          key: "limits.perAction.boats.charter",
          message: "names no action of the service's catalog, so it caps nothing",
        },
      ],
    ],
    [
      "a pattern matching nothing, with a near pattern suggested",
      ["server.*"],
      FILE,
      [
        {
          key: `${FILE}:limits.perAction.server.*`,
          message: "matches no action of the service's catalog, so it caps nothing; did you mean servers.*?",
        },
      ],
    ],
    [
      "a verb pattern matching nothing",
      ["*.provison"],
      undefined,
      [
        {
          key: "limits.perAction.*.provison",
          message: "matches no action of the service's catalog, so it caps nothing; did you mean *.provision?",
        },
      ],
    ],
    [
      "a pattern far from all",
      ["boats.*"],
      undefined,
      [{ key: "limits.perAction.boats.*", message: "matches no action of the service's catalog, so it caps nothing" }],
    ],
    [
      "several, in order",
      ["servers.provision", "x.y", "servers.delte"],
      undefined,
      [
        { key: "limits.perAction.x.y", message: "names no action of the service's catalog, so it caps nothing" },
        {
          key: "limits.perAction.servers.delte",
          message: "names no action of the service's catalog, so it caps nothing; did you mean servers.delete?",
        },
      ],
    ],
  ])("%s", (_name, keys, configFile, expected) => {
    expect(unknownPerActionKeys(keys, CATALOG, configFile)).toEqual(expected);
  });

  it("takes the limits' record as well as a list of keys", () => {
    expect(
      unknownPerActionKeys({ "servers.provision": 1n, "server.provision": 2n }, CATALOG).map((i) => i.key),
    ).toEqual(["limits.perAction.server.provision"]);
  });

  it("reports every key of an empty catalog, without suggestions", () => {
    expect(unknownPerActionKeys(["servers.*", "servers.provision"], [])).toEqual([
      { key: "limits.perAction.servers.*", message: "matches no action of the service's catalog, so it caps nothing" },
      {
        key: "limits.perAction.servers.provision",
        message: "names no action of the service's catalog, so it caps nothing",
      },
    ]);
  });
});

describe("actionAllowed", () => {
  it.each<[string[], string, boolean]>([
    [["*"], "servers.provision", true],
    [["servers.provision"], "servers.provision", true],
    [["servers.provision"], "servers.provisions", false],
    [["servers.provision"], "xservers.provision", false],
    [["servers.*"], "servers.provision", true],
    [["servers.*"], "servers.", true],
    [["servers.*"], "serversXprovision", false],
    [["servers*"], "servers.provision", true],
    [["*.provision"], "servers.provision", true],
    [["*.provision"], "servers.deprovision", false],
    [["*provision"], "servers.deprovision", true],
    [["s*s.p*n"], "servers.provision", true],
    [["domains.*", "servers.delete"], "servers.delete", true],
    [["domains.*", "servers.delete"], "servers.provision", false],
    [[], "servers.provision", false],
    [["servers.pro-vision"], "servers.pro-vision", true],
    [["servers.provisio?"], "servers.provision", false],
  ])("%j allows %s: %s", (patterns, action, allowed) => {
    expect(actionAllowed(patterns, action)).toBe(allowed);
  });
});
