/**
 * The composition root below the CLI: assembles the engine from a configuration — the
 * journal and transcripts under the home dir, the service client, the payer, the chain
 * port over the user's own RPC, the reconciler — and, when no service is configured, the
 * embedded reference service (started in-process on a free loopback port, or reused when
 * one already runs for the same home, and taken over when its owner is gone). The only
 * module that knows all the parts; the MCP server starts through serving.ts.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { newId } from "../domain/ids.js";
import {
  createEngine,
  createReconciler,
  createRpcChain,
  createServiceClient,
  journalOf,
  loadConfig,
  loadPayer,
  PaidActionError,
  Transcripts,
  type ChainPort,
  type Config,
  type ConfigResult,
  type Engine,
  type JournalStore,
  type Reconciler,
  type ServiceClient,
  type Step,
} from "../engine/index.js";
import type { SandboxOptions } from "../sandbox/index.js";
import { openJournalStore } from "./journal.js";
import { embeddedSandbox, followSandbox, serviceTarget, type EmbeddedSandbox, type WatchOptions } from "./sandbox.js";

export { embeddedSandbox, type EmbeddedSandbox } from "./sandbox.js";

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
  /** A chain port to use instead of one over the configured RPC (tests script the chain with it). */
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
    payer: () => Promise.reject(new PaidActionError("config_invalid", "this command does not pay")),
    chain: () => Promise.reject(new PaidActionError("config_invalid", "this command reads no chain")),
    transcripts,
    now,
    newId: (prefix) => newId(prefix),
    owner: `${process.pid}-cli`,
    log: () => undefined,
  });
  return { configResult, home, journal, transcripts, engine, close: async () => void (await journal.close()) };
}

export { openJournalFile, openJournalStore } from "./journal.js";

/** The chain port over the configured RPC, loaded with the first read. */
export function rpcChain(config: Config): () => Promise<ChainPort> {
  return async () => {
    if (!config.rpcUrl)
      throw new PaidActionError("config_invalid", "SOLANA_RPC_URL is not set: the engine cannot read the chain", {
        key: "SOLANA_RPC_URL",
      });
    return createRpcChain(() => config.rpcUrl!);
  };
}

export async function openPaidActions(o: OpenOptions): Promise<PaidActions> {
  const now = o.now ?? Date.now;
  const log = o.log ?? ((line: string) => process.stderr.write(`[paid-actions] ${line}\n`));
  const configResult = loadConfig(o.env);
  const home = configResult.ok ? configResult.config.home : configResult.home;
  const transcripts = o.opened?.transcripts ?? new Transcripts(home);
  const journal = o.opened?.journal ?? (await openJournalStore(home, transcripts, journalOf(configResult)));
  // Each tool call's transcript is indexed in the journal, so that every server sharing it
  // (and every command) can list the calls, and say which host keeps each file.
  const host = hostname();
  transcripts.onNewCall = (callId, at) =>
    void Promise.resolve(journal.indexTranscript({ callId, createdAt: at, host, home })).catch((e: unknown) =>
      log(`transcripts: could not index ${callId}: ${(e as Error).message}`),
    );
  let sandbox: EmbeddedSandbox | undefined;
  let config: Config | undefined;
  try {
    if (configResult.ok) {
      config = { ...configResult.config };
      if (config.mode === "sandbox") {
        sandbox = await embeddedSandbox(home, o.sandbox ?? {}, log, o.sandboxWatch);
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
        config.serviceId = `sandbox:${sandbox.home}`;
        followSandbox(config, sandbox, (secret) => transcripts.addSecret(secret));
      }
      transcripts.addSecret(config.apiKey);
    }
  } catch (e) {
    if (!o.opened) await journal.close();
    throw e;
  }

  const client = config
    ? createServiceClient({
        ...serviceTarget(config, sandbox),
        timeoutMs: config.http.timeoutMs,
        maxAttempts: config.http.maxAttempts,
        now,
        secrets: () => transcripts.secretsNow(),
      })
    : undefined;
  const owner = `${process.pid}-${randomBytes(6).toString("hex")}`;
  const engine = await createEngine({
    config: config ?? { issues: configResult.ok ? [] : configResult.issues },
    journal,
    client,
    // The Solana and x402 libraries load with the first payment, not at start-up.
    payer: () => loadPayer(config!.walletPath!, () => config!.rpcUrl, { mint: config!.mint, owner: config!.owner }),
    chain:
      o.chain ??
      (config
        ? rpcChain(config)
        : () => Promise.reject(new PaidActionError("config_invalid", "the configuration is invalid"))),
    transcripts,
    now,
    newId: (prefix) => newId(prefix),
    owner,
    log: (line) => log(transcripts.scrub(line)),
    onStep: o.onStep,
    challengeMaxAgeMs: o.challengeMaxAgeMs,
    settleWaitMs: o.settleWaitMs,
    settleWaitStepMs: o.settleWaitStepMs,
  });

  let reconciler: Reconciler | undefined;
  let closing: Promise<void> | undefined;
  if (config) {
    const pollClient = createServiceClient({
      ...serviceTarget(config, sandbox),
      timeoutMs: config.http.timeoutMs,
      maxAttempts: 1,
      now,
      secrets: () => transcripts.secretsNow(),
    });
    reconciler = await createReconciler({
      engine,
      journal,
      client: pollClient,
      now,
      minIntervalMs: o.reconcilerIntervalMs?.min,
      maxIntervalMs: o.reconcilerIntervalMs?.max,
      log: (line) => log(transcripts.scrub(line)),
    });
    engine.on("scheduled", () => reconciler?.schedule());
    const resume = o.resume ?? true;
    if (resume === "background") {
      setImmediate(() => {
        if (closing) return;
        engine
          .resumeUnfinished()
          .then(() => reconciler?.schedule())
          .catch((e: unknown) => {
            if (!closing) log(`resuming unfinished purchases: ${transcripts.scrub((e as Error).message)}`);
          });
      });
    } else if (resume) await engine.resumeUnfinished();
    if (o.reconcile ?? true) reconciler.start();
  }

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
        await reconciler?.stop();
        await journal.close();
        await sandbox?.close();
      })()),
  };
}
