/**
 * The MCP server's start-up, in two halves. What the first answers need is here at once:
 * the configuration's facts (sandbox or not, the limits, which service) and, on the first
 * tools/list, the journal with its cached catalog. The rest — the embedded sandbox, the
 * engine, the payer, the reconciler, the resume of unfinished purchases — is assembled by
 * `start()`, which the MCP surface calls on the first request that is not the opening one
 * (never for a probe a client spawns and closes), and the heavy modules load only then.
 */
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, type ConfigResult } from "../engine/config.js";
import { limitsView } from "../engine/executions.js";
import type { Journal } from "../engine/journal/sqlite.js";
import type { Transcripts } from "../engine/transcripts.js";
import type { McpHost } from "../mcp/context.js";
import type { OpenOptions, PaidActions } from "./index.js";

export interface Serving {
  host: McpHost;
  configResult: ConfigResult;
  home: string;
  /** The started runtime, once start() has finished. */
  started(): PaidActions | undefined;
  /** Stops what was started (reconciler, owned sandbox) and closes the journal. */
  close(): Promise<void>;
}

/** The file in the home dir holding the key that seals approval state. */
export const STATE_KEY_FILE = "mcp-state.key";

/**
 * The key that seals approval state, created once per home (mode 0600) and shared by every
 * server on it, so a state sealed before a restart, or by another server, still verifies.
 */
export function loadStateKey(home: string): Uint8Array {
  const path = join(home, STATE_KEY_FILE);
  const read = () => Buffer.from(readFileSync(path, "utf8").trim(), "hex");
  try {
    const key = read();
    if (key.length >= 32) return key;
    throw new Error(`${path} holds no key of 32 bytes or more; delete it to make a new one`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  mkdirSync(home, { recursive: true, mode: 0o700 });
  try {
    const fd = openSync(path, "wx", 0o600); // only one process creates it
    try {
      writeSync(fd, `${randomBytes(32).toString("hex")}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  // Another process may have just created it: wait for its content.
  for (let i = 0; i < 50; i++) {
    const key = read();
    if (key.length >= 32) return key;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
  throw new Error(`${path} stayed empty`);
}

export function prepareServing(o: Omit<OpenOptions, "resume" | "opened">): Serving {
  const configResult = loadConfig(o.env);
  const home = configResult.ok ? configResult.config.home : configResult.home;
  const config = configResult.ok ? configResult.config : undefined;
  const sandbox = config?.mode === "sandbox";
  const service = sandbox ? `sandbox:${join(home, "sandbox")}` : (config?.serviceId ?? config?.baseUrl ?? "unconfigured");

  let opened: Promise<{ journal: Journal; transcripts: Transcripts }> | undefined;
  const open = () =>
    (opened ??= (async () => {
      const [{ Transcripts }, { openJournalFile }] = await Promise.all([import("../engine/transcripts.js"), import("./index.js")]);
      const transcripts = new Transcripts(home);
      return { transcripts, journal: openJournalFile(home, transcripts) };
    })());

  let pa: PaidActions | undefined;
  let starting: Promise<PaidActions> | undefined;
  let closing: Promise<void> | undefined;
  let key: Uint8Array | undefined;

  const host: McpHost = {
    sandbox,
    limits: limitsView(config),
    service,
    journal: async () => (await open()).journal,
    start: () =>
      (starting ??= (async () => {
        if (closing) throw new Error("the server is stopping");
        const [{ openPaidActions }, ready] = await Promise.all([import("./index.js"), open()]);
        const started = await openPaidActions({ ...o, resume: "background", opened: ready });
        if (closing) {
          await started.close();
          throw new Error("the server is stopping");
        }
        pa = started;
        return started;
      })().catch((e: unknown) => {
        starting = undefined;
        throw e;
      })),
    stateKey: () => (key ??= loadStateKey(home)),
  };

  return {
    host,
    configResult,
    home,
    started: () => pa,
    close: () =>
      (closing ??= (async () => {
        await starting?.catch(() => undefined);
        if (pa) await pa.close();
        else if (opened) (await opened.catch(() => undefined))?.journal.close();
      })()),
  };
}
