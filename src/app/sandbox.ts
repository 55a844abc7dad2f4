/**
 * The embedded reference service of sandbox mode, one per home: started in this process on
 * the loopback port it had last time (sandbox.json remembers it; the first time, a free one;
 * a port taken meanwhile is said, and the new one kept), so that URLs and allowed origins
 * outlive a launch; or reused when another process already runs it for the same home —
 * and taken over when that process is gone, so that a server which only reused it goes on
 * paying. A takeover binds the port the previous owner used when it can (every URL this
 * process holds stays valid; the API key, wallet and ledger live in the sandbox home), else
 * a free one: the service moves, and whoever holds its URLs follows through `onMove`.
 */
import { join } from "node:path";
import { paidError, type Config, type ServiceClientOptions } from "../engine/index.js";
import type { Sandbox, SandboxInfo, SandboxOptions } from "../sandbox/index.js";

/** How often a process that reuses another's sandbox checks that its owner still lives. */
export const DEFAULT_WATCH_MS = 2_000;

export interface EmbeddedSandbox {
  /** How to reach it now: replaced when the service moves. */
  info: SandboxInfo;
  /** This process runs it (and stops it on close): from the start, or since a takeover. */
  owned: boolean;
  home: string;
  instance?: Sandbox;
  /**
   * Finds the service again after a request could not reach it: takes it over when its
   * owner is gone, follows it when another process took it over elsewhere. One recovery
   * at a time per process; resolves true when the service answers again.
   */
  recover(): Promise<boolean>;
  /** Calls `listener` with the new and the previous info whenever the service moves. */
  onMove(listener: (info: SandboxInfo, previous: SandboxInfo) => void): void;
  /** Stops watching the owner, and stops the service if this process runs it. */
  close(): Promise<void>;
}

export interface WatchOptions {
  /** The owner liveness check's period (default DEFAULT_WATCH_MS; 0: no periodic check). */
  intervalMs?: number;
}

type SandboxModule = typeof import("../sandbox/index.js");

interface Found {
  info: SandboxInfo;
  /** The pid whose lock names it. */
  owner: number;
  /** Set when this process started it. */
  instance?: Sandbox;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether the sandbox described by `info` answers its health check. */
export async function healthy(info: SandboxInfo): Promise<boolean> {
  try {
    const res = await fetch(`${info.baseUrl.replace(/\/v1$/, "")}/health`, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

function infoOf(instance: Sandbox): SandboxInfo {
  const { baseUrl, apiKey, rpcUrl, network, asset, walletPath, owner, agentKeyPath, agentAddress, evm } = instance;
  return {
    baseUrl,
    apiKey,
    rpcUrl,
    network,
    asset,
    walletPath,
    owner,
    agentKeyPath,
    agentAddress,
    ...(evm ? { evm } : {}),
  };
}

function portOf(baseUrl: string): number | undefined {
  try {
    const port = Number(new URL(baseUrl).port);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

const originOf = (info: SandboxInfo) => new URL(info.baseUrl).origin;

/** The port the home's sandbox last listened on, as its sandbox.json says (undefined the first time). */
function rememberedPort(m: SandboxModule, home: string): number | undefined {
  const info = m.readSandboxInfo(home);
  return typeof info?.baseUrl === "string" ? portOf(info.baseUrl) : undefined;
}

const sameInfo = (a: SandboxInfo, b: SandboxInfo) =>
  a.baseUrl === b.baseUrl &&
  a.rpcUrl === b.rpcUrl &&
  a.apiKey === b.apiKey &&
  a.walletPath === b.walletPath &&
  a.evm?.rpcUrl === b.evm?.rpcUrl;

/**
 * The sandbox running for a home, or one started here, trying `ports` in turn (a port
 * another program holds falls through to the next). `restartOwn`: a lock naming this very
 * process may be replaced (at start-up); otherwise it means another part of this process
 * runs the sandbox, and it is reused like any other owner's.
 */
async function find(
  m: SandboxModule,
  home: string,
  start: (port: number) => Promise<Sandbox>,
  ports: number[],
  restartOwn: boolean,
): Promise<Found> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const owner = m.sandboxOwner(home);
    if (owner !== undefined && (owner !== process.pid || !restartOwn)) {
      const info = m.readSandboxInfo(home);
      if (info && (await healthy(info))) return { info, owner };
      await sleep(100);
      continue;
    }
    try {
      const instance = await start(ports[0] ?? 0);
      return { info: infoOf(instance), owner: process.pid, instance };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EADDRINUSE" && ports.length > 1) {
        ports = ports.slice(1);
        continue;
      }
      if (!(e instanceof m.SandboxBusyError)) throw e;
      await sleep(100);
    }
  }
  throw paidError("service_unavailable", { problem: "sandbox_locked", home });
}

type Start = (port: number, apiKeys?: string[]) => Promise<Sandbox>;

/** What the handle of an embedded sandbox works with, and what it keeps between calls. */
interface Held {
  m: SandboxModule;
  /** The sandbox's own home (under the server's). */
  home: string;
  start: Start;
  /** The API keys this process is configured with, if any. */
  apiKeys?: string[];
  log?: (line: string) => void;
  /** The pid whose lock names the running sandbox. */
  owner: number;
  closed: boolean;
  recovering?: Promise<boolean>;
  timer?: NodeJS.Timeout;
  listeners: Array<(info: SandboxInfo, previous: SandboxInfo) => void>;
}

/**
 * Finds the sandbox again once its owner is gone: this process takes it over (on the
 * previous owner's port when it can), or follows whichever process did. Tells the listeners
 * when it moved.
 */
async function takeOver(h: Held, sandbox: EmbeddedSandbox): Promise<boolean> {
  const previous = sandbox.info;
  const port = portOf(previous.baseUrl);
  // The previous owner's port first: every URL this process holds stays valid. Its key
  // too, should this process be configured with other keys.
  const found = await find(
    h.m,
    h.home,
    (p) => h.start(p, h.apiKeys ?? [previous.apiKey]),
    port ? [port, 0] : [0],
    false,
  );
  if (found.instance) {
    if (h.closed) {
      await found.instance.close();
      return false;
    }
    sandbox.owned = true;
    sandbox.instance = found.instance;
    clearInterval(h.timer);
    const moved = found.info.baseUrl !== previous.baseUrl ? ` (port ${port ?? "?"} is taken: the service moved)` : "";
    h.log?.(
      `the embedded sandbox's owner (pid ${h.owner}) is gone: this process took it over at ${found.info.baseUrl}${moved}`,
    );
  } else if (!sameInfo(found.info, previous)) {
    h.log?.(`the embedded sandbox moved to ${found.info.baseUrl} (pid ${found.owner} runs it now)`);
  }
  h.owner = found.owner;
  if (!sameInfo(found.info, previous)) {
    sandbox.info = found.info;
    for (const listener of h.listeners) listener(found.info, previous);
  }
  return true;
}

/** Checks every `intervalMs` (an unref'd timer reading its lock) whether a reused sandbox's owner is gone. */
function watchOwner(h: Held, sandbox: EmbeddedSandbox, intervalMs: number): void {
  h.timer = setInterval(() => {
    if (h.closed || sandbox.owned || h.recovering || h.m.sandboxOwner(h.home) === h.owner) return;
    sandbox
      .recover()
      .catch((e: unknown) =>
        h.log?.(`the embedded sandbox's owner is gone, and taking it over failed: ${(e as Error).message}`),
      );
  }, intervalMs);
  h.timer.unref();
}

/** The handle on a sandbox found (or started) for the first time. */
function handleOn(h: Held, first: Found): EmbeddedSandbox {
  const sandbox: EmbeddedSandbox = {
    info: first.info,
    owned: first.instance !== undefined,
    home: h.home,
    instance: first.instance,
    recover() {
      if (h.closed) return Promise.resolve(false);
      if (sandbox.owned) return Promise.resolve(true);
      return (h.recovering ??= takeOver(h, sandbox).finally(() => (h.recovering = undefined)));
    },
    onMove(listener) {
      h.listeners.push(listener);
    },
    async close() {
      h.closed = true;
      clearInterval(h.timer);
      await h.recovering?.catch(() => undefined);
      if (sandbox.owned) await sandbox.instance?.close();
    },
  };
  return sandbox;
}

/**
 * Reuses the sandbox running for this home, or starts one in this process. A reused one is
 * watched (an unref'd timer reading its lock) and taken over, or followed, once its owner
 * is gone; requests that cannot reach it call `recover()` for the same.
 */
export async function embeddedSandbox(
  home: string,
  options: Partial<SandboxOptions> = {},
  log?: (line: string) => void,
  watch: WatchOptions = {},
): Promise<EmbeddedSandbox> {
  // Loaded only when needed: a configured service never pays for the ledger's start-up.
  const m = await import("../sandbox/index.js");
  const sandboxHome = join(home, "sandbox");
  const start: Start = (port, apiKeys = options.apiKeys) =>
    m.startSandbox({
      log: log ? (l) => log(`[sandbox] ${l}`) : () => undefined,
      ...options,
      ...(apiKeys ? { apiKeys } : {}),
      home: sandboxHome,
      port,
    });
  // The port it listened on last time (sandbox.json), so that every URL and allowed origin a
  // person or an agent kept from an earlier session stays valid; the first time, a free one.
  const remembered = options.port === undefined ? rememberedPort(m, sandboxHome) : undefined;
  const ports = options.port !== undefined ? [options.port] : remembered ? [remembered, 0] : [0];
  const first = await find(m, sandboxHome, (port) => start(port), ports, true);
  if (remembered && first.instance && first.instance.port !== remembered) {
    log?.(
      `the embedded sandbox's port ${remembered} is taken by another program: the sandbox moved to ${originOf(first.info)} ` +
        `(kept for the next launches); URLs of http://127.0.0.1:${remembered} no longer reach it`,
    );
  }
  const h: Held = {
    m,
    home: sandboxHome,
    start,
    apiKeys: options.apiKeys,
    log,
    owner: first.owner,
    closed: false,
    listeners: [],
  };
  const sandbox = handleOn(h, first);
  const intervalMs = watch.intervalMs ?? DEFAULT_WATCH_MS;
  if (!sandbox.owned && intervalMs > 0) watchOwner(h, sandbox, intervalMs);
  return sandbox;
}

/** Keeps a configuration pointed at the embedded sandbox when the service moves. */
export function followSandbox(config: Config, sandbox: EmbeddedSandbox, addSecret: (secret: string) => void): void {
  sandbox.onMove((info, previous) => {
    config.baseUrl = info.baseUrl;
    if (config.apiKey !== info.apiKey) {
      addSecret(info.apiKey);
      config.apiKey = info.apiKey;
    }
    // An RPC the user configured is theirs: only the sandbox's own follows it.
    if (config.rpcUrl === previous.rpcUrl) config.rpcUrl = info.rpcUrl;
    if (previous.evm && config.evmRpcUrl === previous.evm.rpcUrl) config.evmRpcUrl = info.evm?.rpcUrl;
    pointFetchingAtSandbox(config, info, previous);
  });
}

/**
 * In sandbox mode paid_fetch may pay the sandbox's own resources (test money, on this
 * machine's loopback): its origin is allowed beside what the human allowed, and its
 * facilitator is the one searched unless another is configured. Both follow it when it moves.
 */
export function pointFetchingAtSandbox(config: Config, info: SandboxInfo, previous?: SandboxInfo): void {
  const own = new URL(info.baseUrl).origin;
  const before = previous ? new URL(previous.baseUrl).origin : undefined;
  const others = (config.allowOrigins ?? []).filter((o) => o !== before && o !== own);
  config.allowOrigins = [...others, own];
  const facilitator = `${own}/facilitator`;
  if (config.facilitatorUrl === undefined || (before && config.facilitatorUrl === `${before}/facilitator`))
    config.facilitatorUrl = facilitator;
}

/**
 * Where a service client sends its requests: read from the configuration at every attempt
 * (it follows the sandbox when it moves); a request that cannot reach the sandbox at all
 * asks it to recover first.
 */
export function serviceTarget(
  config: Config,
  sandbox: EmbeddedSandbox | undefined,
): Pick<ServiceClientOptions, "baseUrl" | "apiKey" | "onUnreachable"> {
  return {
    baseUrl: () => config.baseUrl!,
    apiKey: () => config.apiKey!,
    ...(sandbox ? { onUnreachable: () => sandbox.recover() } : {}),
  };
}
