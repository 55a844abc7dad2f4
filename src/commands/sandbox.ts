/**
 * `paid-actions-mcp sandbox`: run the reference service until Ctrl-C or SIGTERM. API keys
 * come from `--api-key`, from `--api-key-file` and from PAID_ACTIONS_SANDBOX_API_KEYS (the
 * last two keep keys out of the process list); all sources combine.
 */
import { readFileSync, statSync } from "node:fs";
import { formatDecimal } from "../domain/money.js";
import { DEFAULT_PORT, DEMO_ALLOWANCE, startSandbox } from "../sandbox/index.js";

export interface SandboxCommandOptions {
  home: string;
  port?: number;
  apiKeys?: string[];
  /** Files of API keys: one per line; blank lines and `#` comments ignored. */
  apiKeyFiles?: string[];
  /** The value of PAID_ACTIONS_SANDBOX_API_KEYS: comma-separated keys. */
  envApiKeys?: string;
  providerDelayMs?: number;
  quoteTtlMs?: number;
  rateLimit?: { perSecond: number; burst: number };
  allowPrivateWebhooks?: boolean;
}

/** A problem with where the API keys come from; the message never contains a key. */
export class ApiKeySourceError extends Error {
  override name = "ApiKeySourceError";
}

const VALID_KEY = /^[\x21-\x7e]{8,512}$/;

/**
 * Reads an API key file. Refused when group or others have any access to it (like the
 * wallet: `chmod 600`), when a line is not a valid key, or when it holds no key at all.
 */
export function readApiKeyFile(path: string): string[] {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new ApiKeySourceError(`API key file ${path} does not exist`);
  }
  if (!stat.isFile()) throw new ApiKeySourceError(`API key file ${path} is not a file`);
  if (process.platform !== "win32" && (stat.mode & 0o077) !== 0) {
    throw new ApiKeySourceError(
      `API key file ${path} is accessible by group or others (mode ${(stat.mode & 0o777).toString(8)}); run: chmod 600 ${path}`,
    );
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new ApiKeySourceError(`API key file ${path} cannot be read`);
  }
  const keys: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    if (!VALID_KEY.test(line)) {
      throw new ApiKeySourceError(
        `API key file ${path}, line ${i + 1}: an API key is 8-512 printable ASCII characters without spaces`,
      );
    }
    keys.push(line);
  });
  if (keys.length === 0) throw new ApiKeySourceError(`API key file ${path} holds no API key`);
  return keys;
}

/** Every key from the flags, the files and the environment variable, first occurrence first. */
export function collectApiKeys(o: Pick<SandboxCommandOptions, "apiKeys" | "apiKeyFiles" | "envApiKeys">): string[] {
  const fromEnv = (o.envApiKeys ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
  for (const k of fromEnv) {
    if (!VALID_KEY.test(k)) {
      throw new ApiKeySourceError(
        "PAID_ACTIONS_SANDBOX_API_KEYS: an API key is 8-512 printable ASCII characters without spaces (keys are separated by commas)",
      );
    }
  }
  const all = [...(o.apiKeys ?? []), ...(o.apiKeyFiles ?? []).flatMap(readApiKeyFile), ...fromEnv];
  return [...new Set(all)];
}

export async function sandboxCommand(o: SandboxCommandOptions, version: string): Promise<number> {
  const apiKeys = collectApiKeys(o);
  const sandbox = await startSandbox({
    home: o.home,
    port: o.port ?? DEFAULT_PORT,
    apiKeys,
    providerDelayMs: o.providerDelayMs,
    quoteTtlMs: o.quoteTtlMs,
    rateLimit: o.rateLimit,
    allowPrivateWebhooks: o.allowPrivateWebhooks,
  });
  process.stderr.write(
    [
      `paid-actions-mcp sandbox ${version} is running (Ctrl-C to stop)`,
      `  API:         ${sandbox.baseUrl}`,
      // A key the user supplied is not echoed into logs (it is in sandbox.json, mode 0600).
      `  API key:     ${apiKeys.length > 0 ? `${sandbox.apiKey.slice(0, 4)}… (yours)` : sandbox.apiKey}${sandbox.apiKeys.length > 1 ? ` (+${sandbox.apiKeys.length - 1} more)` : ""}`,
      `  Solana RPC:  ${sandbox.rpcUrl}`,
      `  Network:     ${sandbox.network} (devnet, emulated)`,
      `  USDC mint:   ${sandbox.asset}`,
      `  Wallet:      ${sandbox.walletPath} (the demo wallet, 1000 USDC at genesis: the owner)`,
      ...(sandbox.agentKeyPath
        ? [
            `  Agent key:   ${sandbox.agentKeyPath} (${sandbox.agentAddress}: spends the owner's USDC as its delegate, ${formatDecimal(DEMO_ALLOWANCE)} USDC granted on first start)`,
          ]
        : []),
      `  State:       ${sandbox.home} (sandbox.json has the above)`,
      ...(o.allowPrivateWebhooks
        ? ["  Webhooks:    private and loopback receivers allowed (--allow-private-webhooks)"]
        : []),
      "",
    ].join("\n"),
  );
  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      process.stderr.write(`\n${signal}: stopping the sandbox…\n`);
      void sandbox.close().then(done);
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  process.stderr.write("sandbox stopped; state is saved\n");
  return 0;
}
