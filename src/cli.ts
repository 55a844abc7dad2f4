#!/usr/bin/env node
/**
 * The composition root: the only module that reads argv and the environment, builds the
 * real adapters and wires them. Every command prints for humans on stderr; stdout is left
 * to machine output (JSON-RPC, for the MCP server).
 */
import { parseArgs } from "node:util";
import { homedir } from "node:os";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { DEFAULT_PORT, DEFAULT_PROVIDER_DELAY_MS, DEFAULT_QUOTE_TTL_MS, DEFAULT_RATE_LIMIT, SandboxBusyError, startSandbox } from "./sandbox/index.js";

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

class UsageError extends Error {}

const HELP: Record<string, string> = {
  main: `paid-actions-mcp ${VERSION} — buy real-world actions from an MCP agent, within limits a human set

Usage: paid-actions-mcp <command> [options]

Commands:
  sandbox     Run the reference service (v1 API + Solana JSON-RPC on an embedded ledger)

Run 'paid-actions-mcp <command> --help' for a command's options.
`,
  sandbox: `Usage: paid-actions-mcp sandbox [--port N] [--home DIR] [--api-key KEY]...

Runs the reference payment-gated action service on 127.0.0.1: the v1 API at
http://127.0.0.1:N/v1 and a Solana JSON-RPC endpoint over its ledger at
http://127.0.0.1:N/solana. Writes DIR/sandbox.json with {baseUrl, apiKey, rpcUrl,
network, asset, walletPath}. A restart on the same DIR continues where it stopped.

Options:
  --port N                 Port on 127.0.0.1 (default ${DEFAULT_PORT}; 0 picks a free one)
  --home DIR               Where state lives (default $PAID_ACTIONS_HOME/sandbox or ~/.paid-actions-mcp/sandbox)
  --api-key KEY            Accept this bearer key; repeat for more tenants. Without it, one
                           key is generated on first start and kept in DIR
  --provider-delay-ms MS   How long a simulated provider takes (default ${DEFAULT_PROVIDER_DELAY_MS})
  --quote-ttl-seconds S    Quote lifetime (default ${DEFAULT_QUOTE_TTL_MS / 1000})
  --rate-limit N           Requests per second per API key, burst 4x (default ${DEFAULT_RATE_LIMIT.perSecond})
  -h, --help               This help

Sandbox-only request headers: X-Sandbox-Outcome: fail (the provider fails and the payment
is refunded), X-Sandbox-Delay-Ms: N (this execution's provider delay).
Stop with Ctrl-C or SIGTERM.
`,
};

function defaultHome(env: NodeJS.ProcessEnv): string {
  return env.PAID_ACTIONS_HOME || join(homedir(), ".paid-actions-mcp");
}

function intOption(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

async function sandboxCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string" },
      home: { type: "string" },
      "api-key": { type: "string", multiple: true },
      "provider-delay-ms": { type: "string" },
      "quote-ttl-seconds": { type: "string" },
      "rate-limit": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stderr.write(HELP.sandbox!);
    return 0;
  }
  const rate = intOption(values["rate-limit"], "rate-limit", 1, 100_000);
  const quoteTtl = intOption(values["quote-ttl-seconds"], "quote-ttl-seconds", 1, 86_400);
  const sandbox = await startSandbox({
    home: values.home ?? join(defaultHome(env), "sandbox"),
    port: intOption(values.port, "port", 0, 65_535) ?? DEFAULT_PORT,
    apiKeys: values["api-key"],
    providerDelayMs: intOption(values["provider-delay-ms"], "provider-delay-ms", 0, 3_600_000),
    quoteTtlMs: quoteTtl === undefined ? undefined : quoteTtl * 1000,
    rateLimit: rate === undefined ? undefined : { perSecond: rate, burst: rate * 4 },
  });
  process.stderr.write(
    [
      `paid-actions-mcp sandbox ${VERSION} is running (Ctrl-C to stop)`,
      `  API:         ${sandbox.baseUrl}`,
      `  API key:     ${sandbox.apiKey}${sandbox.apiKeys.length > 1 ? ` (+${sandbox.apiKeys.length - 1} more)` : ""}`,
      `  Solana RPC:  ${sandbox.rpcUrl}`,
      `  Network:     ${sandbox.network} (devnet, emulated)`,
      `  USDC mint:   ${sandbox.asset}`,
      `  Wallet:      ${sandbox.walletPath}`,
      `  State:       ${sandbox.home} (sandbox.json has the above)`,
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

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "sandbox":
        return await sandboxCommand(rest, env);
      case "--version":
      case "-v":
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case "--help":
      case "-h":
      case "help":
      case undefined:
        process.stderr.write(HELP.main!);
        return 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\nRun 'paid-actions-mcp ${command ?? ""} --help' for usage.\n`);
      return 2;
    }
    if (e instanceof SandboxBusyError) {
      process.stderr.write(`paid-actions-mcp: ${e.message}\n`);
      return 1;
    }
    if ((e as NodeJS.ErrnoException).code === "EADDRINUSE") {
      process.stderr.write(`paid-actions-mcp: port already in use: ${(e as Error).message}; pick another with --port\n`);
      return 1;
    }
    process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\n`);
    return 1;
  }
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\n`);
    process.exitCode = 1;
  },
);
