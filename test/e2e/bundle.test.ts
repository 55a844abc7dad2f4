/**
 * The Claude Desktop extension: manifest.json passes `mcpb validate` and agrees with
 * package.json and the configuration the README documents; the bundle script builds a .mcpb
 * that unpacks to the server with its production dependencies; and the unpacked server,
 * launched the way Claude Desktop launches it — server.mcp_config's command, args and env,
 * substituted by @anthropic-ai/mcpb's own getMcpConfigForManifest (the code Claude Desktop
 * uses) — lists the manifest's tools and pays in sandbox mode within the limits given as
 * user_config; every variable server.json documents has a setting that reaches it; and, set
 * for a service given by URL (a reference service started apart, a stock x402 seller on an
 * allowed loopback origin), the extension pays that seller's resource with paid_fetch.
 *
 * The script runs as `node .ci/bundle.mjs` rather than `npm run bundle`, which would first
 * rebuild dist/ under the feet of the other test files running the built CLI; dist/ is
 * brought up to date the way those files do it.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import { getMcpConfigForManifest, type McpbManifestAny } from "@anthropic-ai/mcpb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  explain,
  PROJECT_ROOT,
  removeDirs,
  run,
  SMALL_SERVER,
  structured,
  tempDir,
  userEnv,
} from "../helpers/install.js";
import { ensureBuilt, startCliSandbox } from "../helpers/process.js";
import { startSeller, stopAllSellers } from "../helpers/sellers.js";

const MCPB_CLI = join(PROJECT_ROOT, "node_modules", "@anthropic-ai", "mcpb", "dist", "cli", "cli.js");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"));
const pkg = readJson(join(PROJECT_ROOT, "package.json"));
const manifest = readJson(join(PROJECT_ROOT, "manifest.json"));

interface ServerVariable {
  name: string;
  format?: string;
  isSecret?: boolean;
}
/** The variables the registry entry (server.json) documents: everything a person may set. */
const serverVariables = (): ServerVariable[] =>
  readJson(join(PROJECT_ROOT, "server.json")).packages[0].environmentVariables as ServerVariable[];
/** The user_config option the manifest maps `variable` from, if any. */
const userConfigOf = (variable: string, m: { server: { mcp_config: { env?: Record<string, string> } } } = manifest) =>
  /^\$\{user_config\.([a-z_]+)\}$/.exec(m.server.mcp_config.env?.[variable] ?? "")?.[1];

afterAll(() => removeDirs());

describe("manifest.json", () => {
  it("passes `mcpb validate`", async () => {
    const r = await run(process.execPath, [MCPB_CLI, "validate", join(PROJECT_ROOT, "manifest.json")], {
      cwd: PROJECT_ROOT,
      env: userEnv(),
      timeoutMs: 30_000,
    });
    expect(r.code, explain("mcpb validate", r)).toBe(0);
    expect(r.stdout).toContain("Manifest schema validation passes!");
  });

  it("agrees with package.json: name, version, the Node versions it runs on, the entry point", () => {
    expect(manifest.name).toBe(pkg.name);
    expect(manifest.version).toBe(pkg.version);
    expect(manifest.compatibility.runtimes.node).toBe(pkg.engines.node);
    expect(manifest.server.entry_point).toBe(pkg.bin["paid-actions-mcp"]);
    expect(manifest.server.mcp_config).toMatchObject({
      command: "node",
      args: [`\${__dirname}/${pkg.bin["paid-actions-mcp"]}`],
    });
  });

  it("maps each user_config to a configuration variable the README documents, the API key marked sensitive", () => {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    const env = manifest.server.mcp_config.env as Record<string, string>;
    const used = new Set<string>();
    for (const [name, value] of Object.entries(env)) {
      expect(readme, name).toContain(`| \`${name}\` |`); // a row of the Configuration table
      const m = /^\$\{user_config\.([a-z_]+)\}$/.exec(value);
      expect(m, `${name}: ${value}`).not.toBeNull();
      expect(manifest.user_config).toHaveProperty(m![1]!);
      used.add(m![1]!);
    }
    expect([...used].sort()).toEqual(Object.keys(manifest.user_config).sort());
    expect(env).toMatchObject({
      PAID_ACTIONS_BASE_URL: "${user_config.base_url}",
      PAID_ACTIONS_API_KEY: "${user_config.api_key}",
      PAID_ACTIONS_WALLET: "${user_config.wallet}",
    });
    expect(manifest.user_config.api_key.sensitive).toBe(true);
    // Sensitive exactly where server.json marks the variable secret (a key, a password, an RPC URL that may carry one).
    const secret = new Map(serverVariables().map((v) => [`\${user_config.${userConfigOf(v.name)}}`, v.isSecret]));
    const optionOf = new Map(
      Object.entries(env).map(([name, value]) => [/^\$\{user_config\.([a-z_]+)\}$/.exec(value)![1], name]),
    );
    for (const [key, option] of Object.entries<{ sensitive?: boolean; default?: unknown; required?: boolean }>(
      manifest.user_config,
    )) {
      expect(option.sensitive === true, key).toBe(secret.get(`\${user_config.${key}}`) === true);
      expect(optionOf.has(key), key).toBe(true);
      // Claude Desktop substitutes only values it has: an optional setting without a default
      // would reach the server as the literal "${user_config.…}".
      expect(typeof option.default, key).toBe("string");
    }
  });
});

describe("the .mcpb", () => {
  let file: string;
  let unpacked: string;
  let bundled: McpbManifestAny;

  beforeAll(async () => {
    ensureBuilt();
    const out = tempDir("pam-bundle-");
    const r = await run(process.execPath, [join(PROJECT_ROOT, ".ci", "bundle.mjs"), "--out", out], {
      cwd: PROJECT_ROOT,
      env: userEnv(),
      timeoutMs: 240_000,
    });
    if (r.code !== 0) throw new Error(explain("node .ci/bundle.mjs", r));
    file = r.stdout.trim().split("\n").at(-1)!;
    unpacked = tempDir("pam-unpacked-");
    const u = await run(process.execPath, [MCPB_CLI, "unpack", file, unpacked], {
      cwd: PROJECT_ROOT,
      env: userEnv(),
      timeoutMs: 60_000,
    });
    if (u.code !== 0) throw new Error(explain("mcpb unpack", u));
    bundled = readJson(join(unpacked, "manifest.json"));
  }, 300_000);

  it("is named for the version, and unpacks to the server, its production dependencies and the manifest for this platform and Node", async () => {
    expect(file).toBe(join(file.slice(0, file.lastIndexOf(sep)), `paid-actions-mcp-${pkg.version}.mcpb`));
    for (const f of [
      "manifest.json",
      "package.json",
      "README.md",
      "dist/cli.js",
      "node_modules/better-sqlite3/build/Release/better_sqlite3.node",
      "node_modules/@modelcontextprotocol/server/package.json",
    ]) {
      expect(existsSync(join(unpacked, f)), f).toBe(true);
    }
    expect(existsSync(join(unpacked, "dist", "console", "assets"))).toBe(true);
    for (const absent of [
      "src",
      "test",
      "node_modules/typescript",
      "node_modules/vitest",
      "node_modules/@anthropic-ai",
      "node_modules/better-sqlite3/deps",
    ]) {
      expect(existsSync(join(unpacked, absent)), absent).toBe(false);
    }
    expect(readdirSync(join(unpacked, "dist"), { recursive: true }).filter((f) => String(f).endsWith(".map"))).toEqual(
      [],
    );
    expect({ ...bundled, compatibility: undefined }).toEqual({ ...manifest, compatibility: undefined });
    const major = process.versions.node.split(".")[0];
    expect(bundled.compatibility).toEqual({
      platforms: [process.platform],
      runtimes: { node: major === "20" ? ">=20.18.1 <21" : `>=${major} <${Number(major) + 1}` },
    });
    const v = await run(process.execPath, [MCPB_CLI, "validate", join(unpacked, "manifest.json")], {
      cwd: PROJECT_ROOT,
      env: userEnv(),
      timeoutMs: 30_000,
    });
    expect(v.code, explain("mcpb validate (unpacked)", v)).toBe(0);
  });

  it("maps every variable of server.json to a user_config option, of a type that fits, and nothing else", () => {
    const variables = serverVariables();
    for (const v of variables) {
      const option = userConfigOf(v.name, bundled as never);
      expect(option, `${v.name} has no way in through the extension's settings`).toBeDefined();
      const type = (bundled.user_config as Record<string, { type: string }>)[option!]!.type;
      expect(type, v.name).toBe(
        v.format === "filepath" ? (v.name === "PAID_ACTIONS_HOME" ? "directory" : "file") : "string",
      );
    }
    expect(Object.keys(bundled.server.mcp_config.env ?? {}).sort()).toEqual(variables.map((v) => v.name).sort());
  });

  it("launched as Claude Desktop launches it, lists the manifest's tools and pays in sandbox mode within the user_config limits", async () => {
    // An API key field the person cleared reaches the server as "", which counts as unset.
    const userConfig = { max_per_call: "3", api_key: "" };
    const config = await getMcpConfigForManifest({
      manifest: bundled,
      extensionPath: unpacked,
      systemDirs: {},
      userConfig,
      pathSeparator: sep,
    });
    expect(config).toBeDefined();
    const { command, args = [], env = {} } = config!;
    expect(command).toBe("node");
    expect(args).toEqual([join(unpacked, "dist", "cli.js")]);
    expect(JSON.stringify(env)).not.toContain("${");
    expect(env).toMatchObject({
      PAID_ACTIONS_BASE_URL: "",
      PAID_ACTIONS_API_KEY: "",
      PAID_ACTIONS_MAX_PER_CALL: "3",
      PAID_ACTIONS_MAX_PER_DAY: "25",
    });

    // The host's own environment, plus the bundle's env; the home is the test's, not the user's.
    const s = await connect(command, args, {
      cwd: tempDir("pam-desktop-cwd-"),
      env: userEnv({ ...env, PAID_ACTIONS_HOME: tempDir("pam-desktop-home-") }),
    });
    try {
      const { tools } = await s.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(
        (manifest.tools as Array<{ name: string }>).map((t) => t.name).sort(),
      );
      const paid = await s.client.callTool(
        { name: "servers_provision", arguments: { ...SMALL_SERVER } },
        { timeout: 90_000 },
      );
      const r = structured(paid);
      expect(paid.isError, JSON.stringify(r).slice(0, 600)).toBeFalsy();
      expect(r.executionId).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(r.payment.amount).toBe("0.288");
      expect(r.payment.transaction.length).toBeGreaterThan(40);
      const spending = structured(await s.client.callTool({ name: "get_spending", arguments: {} }));
      expect(spending.limits.maxPerCall).toMatch(/^3(\.0+)?$/);
      expect(s.stderr()).toMatch(/sandbox mode/);
    } finally {
      await s.close();
    }
  }, 180_000);

  it("configured for a real service through its settings, pays a stock seller's resource on an allowed origin", async () => {
    // The service: a reference service started apart, reached by URL like any other (not the
    // embedded default); the seller: stock @x402/express, settling through its facilitator.
    const service = await startCliSandbox(tempDir("pam-desktop-service-"));
    try {
      const info = service.info;
      const unpaid = await fetch(`${service.root}/x402/weather?city=Oslo`);
      const payTo = JSON.parse(Buffer.from(unpaid.headers.get("payment-required")!, "base64").toString("utf8"))
        .accepts[0].payTo as string; // an account whose USDC account exists
      const seller = await startSeller({
        framework: "express",
        facilitatorUrl: info.facilitatorUrl!,
        network: info.network,
        payTo,
        bazaar: true,
      });
      const userConfig = {
        base_url: info.baseUrl,
        api_key: info.apiKey,
        wallet: info.agentKeyPath!,
        owner: info.owner!,
        rpc_url: info.rpcUrl,
        network: "solana-devnet",
        allow_origins: seller.url,
        facilitator_url: info.facilitatorUrl!,
      };
      const config = await getMcpConfigForManifest({
        manifest: bundled,
        extensionPath: unpacked,
        systemDirs: {},
        userConfig,
        pathSeparator: sep,
      });
      const { command, args = [], env = {} } = config!;
      expect(env).toMatchObject({
        PAID_ACTIONS_BASE_URL: info.baseUrl,
        SOLANA_RPC_URL: info.rpcUrl,
        PAID_ACTIONS_NETWORK: "solana-devnet",
        PAID_ACTIONS_ALLOW_ORIGINS: seller.url,
        PAID_ACTIONS_FACILITATOR_URL: info.facilitatorUrl,
      });
      const s = await connect(command, args, {
        cwd: tempDir("pam-desktop-cwd-"),
        env: userEnv({ ...env, PAID_ACTIONS_HOME: tempDir("pam-desktop-home-") }),
      });
      try {
        const paid = await s.client.callTool(
          { name: "paid_fetch", arguments: { url: `${seller.url}/paid/data` } },
          { timeout: 90_000 },
        );
        const r = structured(paid);
        expect(paid.isError, JSON.stringify(r).slice(0, 600)).toBeFalsy();
        expect(r).toMatchObject({ status: 200, body: { data: { route: "GET /paid/data", answer: 42 } } });
        expect(r.payment).toMatchObject({ amount: "0.01", payTo });
        expect(r.sandbox).toBeFalsy();
        // The facilitator configured is the one searched; what it lists is judged by the allowed origins.
        const found = structured(await s.client.callTool({ name: "search_paid_resources", arguments: {} }));
        expect(found.resources).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ url: `${seller.url}/paid/data`, originAllowed: true }),
            expect.objectContaining({ url: `${service.root}/x402/weather`, originAllowed: false }),
          ]),
        );
        // An origin the person did not allow (the service's own resources): refused, nothing paid.
        const refused = await s.client.callTool({
          name: "paid_fetch",
          arguments: { url: `${service.root}/x402/weather?city=Oslo` },
        });
        expect(refused.isError).toBe(true);
        expect(structured(refused).error).toMatchObject({ code: "origin_not_allowed" });
        expect(s.stderr()).not.toMatch(/sandbox mode/);
      } finally {
        await s.close();
        await stopAllSellers();
      }
    } finally {
      await service.stop("SIGTERM");
    }
  }, 180_000);
});
