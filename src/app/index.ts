/**
 * The composition root below the CLI: assembles the engine from a configuration — the
 * journal and transcripts under the home dir, the service client, the rails that pay and
 * read each chain through the user's own RPC, the reconciler — and, when no service is configured, the
 * embedded reference service (started in-process on a free loopback port, or reused when
 * one already runs for the same home, and taken over when its owner is gone). The only
 * module that knows all the parts; the MCP server starts through serving.ts.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { newId } from "../domain/ids.js";
import {
  createEngine,
  createRails,
  createReconciler,
  createRpcChain,
  createServiceClient,
  journalOf,
  loadConfig,
  noRails,
  paidError,
  Transcripts,
  type ChainPort,
  type Config,
  type ConfigResult,
  type Engine,
  type JournalStore,
  type Rails,
  type Reconciler,
  type ServiceClient,
  type Step,
} from "../engine/index.js";
import type { SandboxOptions } from "../sandbox/index.js";
import { openJournalStore } from "./journal.js";
import {
  embeddedSandbox,
  followSandbox,
  pointFetchingAtSandbox,
  serviceTarget,
  type EmbeddedSandbox,
  type WatchOptions,
} from "./sandbox.js";

export { embeddedSandbox, type EmbeddedSandbox } from "./sandbox.js";

/**
 * How long close() lets background work in flight (a reconciler poll, the resume of
 * unfinished purchases) finish before it closes the journal: well inside the 2 s the SDKs'
 * stdio clients give a server between closing its stdin and sending SIGTERM.
 */
const CLOSE_GRACE_MS = 1_000;

export interface OpenOptions {
  env: NodeJS.ProcessEnv;
  now?: () => number;
  log?: (line: string) => void;
  onStep?: (step: Step, intentId: string) => void;
  /** Start the background reconciler (default true). */
  reconcile?: boolean;
  /** Resume unfinished intents at open (default true; "background": without waiting). */
  resume?: boolean | "background";
  /** Options for an embedded sandbox this process starts. */
  sandbox?: Partial<SandboxOptions>;
  /** How a reused embedded sandbox's owner is watched (to take it over once gone). */
  sandboxWatch?: WatchOptions;
  reconcilerIntervalMs?: { min: number; max: number };
  /** See EngineDeps.challengeMaxAgeMs. */
  challengeMaxAgeMs?: number;
  /** See EngineDeps.settleWaitMs / settleWaitStepMs. */
  settleWaitMs?: number;
  settleWaitStepMs?: number;
  /** A Solana chain port to use instead of one over the configured RPC (tests script the chain with it). */
  chain?: () => Promise<ChainPort>;
  /** The home's journal and transcripts, when the caller has opened them already. */
  opened?: { journal: JournalStore; transcripts: Transcripts };
}

export interface PaidActions {
  configResult: ConfigResult;
  config?: Config;
  engine: Engine;
  reconciler?: Reconciler;
  journal: JournalStore;
  transcripts: Transcripts;
  client?: ServiceClient;
  sandbox?: EmbeddedSandbox;
  home: string;
  close(): Promise<void>;
}

/**
 * The journal and transcripts only, for commands that read or approve (`executions`,
 * `transcript`, `approve`): no service, no sandbox, no network.
 */
export async function openJournal(env: NodeJS.ProcessEnv, now: () => number = Date.now) {
  const configResult = loadConfig(env);
  const home = configResult.ok ? configResult.config.home : configResult.home;
  const transcripts = new Transcripts(home);
  const journal = await openJournalStore(home, transcripts, journalOf(configResult));
  const engine = await createEngine({
    config: configResult.ok ? configResult.config : { issues: configResult.issues },
    journal,
    client: undefined,
    rails: noRails(() => paidError("config_invalid", { needs: "chain" })),
    transcripts,
    now,
    newId: (prefix) => newId(prefix),
    owner: `${process.pid}-cli`,
    log: () => undefined,
  });
  return { configResult, home, journal, transcripts, engine, close: async () => void (await journal.close()) };
}

export { openJournalFile, openJournalStore } from "./journal.js";

/** The rails for the configuration: each rail, its key and its RPC load with their first use. */
export function railsFor(config: Config, o: { now?: () => number; chain?: () => Promise<ChainPort> } = {}): Rails {
  return createRails(config, { now: o.now ?? Date.now, ...(o.chain ? { solanaChain: o.chain } : {}) });
}

/** The Solana chain port over the configured RPC, loaded with the first read. */
export function rpcChain(config: Config): () => Promise<ChainPort> {
  return async () => {
    if (!config.rpcUrl) throw paidError("config_invalid", { key: "SOLANA_RPC_URL" });
    return createRpcChain(() => config.rpcUrl!);
  };
}

/** What the phases of openPaidActions share once the home is open. */
interface Opening {
  o: OpenOptions;
  now: () => number;
  /**
   * The log of the work the engine does (calls, the reconciler, the resume, the transcripts'
   * index): silent once the journal is closed, when whatever fails is the close's doing — a
   * client that closes the connection cuts short what it started, and that is no error.
   */
  log: (line: string) => void;
  /** The caller's log, never silenced (the embedded sandbox's own lines). */
  callerLog: (line: string) => void;
  /** Set just before the journal closes. */
  closed: { journal: boolean };
  /** The resume of unfinished purchases, while it runs in the background. */
  resuming?: Promise<void>;
  configResult: ConfigResult;
  home: string;
  transcripts: Transcripts;
  journal: JournalStore;
}

/** The home's journal and transcripts (opened here unless the caller has), each call's transcript indexed. */
async function openHome(o: OpenOptions): Promise<Opening> {
  const now = o.now ?? Date.now;
  const callerLog = o.log ?? ((line: string) => process.stderr.write(`[paid-actions] ${line}\n`));
  const closed = { journal: false };
  const log = (line: string) => {
    if (!closed.journal) callerLog(line);
  };
  const configResult = loadConfig(o.env);
  const home = configResult.ok ? configResult.config.home : configResult.home;
  const transcripts = o.opened?.transcripts ?? new Transcripts(home);
  const journal = o.opened?.journal ?? (await openJournalStore(home, transcripts, journalOf(configResult)));
  // Each tool call's transcript is indexed in the journal, so that every server sharing it
  // (and every command) can list the calls, and say which host keeps each file.
  const host = hostname();
  transcripts.onNewCall = (callId, at) =>
    void (async () => journal.indexTranscript({ callId, createdAt: at, host, home }))().catch((e: unknown) =>
      log(`transcripts: could not index ${callId}: ${(e as Error).message}`),
    );
  return { o, now, log, callerLog, closed, configResult, home, transcripts, journal };
}

/**
 * The configuration to run with, and the embedded sandbox when it names no service. A start
 * that fails here closes the journal it opened.
 */
async function configureService(op: Opening): Promise<{ config?: Config; sandbox?: EmbeddedSandbox }> {
  const { o, configResult, transcripts } = op;
  try {
    if (!configResult.ok) return {};
    const config: Config = { ...configResult.config };
    // An RPC URL of the user's may carry a provider's API key in its path or query.
    if (config.evmRpcUrl) transcripts.addSecret(config.evmRpcUrl);
    const sandbox = config.mode === "sandbox" ? await pointAtSandbox(op, config) : undefined;
    transcripts.addSecret(config.apiKey);
    return { config, sandbox };
  } catch (e) {
    if (!o.opened) await op.journal.close();
    throw e;
  }
}

/** Points the configuration at the embedded sandbox (started here, or reused), and keeps it there when it moves. */
async function pointAtSandbox(op: Opening, config: Config): Promise<EmbeddedSandbox> {
  const sandbox = await embeddedSandbox(op.home, op.o.sandbox ?? {}, op.callerLog, op.o.sandboxWatch);
  config.baseUrl = sandbox.info.baseUrl;
  config.apiKey = sandbox.info.apiKey;
  // The embedded default pays in delegate mode: the agent key spends the demo wallet's
  // USDC within the allowance granted on chain. A wallet configured here pays on its own.
  if (!config.walletPath && sandbox.info.agentKeyPath && sandbox.info.owner) {
    config.walletPath = sandbox.info.agentKeyPath;
    config.owner ??= sandbox.info.owner;
  }
  config.walletPath ??= sandbox.info.walletPath;
  config.rpcUrl ??= sandbox.info.rpcUrl;
  // The sandbox's EVM ledger (when it runs) pays base-sepolia with the agent's own EVM key:
  // EIP-3009 has no delegate. A key or RPC configured here is used instead.
  if (sandbox.info.evm) {
    config.evmWalletPath ??= sandbox.info.evm.agentKeyPath;
    config.evmRpcUrl ??= sandbox.info.evm.rpcUrl;
  }
  config.serviceId = `sandbox:${sandbox.home}`;
  pointFetchingAtSandbox(config, sandbox.info);
  followSandbox(config, sandbox, (secret) => op.transcripts.addSecret(secret));
  return sandbox;
}

/** A client of the configured service (or the sandbox, wherever it moves). */
function serviceClientFor(
  op: Opening,
  config: Config,
  sandbox: EmbeddedSandbox | undefined,
  maxAttempts: number,
): ServiceClient {
  return createServiceClient({
    ...serviceTarget(config, sandbox),
    timeoutMs: config.http.timeoutMs,
    maxAttempts,
    now: op.now,
    secrets: () => op.transcripts.secretsNow(),
  });
}

/** The engine over the opened parts; the rails (and their chain libraries) load with their first use. */
function assembleEngine(op: Opening, config: Config | undefined, client: ServiceClient | undefined): Promise<Engine> {
  const { o, configResult, transcripts, log } = op;
  return createEngine({
    config: config ?? { issues: configResult.ok ? [] : configResult.issues },
    journal: op.journal,
    client,
    rails: config
      ? railsFor(config, { now: op.now, ...(o.chain ? { chain: o.chain } : {}) })
      : noRails(() => paidError("config_invalid", { issues: configResult.ok ? [] : configResult.issues })),
    transcripts,
    now: op.now,
    newId: (prefix) => newId(prefix),
    owner: `${process.pid}-${randomBytes(6).toString("hex")}`,
    log: (line) => log(transcripts.scrub(line)),
    onStep: o.onStep,
    challengeMaxAgeMs: o.challengeMaxAgeMs,
    settleWaitMs: o.settleWaitMs,
    settleWaitStepMs: o.settleWaitStepMs,
  });
}

/**
 * The reconciler, over a client that tries each request once (it polls again anyway), and
 * the resume of unfinished purchases: awaited, or in the background (`o.resume`).
 */
async function startReconciler(
  op: Opening,
  config: Config,
  sandbox: EmbeddedSandbox | undefined,
  engine: Engine,
  isClosing: () => boolean,
): Promise<Reconciler> {
  const { o, transcripts, log } = op;
  const reconciler = await createReconciler({
    engine,
    journal: op.journal,
    client: serviceClientFor(op, config, sandbox, 1),
    now: op.now,
    minIntervalMs: o.reconcilerIntervalMs?.min,
    maxIntervalMs: o.reconcilerIntervalMs?.max,
    log: (line) => log(transcripts.scrub(line)),
  });
  engine.on("scheduled", () => reconciler.schedule());
  const resume = o.resume ?? true;
  if (resume === "background") {
    setImmediate(() => {
      if (isClosing()) return;
      op.resuming = engine
        .resumeUnfinished()
        .then(() => reconciler.schedule())
        .catch((e: unknown) => {
          if (!isClosing()) log(`resuming unfinished purchases: ${transcripts.scrub((e as Error).message)}`);
        })
        .finally(() => (op.resuming = undefined));
    });
  } else if (resume) await engine.resumeUnfinished();
  if (o.reconcile ?? true) reconciler.start();
  return reconciler;
}

export async function openPaidActions(o: OpenOptions): Promise<PaidActions> {
  const op = await openHome(o);
  const { configResult, journal, transcripts, home } = op;
  const { config, sandbox } = await configureService(op);
  const client = config ? serviceClientFor(op, config, sandbox, config.http.maxAttempts) : undefined;
  const engine = await assembleEngine(op, config, client);

  let closing: Promise<void> | undefined;
  const reconciler = config
    ? await startReconciler(op, config, sandbox, engine, () => closing !== undefined)
    : undefined;

  return {
    configResult,
    config,
    engine,
    reconciler,
    journal,
    transcripts,
    client,
    sandbox,
    home,
    close: () =>
      (closing ??= (async () => {
        // Background work in flight ends while the journal is open, if it ends soon; what is
        // still running then meets a closed journal and stops, as after a crash, unlogged.
        const stopped = Promise.all([reconciler?.stop(), op.resuming]);
        await Promise.race([stopped, delay(CLOSE_GRACE_MS, undefined, { ref: false })]);
        op.closed.journal = true;
        await journal.close();
        // A line written after this opens its file again (and the idle timer closes it).
        transcripts.closeFiles();
        await sandbox?.close();
      })()),
  };
}
