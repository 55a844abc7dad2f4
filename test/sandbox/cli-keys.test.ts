/**
 * The built CLI's `sandbox` command as a separate process: API keys from --api-key-file
 * and PAID_ACTIONS_SANDBOX_API_KEYS (kept out of the process list) authenticate alongside
 * --api-key; a key file others can read is refused; --allow-private-webhooks lifts the
 * webhook guard.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectApiKeys } from "../../src/commands/sandbox.js";
import { apiClient } from "../helpers/sandbox.js";
import { ensureBuilt, killAllStarted, startCliSandbox } from "../helpers/process.js";

const FILE_KEY_1 = "sk_from_file_0000000001";
const FILE_KEY_2 = "sk_from_file_0000000002";
const ENV_KEY_1 = "sk_from_env_00000000001";
const ENV_KEY_2 = "sk_from_env_00000000002";
const FLAG_KEY = "sk_from_flag_0000000001";

describe("sandbox API keys from a file and the environment, through the built CLI", () => {
  const dir = mkdtempSync(join(tmpdir(), "pam-cli-keys-"));
  const keyFile = join(dir, "keys.txt");
  beforeAll(() => {
    ensureBuilt();
    writeFileSync(keyFile, `# sandbox keys\n\n${FILE_KEY_1}\n   ${FILE_KEY_2}   \n# ${"not-a-key"}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
  }, 120_000);
  afterAll(() => {
    killAllStarted();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keys from --api-key-file, PAID_ACTIONS_SANDBOX_API_KEYS and --api-key all authenticate; others do not; none is echoed", async () => {
    const home = join(dir, "home-ok");
    const sb = await startCliSandbox(home, ["--api-key", FLAG_KEY, "--api-key-file", keyFile], {
      env: { PAID_ACTIONS_SANDBOX_API_KEYS: ` ${ENV_KEY_1}, ,${ENV_KEY_2} ` },
    });
    try {
      for (const key of [FLAG_KEY, FILE_KEY_1, FILE_KEY_2, ENV_KEY_1, ENV_KEY_2]) {
        const res = await apiClient(sb.info.baseUrl, key)("GET", "/actions");
        expect(res.status, key).toBe(200);
      }
      // Each key is its own tenant.
      const quote = await apiClient(sb.info.baseUrl, FILE_KEY_1)("POST", "/quotes", {
        body: {
          action: "servers.provision",
          input: { region: "eu-west-1", plan: "small", durationHours: 1 },
          budget: { amount: "5", currency: "USDC" },
        },
      });
      expect(quote.status, quote.text).toBe(201);
      expect((await apiClient(sb.info.baseUrl, ENV_KEY_1)("GET", `/quotes/${quote.body.quoteId}`)).status).toBe(404);
      expect((await apiClient(sb.info.baseUrl, "not-a-key")("GET", "/actions")).status).toBe(401);
      expect((await apiClient(sb.info.baseUrl, "sk_unknown_000000000000")("GET", "/actions")).status).toBe(401);
      expect(sb.info.apiKey).toBe(FLAG_KEY);
      for (const key of [FILE_KEY_1, FILE_KEY_2, ENV_KEY_1, ENV_KEY_2, FLAG_KEY])
        expect(sb.stderr()).not.toContain(key);
      expect(sb.stderr()).toContain("(+4 more)");
    } finally {
      expect(await sb.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    }
  });

  it("the environment alone is enough: its keys authenticate and no key is generated", async () => {
    const sb = await startCliSandbox(join(dir, "home-env"), [], { env: { PAID_ACTIONS_SANDBOX_API_KEYS: ENV_KEY_1 } });
    try {
      expect(sb.info.apiKey).toBe(ENV_KEY_1);
      expect((await apiClient(sb.info.baseUrl, ENV_KEY_1)("GET", "/actions")).status).toBe(200);
    } finally {
      await sb.stop("SIGTERM");
    }
  });

  it("a key file group or others can read is refused, saying how to fix it, without printing a key", async () => {
    const loose = join(dir, "loose.txt");
    writeFileSync(loose, `${FILE_KEY_1}\n`);
    chmodSync(loose, 0o644);
    const started = startCliSandbox(join(dir, "home-loose"), ["--api-key-file", loose], { timeoutMs: 10_000 });
    const error = await started.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/accessible by group or others \(mode 644\); run: chmod 600/);
    expect(error?.message).not.toContain(FILE_KEY_1);
  });

  it("--allow-private-webhooks lets a loopback receiver register; without it, 400", async () => {
    for (const allow of [true, false]) {
      const sb = await startCliSandbox(join(dir, `home-wh-${allow}`), [
        "--api-key",
        FLAG_KEY,
        ...(allow ? ["--allow-private-webhooks"] : []),
      ]);
      try {
        const res = await apiClient(sb.info.baseUrl, FLAG_KEY)("POST", "/webhooks", {
          body: { url: "http://127.0.0.1:9/hook", events: ["execution.updated"] },
        });
        expect(res.status, res.text).toBe(allow ? 201 : 400);
        if (!allow) expect(res.body.error.message).toContain("loopback");
      } finally {
        await sb.stop("SIGTERM");
      }
    }
  });
});

describe("collectApiKeys", () => {
  const dir = mkdtempSync(join(tmpdir(), "pam-keys-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string, mode = 0o600) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    return path;
  };

  it("combines the sources in order, without duplicates", () => {
    const path = file("a.txt", `${FILE_KEY_1}\r\n#c\n${FLAG_KEY}\n`);
    expect(
      collectApiKeys({ apiKeys: [FLAG_KEY], apiKeyFiles: [path], envApiKeys: `${ENV_KEY_1},${FILE_KEY_1}` }),
    ).toEqual([FLAG_KEY, FILE_KEY_1, ENV_KEY_1]);
    expect(collectApiKeys({})).toEqual([]);
  });

  it("refuses a missing file, an empty one, a bad line (by number, not by content) and a bad env key", () => {
    expect(() => collectApiKeys({ apiKeyFiles: [join(dir, "missing.txt")] })).toThrow(/does not exist/);
    expect(() => collectApiKeys({ apiKeyFiles: [file("empty.txt", "# only comments\n\n")] })).toThrow(
      /holds no API key/,
    );
    const bad = () => collectApiKeys({ apiKeyFiles: [file("bad.txt", `${FILE_KEY_1}\nshort\n`)] });
    expect(bad).toThrow(/line 2/);
    expect(bad).not.toThrow(/short/);
    expect(() => collectApiKeys({ envApiKeys: "has space in it" })).toThrow(/PAID_ACTIONS_SANDBOX_API_KEYS/);
    expect(() => collectApiKeys({ apiKeyFiles: [file("loose.txt", `${FILE_KEY_1}\n`, 0o640)] })).toThrow(/chmod 600/);
  });
});
