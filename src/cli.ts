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

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

class UsageError extends Error {}

/** The commands that open the journal or run the sandbox (SQLite, unless the journal is PostgreSQL). */
const NEEDS_SQLITE = new Set(["serve", "demo", "executions", "transcript", "approve", "freeze", "unfreeze", "audit", "console", "sandbox"]);

const ENV_HELP = `Configuration (environment, or a JSON file named by PAID_ACTIONS_CONFIG; the environment wins):
  PAID_ACTIONS_BASE_URL      the v1 service (absent: the embedded sandbox)
  PAID_ACTIONS_API_KEY       its bearer key          PAID_ACTIONS_WALLET   Solana CLI keypair file
  SOLANA_RPC_URL             Solana JSON-RPC         PAID_ACTIONS_NETWORK  solana | solana-devnet | CAIP-2
  PAID_ACTIONS_HOME          journal and transcripts (default ~/.paid-actions-mcp)
  PAID_ACTIONS_MAX_PER_CALL (5)  PAID_ACTIONS_MAX_PER_DAY (25)  PAID_ACTIONS_MAX_TOTAL
  PAID_ACTIONS_APPROVAL_ABOVE (1)  PAID_ACTIONS_ALLOW_ACTIONS (*, comma list with * wildcards)`;

const HELP: Record<string, string> = {
  main: `paid-actions-mcp ${VERSION} — an MCP server that lets an agent buy real-world actions,
paying USDC with x402 on Solana, within limits a human set.

Usage: paid-actions-mcp [command] [options]

Commands:
  serve        The MCP server over stdio (the default when no command is given)
  demo         A scripted agent session against the sandbox (what \`npm start\` runs)
  executions   List what was bought, from the journal
  transcript   List recent tool calls, or show one call's redacted transcript
  approve      A person approves or declines a payment an agent asked for (or lists those waiting)
  set-pin      Set, change or remove the approval PIN
  freeze       Stop every server on this journal from signing a new payment (works anywhere)
  unfreeze     A person lets the servers pay again (at a terminal; with the PIN when set)
  doctor       Check configuration, service, wallet, balance and journal
  audit        Reconcile the journal with the wallet's USDC history on chain
  console      A local web console: approvals, executions, spending, transcripts, audit
  sandbox      Run the reference service (v1 API + Solana JSON-RPC on an embedded ledger)

Run 'paid-actions-mcp <command> --help' for a command's options.

${ENV_HELP}
`,
  serve: `Usage: paid-actions-mcp [serve]

The MCP server over stdio, as an MCP host launches it. stdout carries JSON-RPC only;
logs go to stderr. One tool per action of the service, plus quote_action, get_execution,
list_executions, wait_for_execution, get_spending, search_agent_services, get_company.
Without PAID_ACTIONS_BASE_URL it runs against the embedded sandbox (started in this
process, or reused if one already runs for the same home); PAID_ACTIONS_SANDBOX_DELAY_MS
sets that sandbox's provider delay.

${ENV_HELP}
`,
  demo: `Usage: paid-actions-mcp demo [--home DIR]

A scripted agent session: launches 'paid-actions-mcp serve' over stdio with the MCP SDK's
Client, lists the tools, prices an action, pays for one within budget, is refused one over
budget, follows the execution to completed through a subscription and resource reads, and
shows spending and where the transcript is. Uses a fresh sandbox in a temp dir unless --home.
`,
  executions: `Usage: paid-actions-mcp executions [--status S] [--action A] [--limit N] [--attention] [--json]

Lists executions from the journal (newest first). --attention lists intents a human should
look at (an outcome that could not be settled automatically). Reads only; pays nothing.
`,
  transcript: `Usage: paid-actions-mcp transcript [callId] [--limit N] [--json]

Without a callId, lists the most recent tool calls. With one, prints its redacted
transcript: every request and response, decision and timing. API keys, wallet secrets and
payment proofs never appear.
`,
  approve: `Usage: paid-actions-mcp approve [approvalId] [--json]

Without an id, lists the payments waiting for a person: each with its action, full input,
amount, payee, quote expiry, and the day's and total spend once it is paid (--json:
{items: [...]}). Reads only; anyone may list.

With an id, a person decides, at an interactive terminal only (stdin and stdout a TTY;
otherwise it refuses with exit code 2 and nothing changes): it shows the payment, then the
person types the amount exactly as shown to approve it, or "decline" to decline it; then
the approval PIN, when one is set (see set-pin). An approval is for that quote and amount,
once, until the quote expires; the agent then calls the tool again with the same input and
the approvalId. The console (paid-actions-mcp console) offers the same decision.

Exit code: 0 decided; 1 nothing decided (another answer, Ctrl-C, a wrong PIN, or an
approval that expired, was used, declined or does not exist); 2 no terminal, usage error.
`,
  "set-pin": `Usage: paid-actions-mcp set-pin [--clear]

Sets (or changes) the approval PIN: from then on approving or declining a payment in the
terminal or the console also needs the PIN. Asks for the current PIN first when one is set,
then the new one twice, without echo; at least 4 characters. --clear removes it (the
current PIN is needed). Interactive terminal only. The PIN is kept only as a salted scrypt
hash in $PAID_ACTIONS_HOME/approval-pin (mode 0600).
`,
  freeze: `Usage: paid-actions-mcp freeze [--reason TEXT]

Freezes payments: no server sharing this journal (this home's SQLite file, or the
PostgreSQL journal of a fleet) signs a new payment, and paid tool calls are refused with
"frozen" before anything is recorded or quoted. A purchase whose payment already left is
still followed. Works anywhere, without a terminal: stopping is always safe. Freezing again
keeps the first freeze (its reason and time). Quotes still work.

Options:
  --reason TEXT   Why, shown to the agents refused, in doctor and in the console (one line,
                  at most 200 characters)
  -h, --help      This help
`,
  unfreeze: `Usage: paid-actions-mcp unfreeze

Lifts the freeze: the servers sharing this journal pay again, within the limits. At an
interactive terminal only (stdin and stdout a TTY; otherwise it refuses with exit code 2
and nothing changes), and with the approval PIN when one is set (see set-pin).

Exit code: 0 unfrozen (or nothing was frozen); 1 payments stay frozen (no PIN, a wrong
PIN); 2 no terminal, usage error.
`,
  doctor: `Usage: paid-actions-mcp doctor

Checks the configuration, that the service answers, the wallet (and its file permissions),
its USDC balance, the approvals waiting, whether payments are frozen (a warning), and the
journal's health. Exit code 0 when ready to pay (once unfrozen, when frozen).
`,
  audit: `Usage: paid-actions-mcp audit [--since DATE] [--json]

Reads the wallet's USDC token account history through the configured Solana RPC and
reconciles it with the journal: every outflow must be a journaled payment (by its memo,
the quote id) of the journaled amount; every payment the journal counts as landed or
settled must be on chain; every refund credited must have come into the wallet. Deposits
(money in that is no refund) are listed, not flagged. Reads only; pays nothing.

Options:
  --since DATE   Audit from this time: 2026-11-01 or 2026-11-01T12:00:00Z (UTC unless an
                 offset is given). Default: the journal's first payment, minus 10 minutes
  --json         One JSON document: {since, wallet, walletTokenAccount, outflows, payments,
                 refunds, deposits, discrepancies, inFlight, ok, scan}
  -h, --help     This help

Exit code: 0 journal and chain agree; 3 they do not (each discrepancy is printed);
1 cannot tell (configuration invalid, RPC not answering: said on stderr); 2 usage error.
`,
  console: `Usage: paid-actions-mcp console [--port N] [--no-open]

A web console on 127.0.0.1 over this home's journal (the one its MCP servers share; none
needs to run): approve or decline waiting payments (with the approval PIN when one is set),
follow executions and their timelines, spending against the caps, transcripts, the audit.
Prints a login link on stdout and opens it in the browser. The link works once, for 10
minutes; it signs that browser in. Runs until Ctrl-C or SIGTERM.

Options:
  --port N     Port on 127.0.0.1, 1-65535 (default: a free one)
  --no-open    Print the link only; do not open a browser
  -h, --help   This help
`,
  sandbox: `Usage: paid-actions-mcp sandbox [--port N] [--home DIR] [--api-key KEY]... [--api-key-file PATH]...

Runs the reference payment-gated action service on 127.0.0.1: the v1 API at
http://127.0.0.1:N/v1 and a Solana JSON-RPC endpoint over its ledger at
http://127.0.0.1:N/solana. Writes DIR/sandbox.json with {baseUrl, apiKey, rpcUrl,
network, asset, walletPath}. A restart on the same DIR continues where it stopped.

Options:
  --port N                 Port on 127.0.0.1 (default 8402; 0 picks a free one)
  --home DIR               Where state lives (default $PAID_ACTIONS_HOME/sandbox or ~/.paid-actions-mcp/sandbox)
  --api-key KEY            Accept this bearer key; repeat for more tenants. Without any key
                           (from here, a file or the environment), one is generated on first
                           start and kept in DIR
  --api-key-file PATH      Accept the keys in PATH: one per line, blank lines and # comments
                           ignored; refused if group or others can access it (chmod 600).
                           Keeps keys out of the process list. Repeatable
  --provider-delay-ms MS   How long a simulated provider takes (default 3000)
  --quote-ttl-seconds S    Quote lifetime (default 300)
  --rate-limit N           Requests per second per API key, and per client address on
                           /solana and without a key, bursts of 4x (default 50)
  --allow-private-webhooks Deliver webhooks to loopback and private addresses too (local
                           receivers); by default such URLs are refused with 400
  -h, --help               This help

Environment:
  PAID_ACTIONS_SANDBOX_API_KEYS  More keys, comma-separated. Keys from --api-key, the files
                                 and this variable all combine.

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

function parse<O extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: O, positionals = 0) {
  const parsed = parseArgs({ args, options: { ...options, help: { type: "boolean" as const, short: "h" } }, strict: true, allowPositionals: positionals > 0 });
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  return parsed;
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
