#!/usr/bin/env node
/**
 * The composition root: the only module that reads argv and the environment. It picks the
 * command's row in the command table (commands/table.ts) and hands it what it needs. stdout
 * is reserved for the command's own output (JSON-RPC only, for `serve`); messages for humans
 * go to stderr.
 */
import { readFileSync } from "node:fs";
import { UsageError } from "./commands/args.js";
import { helpTexts } from "./commands/help.js";
import { COMMANDS } from "./commands/table.js";

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version;
const HELP = helpTexts(VERSION);

/** The command the arguments name (`serve` when none is), and the arguments it gets. */
function commandOf(argv: string[]): { command: string; args: string[] } {
  const [first, ...rest] = argv;
  if (first === "--help" || first === "-h") return { command: "help", args: rest };
  if (first === "--version" || first === "-v") return { command: "version", args: rest };
  if (first === undefined || first.startsWith("-")) return { command: "serve", args: argv };
  return { command: first, args: rest };
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { command, args } = commandOf(argv);
  const help = (name: string) => {
    process.stderr.write(HELP[name]!);
    return 0;
  };
  if (command === "help") return help("main");
  if (command === "version") {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  // The native SQLite module, checked at start: a host whose Node does not match it would
  // otherwise only see the server disconnect. doctor reports it among its checks instead.
  const sqliteProblem = async () => (await import("./app/native.js")).sqliteProblem(command, env);
  const row = COMMANDS[command];
  if (row?.sqlite && command !== "serve" && !args.includes("--help") && !args.includes("-h")) {
    const problem = await sqliteProblem();
    if (problem) {
      process.stderr.write(`${problem}\n`);
      return 1;
    }
  }
  try {
    if (!row) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    return await row.run(args, { env, version: VERSION, help: () => help(command), sqliteProblem });
  } catch (e) {
    return failure(e, command);
  }
}

/** What a command's failure prints, and its exit code: 2 for a usage error, else 1. */
function failure(e: unknown, command: string): number {
  const code = (e as { code?: string }).code;
  if (e instanceof UsageError || code?.startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(
      `paid-actions-mcp: ${(e as Error).message}\nRun 'paid-actions-mcp ${HELP[command] ? `${command} ` : ""}--help' for usage.\n`,
    );
    return 2;
  }
  if ((e as Error).name === "SandboxBusyError") {
    process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\n`);
    return 1;
  }
  if (code === "EADDRINUSE") {
    process.stderr.write(
      `paid-actions-mcp: the port is already in use (${(e as Error).message}); pick another with --port\n`,
    );
    return 1;
  }
  process.stderr.write(`paid-actions-mcp: ${(e as Error).message}\n`);
  return 1;
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
