/**
 * The command table: each command's options, read strictly, and the module that runs it,
 * loaded only when it is the one asked for. src/cli.ts picks the row and handles what every
 * command shares (help, the native SQLite check, usage errors).
 */
import { join } from "node:path";
import { EXECUTION_STATUSES } from "../domain/statuses.js";
import { allowanceAction, csvWindow, defaultHome, intOption, parse, passkeyAction, UsageError } from "./args.js";

export interface CommandRun {
  env: NodeJS.ProcessEnv;
  version: string;
  /** Prints the command's help (on stderr) and answers exit code 0. */
  help(): number;
  /** The native SQLite module's problem under this Node and configuration, if it has one. */
  sqliteProblem(): Promise<string | undefined>;
}

export interface Command {
  /** It opens the journal or runs the sandbox: the native SQLite module is checked first (serve checks later). */
  sqlite: boolean;
  run(args: string[], x: CommandRun): Promise<number>;
}

/** The options of a `--csv` export (args.ts csvWindow). */
const CSV_OPTIONS = {
  csv: { type: "boolean" },
  since: { type: "string" },
  until: { type: "string" },
} as const;

/** How --since and --until are read: as `audit --since` reads its date. */
async function whenParser(): Promise<(text: string) => number | undefined> {
  return (await import("./audit.js")).parseSince;
}

async function serve(args: string[], x: CommandRun): Promise<number> {
  if (parse(args, {}).values.help) return x.help();
  const { serve } = await import("./serve.js");
  // A turn after the server listens, so the handshake never waits for the module's load
  // (serve answers at once and opens the journal later); one line and exit 1 if it fails.
  setImmediate(
    () =>
      void x.sqliteProblem().then((problem) => {
        if (problem) process.stderr.write(`${problem}\n`, () => process.exit(1));
      }),
  );
  return serve(x.env, x.version);
}

async function executions(args: string[], x: CommandRun): Promise<number> {
  const { values } = parse(args, {
    status: { type: "string" },
    action: { type: "string" },
    limit: { type: "string" },
    attention: { type: "boolean" },
    json: { type: "boolean" },
    ...CSV_OPTIONS,
  });
  if (values.help) return x.help();
  if (values.status !== undefined && !(EXECUTION_STATUSES as readonly string[]).includes(values.status))
    throw new UsageError(`--status must be one of ${EXECUTION_STATUSES.join(", ")}`);
  const { status, action, limit, attention, json } = values;
  const csv = csvWindow(values, { status, action, limit, attention, json }, await whenParser());
  const { executionsCommand } = await import("./journal-commands.js");
  return executionsCommand(x.env, {
    csv,
    status: values.status,
    action: values.action,
    limit: intOption(values.limit, "limit", 1, 100),
    attention: values.attention,
    json: values.json,
  });
}

async function approve(args: string[], x: CommandRun): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: "boolean" } }, 1);
  if (values.help) return x.help();
  if (values.json && positionals[0] !== undefined)
    throw new UsageError("--json is for the list; deciding on an approval needs a person at a terminal");
  const { approveCommand } = await import("./approve.js");
  return approveCommand(x.env, positionals[0], { json: values.json });
}

async function freeze(args: string[], x: CommandRun): Promise<number> {
  const { values } = parse(args, { reason: { type: "string" } });
  if (values.help) return x.help();
  const { freezeCommand, reasonProblem } = await import("./freeze.js");
  const problem = values.reason === undefined ? undefined : reasonProblem(values.reason);
  if (problem) throw new UsageError(problem);
  return freezeCommand(x.env, { reason: values.reason });
}

async function audit(args: string[], x: CommandRun): Promise<number> {
  const { values } = parse(args, { since: { type: "string" }, json: { type: "boolean" } });
  if (values.help) return x.help();
  const { auditCommand, parseSince } = await import("./audit.js");
  const since = values.since === undefined ? undefined : parseSince(values.since);
  if (values.since !== undefined && since === undefined) {
    throw new UsageError(
      `--since must be an ISO date or datetime such as 2026-11-01 or 2026-11-01T12:00:00Z, not ${JSON.stringify(values.since.slice(0, 60))}`,
    );
  }
  return auditCommand(x.env, { since, json: values.json });
}

async function allowance(args: string[], x: CommandRun): Promise<number> {
  const { values, positionals } = parse(
    args,
    { json: { type: "boolean" }, "owner-keypair": { type: "string" }, unsigned: { type: "boolean" } },
    2,
  );
  if (values.help) return x.help();
  const { allowanceCommand } = await import("./allowance.js");
  return allowanceCommand(x.env, allowanceAction(positionals, values), {
    json: values.json,
    ownerKeypair: values["owner-keypair"],
    unsigned: values.unsigned,
  });
}

async function passkey(args: string[], x: CommandRun): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      label: { type: "string" },
      "owner-keypair": { type: "string" },
      unsigned: { type: "boolean" },
      json: { type: "boolean" },
      port: { type: "string" },
      "no-open": { type: "boolean" },
    },
    3,
  );
  if (values.help) return x.help();
  const { passkeyCommand } = await import("./passkey.js");
  return passkeyCommand(x.env, passkeyAction(positionals, values), {
    port: intOption(values.port, "port", 1, 65_535),
    open: !values["no-open"],
  });
}

async function sandbox(args: string[], x: CommandRun): Promise<number> {
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
  if (values.help) return x.help();
  const rate = intOption(values["rate-limit"], "rate-limit", 1, 100_000);
  const quoteTtl = intOption(values["quote-ttl-seconds"], "quote-ttl-seconds", 1, 86_400);
  const { sandboxCommand } = await import("./sandbox.js");
  const options = {
    home: values.home ?? join(defaultHome(x.env), "sandbox"),
    port: intOption(values.port, "port", 0, 65_535),
    apiKeys: values["api-key"],
    apiKeyFiles: values["api-key-file"],
    envApiKeys: x.env.PAID_ACTIONS_SANDBOX_API_KEYS,
    providerDelayMs: intOption(values["provider-delay-ms"], "provider-delay-ms", 0, 3_600_000),
    quoteTtlMs: quoteTtl === undefined ? undefined : quoteTtl * 1000,
    rateLimit: rate === undefined ? undefined : { perSecond: rate, burst: rate * 4 },
    allowPrivateWebhooks: values["allow-private-webhooks"],
  };
  return sandboxCommand(options, x.version);
}

export const COMMANDS: Record<string, Command> = {
  serve: { sqlite: true, run: serve },
  demo: {
    sqlite: true,
    run: async (args, x) => {
      const { values } = parse(args, { home: { type: "string" } });
      if (values.help) return x.help();
      return (await import("./demo.js")).demo(x.env, { home: values.home });
    },
  },
  executions: { sqlite: true, run: executions },
  purchases: {
    sqlite: true,
    run: async (args, x) => {
      const { values } = parse(args, {
        origin: { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean" },
        ...CSV_OPTIONS,
      });
      if (values.help) return x.help();
      const { origin, limit, json } = values;
      const csv = csvWindow(values, { origin, limit, json }, await whenParser());
      const { purchasesCommand } = await import("./journal-commands.js");
      return purchasesCommand(x.env, {
        csv,
        origin: values.origin,
        limit: intOption(values.limit, "limit", 1, 100),
        json: values.json,
      });
    },
  },
  transcript: {
    sqlite: true,
    run: async (args, x) => {
      const { values, positionals } = parse(args, { limit: { type: "string" }, json: { type: "boolean" } }, 1);
      if (values.help) return x.help();
      const { transcriptCommand } = await import("./journal-commands.js");
      return transcriptCommand(x.env, positionals[0], {
        limit: intOption(values.limit, "limit", 1, 1000),
        json: values.json,
      });
    },
  },
  approve: { sqlite: true, run: approve },
  "set-pin": {
    sqlite: false,
    run: async (args, x) => {
      const { values } = parse(args, { clear: { type: "boolean" } });
      if (values.help) return x.help();
      return (await import("./set-pin.js")).setPinCommand(x.env, { clear: values.clear });
    },
  },
  freeze: { sqlite: true, run: freeze },
  unfreeze: {
    sqlite: true,
    run: async (args, x) =>
      parse(args, {}).values.help ? x.help() : (await import("./freeze.js")).unfreezeCommand(x.env),
  },
  doctor: {
    sqlite: false,
    run: async (args, x) => (parse(args, {}).values.help ? x.help() : (await import("./doctor.js")).doctor(x.env)),
  },
  audit: { sqlite: true, run: audit },
  allowance: { sqlite: true, run: allowance },
  passkey: { sqlite: true, run: passkey },
  console: {
    sqlite: true,
    run: async (args, x) => {
      const { values } = parse(args, { port: { type: "string" }, "no-open": { type: "boolean" } });
      if (values.help) return x.help();
      return (await import("./console.js")).consoleCommand(x.env, {
        port: intOption(values.port, "port", 1, 65_535),
        open: !values["no-open"],
      });
    },
  },
  sandbox: { sqlite: true, run: sandbox },
  // Making a receipt opens the journal (checked in the command); verifying one needs none.
  receipt: {
    sqlite: false,
    run: async (args, x) => {
      const { values, positionals } = parse(
        args,
        { out: { type: "string" }, rpc: { type: "string" }, json: { type: "boolean" } },
        2,
      );
      if (values.help) return x.help();
      const { receiptAction, receiptCommand } = await import("./receipt.js");
      return receiptCommand(x.env, receiptAction(positionals, values), x.sqliteProblem);
    },
  },
};
