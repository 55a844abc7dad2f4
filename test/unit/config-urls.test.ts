/**
 * The URLs of the configuration (src/engine/config/config.ts): which RPC URLs and PostgreSQL
 * journal URLs are accepted (plain http or no TLS only on loopback), and that an issue never
 * echoes a secret, which most often rides in a URL.
 */
import { describe, expect, it } from "vitest";
import { describeIssues, journalOf } from "../../src/engine/config/config.js";
import { issues, load, ok, SERVICE } from "./config.fixtures.js";

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
