/**
 * The embedded reference service of sandbox mode, one per home: started in this process on
 * a free loopback port, or reused when another process already runs it for the same home —
 * and taken over when that process is gone, so that a server which only reused it goes on
 * paying. A takeover binds the port the previous owner used when it can (every URL this
 * process holds stays valid; the API key, wallet and ledger live in the sandbox home), else
 * a free one: the service moves, and whoever holds its URLs follows through `onMove`.
 */
import { join } from "node:path";
import { PaidActionError, type Config, type ServiceClientOptions } from "../engine/index.js";
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
  const { baseUrl, apiKey, rpcUrl, network, asset, walletPath, owner, agentKeyPath, agentAddress } = instance;
  return { baseUrl, apiKey, rpcUrl, network, asset, walletPath, owner, agentKeyPath, agentAddress };
}

function portOf(baseUrl: string): number | undefined {
  try {
    const port = Number(new URL(baseUrl).port);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

const sameInfo = (a: SandboxInfo, b: SandboxInfo) =>
  a.baseUrl === b.baseUrl && a.rpcUrl === b.rpcUrl && a.apiKey === b.apiKey && a.walletPath === b.walletPath;

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
  throw new PaidActionError(
    "service_unavailable",
    `the embedded sandbox for ${home} is locked by another process that does not answer`,
    {},
    true,
  );
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
  const start = (port: number, apiKeys = options.apiKeys) =>
    m.startSandbox({
      log: log ? (l) => log(`[sandbox] ${l}`) : () => undefined,
      ...options,
      ...(apiKeys ? { apiKeys } : {}),
      home: sandboxHome,
      port,
    });
  const first = await find(m, sandboxHome, (port) => start(port), [options.port ?? 0], true);

  let owner = first.owner;
  let closed = false;
  let recovering: Promise<boolean> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const listeners: Array<(info: SandboxInfo, previous: SandboxInfo) => void> = [];

  async function takeOver(): Promise<boolean> {
    const previous = sandbox.info;
    const port = portOf(previous.baseUrl);
    // The previous owner's port first: every URL this process holds stays valid. Its key
    // too, should this process be configured with other keys.
    const found = await find(
      m,
      sandboxHome,
      (p) => start(p, options.apiKeys ?? [previous.apiKey]),
      port ? [port, 0] : [0],
      false,
    );
    if (found.instance) {
      if (closed) {
        await found.instance.close();
        return false;
      }
      sandbox.owned = true;
      sandbox.instance = found.instance;
      clearInterval(timer);
      const moved = found.info.baseUrl !== previous.baseUrl ? ` (port ${port ?? "?"} is taken: the service moved)` : "";
      log?.(
        `the embedded sandbox's owner (pid ${owner}) is gone: this process took it over at ${found.info.baseUrl}${moved}`,
      );
    } else if (!sameInfo(found.info, previous)) {
      log?.(`the embedded sandbox moved to ${found.info.baseUrl} (pid ${found.owner} runs it now)`);
    }
    owner = found.owner;
    if (!sameInfo(found.info, previous)) {
      sandbox.info = found.info;
      for (const listener of listeners) listener(found.info, previous);
    }
    return true;
  }

  const sandbox: EmbeddedSandbox = {
    info: first.info,
    owned: first.instance !== undefined,
    home: sandboxHome,
    instance: first.instance,
    recover() {
      if (closed) return Promise.resolve(false);
      if (sandbox.owned) return Promise.resolve(true);
      return (recovering ??= takeOver().finally(() => (recovering = undefined)));
    },
    onMove(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await recovering?.catch(() => undefined);
      if (sandbox.owned) await sandbox.instance?.close();
    },
  };

  const intervalMs = watch.intervalMs ?? DEFAULT_WATCH_MS;
  if (!sandbox.owned && intervalMs > 0) {
    timer = setInterval(() => {
      if (closed || sandbox.owned || recovering || m.sandboxOwner(sandboxHome) === owner) return;
      sandbox
        .recover()
        .catch((e: unknown) =>
          log?.(`the embedded sandbox's owner is gone, and taking it over failed: ${(e as Error).message}`),
        );
    }, intervalMs);
    timer.unref();
  }
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
  });
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
