/**
 * `paid-actions-mcp console [--port N] [--no-open]`: the local web console over the home's
 * journal — the one every MCP server of this home (or fleet) shares — on 127.0.0.1. Prints
 * the one-time login link on stdout (and nowhere else), signs the browser in unless
 * --no-open, and runs until SIGINT or SIGTERM. Needs no MCP server running.
 *
 * The browser is opened on the console's sign-in page, by its path, never on the link: an
 * opener's command line (and the browser's, when the opener starts it) is readable by every
 * local user, the page only by this one.
 */
import { spawn } from "node:child_process";
import { openerCommand } from "../app/desktop.js";
import { openJournal, openPaidActions, type PaidActions } from "../app/index.js";
import { startConsole, type ConsoleHandle } from "../console/server.js";
import type { ReceiptResult } from "../engine/index.js";
import { runAudit } from "./audit.js";

export { openerCommand } from "../app/desktop.js";

export interface ConsoleCommandOptions {
  port?: number;
  open?: boolean;
}

/** Opens a file in the person's browser, detached; any failure is ignored (the link is printed anyway). */
export function openBrowser(path: string): void {
  try {
    const { command, args, options } = openerCommand(path);
    const child = spawn(command, args, options);
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // No opener on this machine: the printed link is enough.
  }
}

type Opened = Awaited<ReturnType<typeof openJournal>>;

/** What each console a command starts is made of: the home's journal and engine, the audit page, stderr for its log. */
export function consoleDeps(j: Opened, env: NodeJS.ProcessEnv) {
  return {
    engine: j.engine,
    journal: j.journal,
    transcripts: j.transcripts,
    home: j.home,
    config: j.configResult.ok ? j.configResult.config : undefined,
    audit: consoleAudit(env),
    log: (line: string) => void process.stderr.write(`[paid-actions-mcp console] ${j.transcripts.scrub(line)}\n`),
  };
}

/** The engine with its rails that `audit` and `receipt` use: the embedded sandbox reused, or started for the run. */
async function withPaidActions<T>(env: NodeJS.ProcessEnv, use: (pa: PaidActions) => Promise<T>): Promise<T> {
  const pa = await openPaidActions({
    env,
    log: () => undefined,
    reconcile: false,
    resume: false,
    sandbox: { providerDelayMs: 3_000 },
  });
  try {
    return await use(pa);
  } finally {
    await pa.close();
  }
}

/** The audit as `paid-actions-mcp audit` makes it (over the default window), for the console's Audit page. */
export function consoleAudit(env: NodeJS.ProcessEnv): () => Promise<unknown> {
  // As the audit command: the embedded sandbox (whose RPC is the chain in sandbox mode) is reused, or started for the run.
  return () => withPaidActions(env, async (pa) => (await runAudit(pa, { now: Date.now() })).report);
}

/**
 * A receipt as `paid-actions-mcp receipt` makes it, for the console's receipt page: the
 * payment's rail reads the chain and signs it (the embedded sandbox reused, or started for it).
 */
export function consoleReceipt(env: NodeJS.ProcessEnv): (id: string) => Promise<ReceiptResult> {
  return (id) => withPaidActions(env, (pa) => pa.engine.receipt(id));
}

export async function consoleCommand(env: NodeJS.ProcessEnv, o: ConsoleCommandOptions = {}): Promise<number> {
  const j = await openJournal(env);
  const deps = consoleDeps(j, env);
  const config = deps.config;
  if (config) j.transcripts.addSecret(config.apiKey);
  let handle: ConsoleHandle;
  try {
    handle = await startConsole({ ...deps, receipt: consoleReceipt(env) }, { port: o.port });
  } catch (e) {
    await j.close();
    if ((e as NodeJS.ErrnoException).code === "EADDRINUSE") {
      process.stderr.write(
        `paid-actions-mcp console: port ${o.port} on 127.0.0.1 is already in use; pick another with --port, or leave --port out for a free one\n`,
      );
      return 1;
    }
    throw e;
  }
  // Listening for the stop signals before the link is out: whoever reads it may stop us at once.
  const stopped = new Promise<void>((done) => {
    const stop = (signal: string) => {
      process.stderr.write(`${signal}: stopping the console\n`);
      done();
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  const login = handle.login("/");
  process.stderr.write(
    `Journal: ${j.journal.kind} at ${j.journal.location}; home ${j.home}${config ? "" : " (configuration invalid: see paid-actions-mcp doctor)"}\n`,
  );
  process.stdout.write(
    `Console: ${login.url}\nThe link works once, for 10 minutes (it signs this browser in). Ctrl-C stops the console.\n`,
  );
  if (o.open !== false) {
    try {
      openBrowser((await login.page()).path);
    } catch (e) {
      // Never the link instead: on an opener's command line any local user could read it.
      process.stderr.write(
        `Could not write the sign-in page for the browser (${(e as Error).message}); open the link above yourself\n`,
      );
    }
  }
  await stopped;
  await handle.close();
  await j.close();
  return 0;
}
