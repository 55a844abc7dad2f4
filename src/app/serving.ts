/**
 * The MCP server's start-up, in two halves. What the first answers need is here at once:
 * the configuration's facts (sandbox or not, the limits, which service) and, on the first
 * tools/list, the cached catalog (its snapshot, in sandbox mode the sandbox's own catalog
 * from this build, else the journal's). The rest — the embedded sandbox, the
 * engine, the payer, the reconciler, the resume of unfinished purchases — is assembled by
 * `start()`, which the MCP surface calls on the first request that is not the opening one
 * (never for a probe a client spawns and closes), and the heavy modules load only then.
 * The console starts in this process on the first approval page asked of it: a host's link
 * (a sign-in page by path, or /approve and a one-time code), or the page opened on the
 * person's desktop when the host cannot ask (PAID_ACTIONS_OPEN_APPROVALS, desktop.ts).
 */
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import {
  journalOf,
  limitsView,
  loadConfig,
  paidError,
  PaidActionError,
  Transcripts,
  type Config,
  type ConfigResult,
  type JournalStore,
} from "../engine/index.js";
import type { ConsoleHandle } from "../console/deps.js";
import type { CatalogRow } from "../mcp/catalog.js";
import type { McpHost } from "../mcp/context.js";
import { createApprovalWaits, type ApprovalWaits } from "../mcp/waits.js";
import { createDesktop, desktopSession, type Desktop } from "./desktop.js";
import type { OpenOptions, PaidActions } from "./index.js";
import { approvalShower } from "./show-approvals.js";

export interface Serving {
  host: McpHost;
  configResult: ConfigResult;
  home: string;
  /** The started runtime, once start() has finished. */
  started(): PaidActions | undefined;
  /**
   * The server is stopping: no start begins from now on, and this resolves once a start in
   * flight (the runtime, the console) has finished, whatever its outcome. A fresh home's first
   * start makes the sandbox, and says so: the server waits for it before it says it stops, so
   * that nothing follows that line.
   */
  stopStarting(): Promise<void>;
  /** Stops what was started (reconciler, owned sandbox) and closes the journal. */
  close(): Promise<void>;
}

/** A journal that cannot be opened, as the refusal a paid call gives: nothing was paid, try again. */
function journalAway(e: unknown): Error {
  if (e instanceof PaidActionError) return e;
  return paidError("service_unavailable", { problem: "journal", detail: (e as Error).message.slice(0, 300) });
}

/** The file in the home dir holding a snapshot of the cached catalog (the journal holds the same). */
export const CATALOG_SNAPSHOT_FILE = "catalog-snapshot.json";

/** The catalog snapshot for `service`, or undefined when there is none (or it is unreadable, or another service's). */
export function readCatalogSnapshot(home: string, service: string): CatalogRow[] | undefined {
  try {
    const snap = JSON.parse(readFileSync(join(home, CATALOG_SNAPSHOT_FILE), "utf8")) as {
      service?: unknown;
      fetchedAt?: unknown;
      entries?: unknown;
    };
    if (snap.service !== service || !Array.isArray(snap.entries) || snap.entries.length === 0) return undefined;
    const fetchedAt = typeof snap.fetchedAt === "number" ? snap.fetchedAt : undefined;
    return (snap.entries as { name?: unknown; detail?: unknown }[])
      .filter((e) => typeof e?.name === "string")
      .map((e) => ({ name: e.name as string, detail: e.detail, fetchedAt }));
  } catch {
    return undefined;
  }
}

/** Writes the snapshot atomically (a reader sees the old one or the new one, never half). */
export function writeCatalogSnapshot(home: string, service: string, rows: CatalogRow[], now: number): void {
  const path = join(home, CATALOG_SNAPSHOT_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  mkdirSync(home, { recursive: true, mode: 0o700 });
  writeFileSync(
    tmp,
    JSON.stringify({ service, fetchedAt: now, entries: rows.map((r) => ({ name: r.name, detail: r.detail })) }),
    { mode: 0o600 },
  );
  renameSync(tmp, path);
}

/**
 * The catalog the embedded reference service serves — what its GET /actions and
 * GET /actions/{name} answer — as a cached catalog's rows, read from this build's own
 * catalog module. That module loads zod and the price lists only: neither the ledger nor
 * x402, so the first tools/list of a fresh home in sandbox mode waits for no start-up.
 */
export async function sandboxCatalogRows(): Promise<CatalogRow[]> {
  const { ACTIONS, describeAction } = await import("../sandbox/providers/catalog.js");
  // As the service's JSON answers carry it (a detail is read back from the wire's shape).
  return ACTIONS.map((a) => ({ name: a.name, detail: JSON.parse(JSON.stringify(describeAction(a))) as unknown }));
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

/** A promise made on first use and shared; forgotten when it fails, so that the next use tries again. */
interface Retryable<T> {
  get(): Promise<T>;
  /** The promise made, if any (settled or not). */
  readonly made: Promise<T> | undefined;
}

function retryable<T>(make: () => Promise<T>): Retryable<T> {
  let made: Promise<T> | undefined;
  return {
    get: () =>
      (made ??= make().catch((e: unknown) => {
        made = undefined;
        throw e;
      })),
    get made() {
      return made;
    },
  };
}

/** What the MCP server's start-up keeps: the journal opened once, the runtime, the console. */
interface ServingState {
  o: ServingOptions;
  home: string;
  /** The journal and transcripts (a journal server briefly away: the next request tries again). */
  opened: Retryable<{ journal: JournalStore; transcripts: Transcripts }>;
  starting: Retryable<PaidActions>;
  /** The started runtime, once start() has finished. */
  pa?: PaidActions;
  /** Set once the server stops: no start begins after it. */
  stopping?: boolean;
  closing?: Promise<void>;
  console: Retryable<ConsoleHandle>;
  /** The calls of this process waiting for a person: the console tells the person whether one takes a decision now. */
  waits: ApprovalWaits;
}

/** Which service the configuration names, as the catalog cache is keyed. */
function serviceOf(config: Config | undefined, home: string): string {
  return config?.mode === "sandbox"
    ? `sandbox:${join(home, "sandbox")}`
    : (config?.serviceId ?? config?.baseUrl ?? "unconfigured");
}

/** Assembles the runtime on the journal already opened (the heavy modules load now). */
async function startRuntime(st: ServingState): Promise<PaidActions> {
  if (st.closing || st.stopping) throw new Error("the server is stopping");
  const [{ openPaidActions }, ready] = await Promise.all([
    import("./index.js"),
    st.opened.get().catch((e: unknown) => Promise.reject(journalAway(e))),
  ]);
  const started = await openPaidActions({ ...st.o, resume: "background", opened: ready });
  if (st.closing) {
    await started.close();
    throw new Error("the server is stopping");
  }
  st.pa = started;
  return started;
}

/** The console, started in this process for approvals on the first page asked of it. */
async function startApprovalConsole(st: ServingState, running: PaidActions): Promise<ConsoleHandle> {
  const [{ startConsole }, { runAudit }] = await Promise.all([import("../console/server.js"), import("./audit.js")]);
  const handle = await startConsole({
    engine: running.engine,
    journal: running.journal,
    transcripts: running.transcripts,
    home: st.home,
    config: running.config,
    audit: async () => (await runAudit(running, { now: Date.now() })).report,
    // A request a person made as the server stopped fails on the closed journal: no error of theirs.
    log: (line) => {
      if (!st.closing) st.o.log?.(line);
    },
    agentWaiting: st.waits.waiting,
  });
  st.o.log?.(`console: started for approvals on ${handle.origin}`);
  return handle;
}

/** Stops what was started (the console, the runtime) or closes the journal opened for tools/list. */
async function closeServing(st: ServingState): Promise<void> {
  await st.starting.made?.catch(() => undefined);
  await (await st.console.made?.catch(() => undefined))?.close();
  if (st.pa) await st.pa.close();
  else if (st.opened.made) await (await st.opened.made.catch(() => undefined))?.journal.close();
}

/** What the MCP server's start-up is given: the runtime's options, and the person's desktop. */
export type ServingOptions = Omit<OpenOptions, "resume" | "opened"> & {
  /** The desktop approvals are brought to (default: the OS's, through the environment's PATH). */
  desktop?: Desktop;
  /** The OS (default: this process's), which says what a desktop session is. */
  platform?: NodeJS.Platform;
};

/**
 * Whether waiting approvals are brought to the person's desktop when the host cannot ask:
 * PAID_ACTIONS_OPEN_APPROVALS `auto` (the default) and a desktop session there.
 */
function showApprovals(o: ServingOptions, config: Config | undefined): boolean {
  return config?.openApprovals === "auto" && desktopSession(o.env, o.platform ?? process.platform);
}

export function prepareServing(o: ServingOptions): Serving {
  const configResult = loadConfig(o.env);
  const home = configResult.ok ? configResult.config.home : configResult.home;
  const config = configResult.ok ? configResult.config : undefined;
  const service = serviceOf(config, home);
  const st: ServingState = {
    o,
    home,
    opened: retryable(async () => {
      const { openJournalStore } = await import("./journal.js");
      const transcripts = new Transcripts(home);
      return { transcripts, journal: await openJournalStore(home, transcripts, journalOf(configResult)) };
    }),
    starting: retryable(() => startRuntime(st)),
    console: retryable(() => startApprovalConsole(st, st.pa!)),
    waits: createApprovalWaits(),
  };
  let key: Uint8Array | undefined;
  const log = (line: string) => o.log?.(line);

  const host: McpHost = {
    sandbox: config?.mode === "sandbox",
    limits: limitsView(config),
    service,
    journal: async () => (await st.opened.get()).journal,
    catalogSnapshot: () => readCatalogSnapshot(home, service),
    saveCatalogSnapshot: (rows, now) => {
      try {
        writeCatalogSnapshot(home, service, rows, now);
      } catch (e) {
        o.log?.(
          `catalog: could not write ${CATALOG_SNAPSHOT_FILE} (${(e as Error).message}); the journal still holds the catalog`,
        );
      }
    },
    // In sandbox mode the catalog is the product's own: answered from this build at once.
    ...(config?.mode === "sandbox" ? { builtInCatalog: sandboxCatalogRows } : {}),
    start: () => st.starting.get(),
    stateKey: () => (key ??= loadStateKey(home)),
    approvalWaits: st.waits,
    approvalPage: async (approvalId, how) => {
      await host.start();
      const handle = await st.console.get();
      const next = `/approvals/${encodeURIComponent(approvalId)}`;
      // A host that opens links inside itself would show a sign-in page's source, token and
      // all: it gets the console's /approve page, and the person a code to type there.
      if (how === "code") return handle.codeLogin(next);
      // Any other opens what it is handed with the OS's opener, whose command line every local
      // user can read: it gets the sign-in page's file:// URL, never a link with the token.
      return { url: (await handle.login(next).page()).url };
    },
    ...(showApprovals(o, config)
      ? {
          showApproval: approvalShower({
            desktop: o.desktop ?? createDesktop({ env: o.env, platform: o.platform ?? process.platform, log }),
            signInPage: async (next) => {
              await host.start();
              return (await (await st.console.get()).login(next).page()).path;
            },
            log,
          }),
        }
      : {}),
  };

  return {
    host,
    configResult,
    home,
    started: () => st.pa,
    stopStarting: async () => {
      st.stopping = true;
      await st.starting.made?.catch(() => undefined);
      await st.console.made?.catch(() => undefined);
    },
    close: () => (st.closing ??= closeServing(st)),
  };
}
