#!/usr/bin/env node
/**
 * The composition root: the only module that reads argv and the environment. It parses
 * the command line and hands each command what it needs. stdout is reserved for the
 * command's own output (JSON-RPC only, for `serve`); messages for humans go to stderr.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { homedir } from "node:os";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { helpTexts } from "./commands/help.js";
import { parseDecimal, U64_MAX } from "./domain/money.js";

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
const HELP = helpTexts(VERSION);

class UsageError extends Error {}

/** The commands that open the journal or run the sandbox (SQLite, unless the journal is PostgreSQL). */
const NEEDS_SQLITE = new Set(["serve", "demo", "executions", "transcript", "approve", "freeze", "unfreeze", "audit", "console", "sandbox", "allowance"]);

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

function parse<O extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: O, positionals = 0) {
  const parsed = parseArgs({ args, options: { ...options, help: { type: "boolean" as const, short: "h" } }, strict: true, allowPositionals: positionals > 0 });
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  return parsed;
}

/** What `allowance` is asked to do, from its positionals; a usage error for anything else. */
function allowanceAction(positionals: string[], values: { json?: boolean; "owner-keypair"?: string; unsigned?: boolean }) {
  const [sub, arg] = positionals;
  const signing = values["owner-keypair"] !== undefined || values.unsigned === true;
  if (sub === undefined) {
    if (signing) throw new UsageError("--owner-keypair and --unsigned are for grant and revoke");
    return { kind: "show" as const };
  }
  if (values.json) throw new UsageError("--json is for showing the allowance");
  if (sub === "submit") {
    if (arg === undefined) throw new UsageError("submit needs the signed transaction (base64)");
    if (signing) throw new UsageError("submit sends a transaction the owner's wallet already signed: no --owner-keypair or --unsigned");
    return { kind: "submit" as const, transaction: arg };
  }
  if (sub !== "grant" && sub !== "revoke") throw new UsageError(`unknown allowance subcommand ${JSON.stringify(sub.slice(0, 40))}: use grant, revoke or submit`);
  if ((values["owner-keypair"] === undefined) === (values.unsigned !== true)) throw new UsageError(`${sub} needs exactly one of --owner-keypair PATH and --unsigned`);
  if (sub === "revoke") {
    if (arg !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(arg.slice(0, 40))}`);
    return { kind: "change" as const, change: { kind: "revoke" as const } };
  }
  const amount = arg === undefined ? undefined : parseDecimal(arg.trim());
  if (amount === undefined || amount > U64_MAX) throw new UsageError(`grant needs an amount of USDC such as 25 or 0.5 (at most 6 decimals), not ${JSON.stringify((arg ?? "").slice(0, 40))}`);
  return { kind: "change" as const, change: { kind: "grant" as const, amount } };
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [first, ...rest] = argv;
  const command = first === undefined || first.startsWith("-") ? (first === "--help" || first === "-h" ? "help" : first === "--version" || first === "-v" ? "version" : "serve") : first;
  const args = command === "serve" && first !== "serve" ? argv : rest;
  const help = (name: string) => {
    process.stderr.write(HELP[name]!);
    return 0;
  };
  // The native SQLite module, checked at start: a host whose Node does not match it would
  // otherwise only see the server disconnect. doctor reports it among its checks instead.
  const sqliteProblem = async () => (await import("./app/native.js")).sqliteProblem(command, env);
  if (NEEDS_SQLITE.has(command) && command !== "serve" && !args.includes("--help") && !args.includes("-h")) {
    const problem = await sqliteProblem();
    if (problem) {
      process.stderr.write(`${problem}\n`);
      return 1;
    }
  }
  try {
    switch (command) {
      case "help":
        return help("main");
      case "version":
        process.stdout.write(`${VERSION}\n`);
        return 0;
      case "serve": {
        const { values } = parse(args, {});
        if (values.help) return help("serve");
        const { serve } = await import("./commands/serve.js");
        // A turn after the server listens, so the handshake never waits for the module's load
        // (serve answers at once and opens the journal later); one line and exit 1 if it fails.
        setImmediate(() =>
          void sqliteProblem().then((problem) => {
            if (problem) process.stderr.write(`${problem}\n`, () => process.exit(1));
          }),
        );
        return await serve(env, VERSION);
      }
      case "demo": {
        const { values } = parse(args, { home: { type: "string" } });
        if (values.help) return help("demo");
        const { demo } = await import("./commands/demo.js");
        return await demo(env, { home: values.home });
      }
      case "executions": {
        const { values } = parse(args, { status: { type: "string" }, action: { type: "string" }, limit: { type: "string" }, attention: { type: "boolean" }, json: { type: "boolean" } });
        if (values.help) return help("executions");
        const statuses = ["pending", "processing", "completed", "failed", "refunded"];
        if (values.status !== undefined && !statuses.includes(values.status)) throw new UsageError(`--status must be one of ${statuses.join(", ")}`);
        const { executionsCommand } = await import("./commands/journal-commands.js");
        return await executionsCommand(env, { status: values.status, action: values.action, limit: intOption(values.limit, "limit", 1, 100), attention: values.attention, json: values.json });
      }
      case "transcript": {
        const { values, positionals } = parse(args, { limit: { type: "string" }, json: { type: "boolean" } }, 1);
        if (values.help) return help("transcript");
        const { transcriptCommand } = await import("./commands/journal-commands.js");
        return await transcriptCommand(env, positionals[0], { limit: intOption(values.limit, "limit", 1, 1000), json: values.json });
      }
      case "approve": {
        const { values, positionals } = parse(args, { json: { type: "boolean" } }, 1);
        if (values.help) return help("approve");
        if (values.json && positionals[0] !== undefined) throw new UsageError("--json is for the list; deciding on an approval needs a person at a terminal");
        const { approveCommand } = await import("./commands/approve.js");
        return await approveCommand(env, positionals[0], { json: values.json });
      }
      case "set-pin": {
        const { values } = parse(args, { clear: { type: "boolean" } });
        if (values.help) return help("set-pin");
        const { setPinCommand } = await import("./commands/set-pin.js");
        return await setPinCommand(env, { clear: values.clear });
      }
      case "freeze": {
        const { values } = parse(args, { reason: { type: "string" } });
        if (values.help) return help("freeze");
        const { freezeCommand, reasonProblem } = await import("./commands/freeze.js");
        const problem = values.reason === undefined ? undefined : reasonProblem(values.reason);
        if (problem) throw new UsageError(problem);
        return await freezeCommand(env, { reason: values.reason });
      }
      case "unfreeze": {
        const { values } = parse(args, {});
        if (values.help) return help("unfreeze");
        const { unfreezeCommand } = await import("./commands/freeze.js");
        return await unfreezeCommand(env);
      }
      case "doctor": {
        const { values } = parse(args, {});
        if (values.help) return help("doctor");
        const { doctor } = await import("./commands/doctor.js");
        return await doctor(env);
      }
      case "audit": {
        const { values } = parse(args, { since: { type: "string" }, json: { type: "boolean" } });
        if (values.help) return help("audit");
        const { auditCommand, parseSince } = await import("./commands/audit.js");
        const since = values.since === undefined ? undefined : parseSince(values.since);
        if (values.since !== undefined && since === undefined) {
          throw new UsageError(`--since must be an ISO date or datetime such as 2026-11-01 or 2026-11-01T12:00:00Z, not ${JSON.stringify(values.since.slice(0, 60))}`);
        }
        return await auditCommand(env, { since, json: values.json });
      }
      case "allowance": {
        const { values, positionals } = parse(args, { json: { type: "boolean" }, "owner-keypair": { type: "string" }, unsigned: { type: "boolean" } }, 2);
        if (values.help) return help("allowance");
        const { allowanceCommand } = await import("./commands/allowance.js");
        return await allowanceCommand(env, allowanceAction(positionals, values), { json: values.json, ownerKeypair: values["owner-keypair"], unsigned: values.unsigned });
      }
      case "console": {
        const { values } = parse(args, { port: { type: "string" }, "no-open": { type: "boolean" } });
        if (values.help) return help("console");
        const { consoleCommand } = await import("./commands/console.js");
        return await consoleCommand(env, { port: intOption(values.port, "port", 1, 65_535), open: !values["no-open"] });
      }
      case "sandbox": {
        const { values } = parse(args, {
          port: { type: "string" },
          home: { type: "string" },
          "api-key": { type: "string", multiple: true },
          "api-key-file": { type: "string", multiple: true },
          "provider-delay-ms": { type: "string" },
          "quote-ttl-seconds": { type: "string" },
          "rate-limit": { type: "string" },
          "allow-private-webhooks": { type: "boolean" },
        });
        if (values.help) return help("sandbox");
        const rate = intOption(values["rate-limit"], "rate-limit", 1, 100_000);
        const quoteTtl = intOption(values["quote-ttl-seconds"], "quote-ttl-seconds", 1, 86_400);
        const { sandboxCommand } = await import("./commands/sandbox.js");
        return await sandboxCommand(
          {
            home: values.home ?? join(defaultHome(env), "sandbox"),
            port: intOption(values.port, "port", 0, 65_535),
            apiKeys: values["api-key"],
            apiKeyFiles: values["api-key-file"],
            envApiKeys: env.PAID_ACTIONS_SANDBOX_API_KEYS,
            providerDelayMs: intOption(values["provider-delay-ms"], "provider-delay-ms", 0, 3_600_000),
            quoteTtlMs: quoteTtl === undefined ? undefined : quoteTtl * 1000,
            rateLimit: rate === undefined ? undefined : { perSecond: rate, burst: rate * 4 },
            allowPrivateWebhooks: values["allow-private-webhooks"],
          },
          VERSION,
        );
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (e instanceof UsageError || code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\nRun 'paid-actions-mcp ${HELP[command] ? `${command} ` : ""}--help' for usage.\n`);
      return 2;
    }
    if ((e as Error).name === "SandboxBusyError") {
      process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\n`);
      return 1;
    }
    if (code === "EADDRINUSE") {
      process.stderr.write(`paid-actions-mcp: the port is already in use (${(e as Error).message}); pick another with --port\n`);
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
