/**
 * Starting and stopping a reference service ("sandbox") on a home directory: the SQLite
 * file, the ledger, the service keys, the demo wallet, the HTTP server on loopback, and
 * `sandbox.json` describing how to reach it. One sandbox per home directory at a time.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, renameSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { generateKeypairBytes, readKeypairFile, signerFromBytes, writeKeypairFile } from "../domain/keypair.js";
import { SOLANA_DEVNET, USDC_MINT } from "../domain/networks.js";
import { formatDecimal, parseDecimal } from "../domain/money.js";
import { genesis, grantDemoAllowance, type ServiceKeys } from "./ledger/chain.js";
import { isAlive, lockHome } from "./home-lock.js";
import { openDatabase } from "./db.js";
import { clearUnfinishedIdempotency, createHttpHandler, type RateLimit } from "./http/handler.js";
import type { FacilitatorFaults } from "./facilitator/faults.js";
export { FacilitatorFaults } from "./facilitator/faults.js";
import { Ledger } from "./ledger/ledger.js";
import { SandboxService } from "./service/service.js";
import { systemResolver, type Resolver } from "./service/webhook-guard.js";
import { Webhooks } from "./service/webhooks.js";

export const DEFAULT_PORT = 8402;
export const DEFAULT_PROVIDER_DELAY_MS = 3_000;
export const DEFAULT_QUOTE_TTL_MS = 5 * 60_000;
export const DEFAULT_BLOCKHASH_TTL_MS = 60_000;
export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 50, burst: 200 };
const WALLET_FUNDING = parseDecimal("1000")!;
/** What the demo wallet (the owner) grants the agent key on first start. */
export const DEMO_ALLOWANCE = parseDecimal("25")!;

export interface SandboxOptions {
  home: string;
  /** 0 picks a free port. Default 8402. */
  port?: number;
  apiKeys?: string[];
  providerDelayMs?: number;
  quoteTtlMs?: number;
  blockhashTtlMs?: number;
  /** Per API key on /v1 (and per client address without a valid key). */
  rateLimit?: RateLimit;
  /** Per client address on /solana; default: `rateLimit`. */
  rpcRateLimit?: RateLimit;
  /** Slow clients: a request must arrive whole within this time. */
  requestTimeoutMs?: number;
  /** How long a write waits for a lock held by another process before answering 503. */
  busyTimeoutMs?: number;
  /**
   * Deliver webhooks to loopback, private and other non-public addresses too (local
   * development and tests). Default false: such URLs are refused with 400.
   */
  allowPrivateWebhooks?: boolean;
  /** How webhook hosts are resolved; default the system resolver (dns.lookup, every address). */
  webhookResolver?: Resolver;
  now?: () => number;
  log?: (line: string) => void;
  /**
   * Test hook: settlements the x402 facilitator reports as failed after sending
   * (`new FacilitatorFaults().pendingAfterSend(1)`, see faults.ts). Absent: no hook.
   */
  facilitatorFaults?: FacilitatorFaults;
}

/** What `sandbox.json` holds: how a client reaches this sandbox. */
export interface SandboxInfo {
  baseUrl: string;
  apiKey: string;
  rpcUrl: string;
  network: string;
  asset: string;
  /** The demo wallet, funded at genesis: the owner of the USDC account in delegate mode. */
  walletPath: string;
  /** The demo wallet's address (absent in a sandbox.json written before delegate mode). */
  owner?: string;
  /** The agent key: no USDC of its own, it spends the owner's as its delegate, within the demo allowance. */
  agentKeyPath?: string;
  agentAddress?: string;
}

export interface Sandbox extends SandboxInfo {
  apiKeys: string[];
  home: string;
  port: number;
  service: SandboxService;
  ledger: Ledger;
  db: Database.Database;
  keys: ServiceKeys;
  /** The fault hook given in the options, if any. */
  facilitatorFaults: FacilitatorFaults | undefined;
  close(): Promise<void>;
}

export { SandboxBusyError } from "./home-lock.js";

/** Reads `sandbox.json` from a home directory, if a sandbox ever started there. */
export function readSandboxInfo(home: string): SandboxInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(home, "sandbox.json"), "utf8")) as SandboxInfo;
  } catch {
    return undefined;
  }
}

/** Whether a live sandbox owns this home (its pid file names a running process). */
export function sandboxOwner(home: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(home, "sandbox.pid"), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function meta(db: Database.Database, key: string): string | undefined {
  return (db.prepare(`SELECT value FROM meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
}

function setMeta(db: Database.Database, key: string, value: string): void {
  db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(key, value);
}

async function loadServiceKeys(db: Database.Database): Promise<ServiceKeys> {
  let stored = meta(db, "service_keys");
  if (!stored) {
    stored = JSON.stringify({
      feePayer: Buffer.from(generateKeypairBytes()).toString("base64"),
      treasury: Buffer.from(generateKeypairBytes()).toString("base64"),
      mintAuthority: Buffer.from(generateKeypairBytes()).toString("base64"),
    });
    setMeta(db, "service_keys", stored);
  }
  const raw = JSON.parse(stored) as Record<keyof ServiceKeys, string>;
  const load = (b64: string) => signerFromBytes(new Uint8Array(Buffer.from(b64, "base64")));
  return { feePayer: await load(raw.feePayer), treasury: await load(raw.treasury), mintAuthority: await load(raw.mintAuthority) };
}

function writeJsonAtomic(path: string, value: unknown, mode = 0o600): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const home = resolve(options.home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const now = options.now ?? Date.now;
  const log = options.log ?? ((line: string) => process.stderr.write(`[sandbox] ${line}\n`));
  const lock = lockHome(home);
  const cleanups: Array<() => void> = [() => rmSync(lock, { force: true })];
  try {
    const db = openDatabase(join(home, "sandbox.sqlite"), options.busyTimeoutMs);
    cleanups.unshift(() => db.close());
    for (const suffix of ["", "-wal", "-shm"]) {
      if (existsSync(join(home, `sandbox.sqlite${suffix}`))) chmodSync(join(home, `sandbox.sqlite${suffix}`), 0o600);
    }
    clearUnfinishedIdempotency(db, now());

    let apiKeys = options.apiKeys?.filter((k) => k.length > 0) ?? [];
    for (const k of apiKeys) {
      if (!/^[\x21-\x7e]{8,512}$/.test(k)) throw new Error("an API key must be 8-512 printable ASCII characters without spaces");
    }
    if (apiKeys.length === 0) {
      let generated = meta(db, "generated_api_key");
      if (!generated) {
        generated = `sk_sandbox_${randomBytes(24).toString("base64url")}`;
        setMeta(db, "generated_api_key", generated);
      }
      apiKeys = [generated];
    }

    const network = SOLANA_DEVNET;
    const mint = USDC_MINT[network]!;
    const snapshotPath = join(home, "ledger.snapshot");
    const keys = await loadServiceKeys(db);
    const walletPath = join(home, "wallet.json");

    if (meta(db, "genesis_done") !== "1") {
      // A genesis interrupted by a crash is redone from nothing: nothing else ran yet.
      db.prepare(`DELETE FROM ledger_addresses`).run();
      db.prepare(`DELETE FROM ledger_log`).run();
      rmSync(snapshotPath, { force: true });
    }
    const ledger = Ledger.open({ db, snapshotPath, now, blockhashTtlMs: options.blockhashTtlMs ?? DEFAULT_BLOCKHASH_TTL_MS });
    cleanups.unshift(() => ledger.close());
    if (meta(db, "genesis_done") !== "1") {
      if (!existsSync(walletPath)) writeKeypairFile(walletPath, generateKeypairBytes());
      const wallet = await signerFromBytes(readKeypairFile(walletPath));
      await genesis(ledger, keys, mint, wallet, WALLET_FUNDING);
      ledger.snapshot();
      setMeta(db, "genesis_done", "1");
      log(`new sandbox in ${home}: demo wallet ${wallet.address} funded with 1000 USDC`);
    }
    const agentKeyPath = join(home, "agent-key.json");
    const owner = await signerFromBytes(readKeypairFile(walletPath));
    if (meta(db, "agent_key_done") !== "1") {
      if (!existsSync(agentKeyPath)) writeKeypairFile(agentKeyPath, generateKeypairBytes());
      const agent = await signerFromBytes(readKeypairFile(agentKeyPath));
      await grantDemoAllowance(ledger, keys, mint, owner, agent.address, DEMO_ALLOWANCE);
      setMeta(db, "agent_key_done", "1");
      log(`agent key ${agent.address} may spend up to ${formatDecimal(DEMO_ALLOWANCE)} USDC of the demo wallet, as its delegate`);
    }
    const agentAddress = (await signerFromBytes(readKeypairFile(agentKeyPath))).address;

    const webhooks = new Webhooks({
      db,
      now,
      log,
      allowPrivate: options.allowPrivateWebhooks ?? false,
      resolve: options.webhookResolver ?? systemResolver,
    });
    let baseUrl = "";
    const service = new SandboxService({
      db,
      ledger,
      keys,
      network,
      mint,
      now,
      baseUrl: () => baseUrl,
      quoteTtlMs: options.quoteTtlMs ?? DEFAULT_QUOTE_TTL_MS,
      providerDelayMs: options.providerDelayMs ?? DEFAULT_PROVIDER_DELAY_MS,
      webhooks,
      log,
      facilitatorFaults: options.facilitatorFaults,
    });
    const handler = createHttpHandler({
      service,
      webhooks,
      ledger,
      db,
      apiKeys,
      rateLimit: options.rateLimit ?? DEFAULT_RATE_LIMIT,
      rpcRateLimit: options.rpcRateLimit ?? options.rateLimit ?? DEFAULT_RATE_LIMIT,
      now,
      log,
    });

    const requestTimeout = options.requestTimeoutMs ?? 15_000;
    // Node checks requestTimeout and headersTimeout only every connectionsCheckingInterval
    // (30 s by default): a slow client would hold its connection that long, whatever the timeout.
    const server: Server = createServer({ connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(requestTimeout / 4))) }, (req, res) => void handler(req, res));
    server.requestTimeout = requestTimeout;
    server.headersTimeout = Math.min(requestTimeout, 10_000);
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen(options.port ?? DEFAULT_PORT, "127.0.0.1", () => {
        server.off("error", fail);
        ok();
      });
    });
    const port = (server.address() as AddressInfo).port;
    baseUrl = `http://127.0.0.1:${port}/v1`;
    const info: SandboxInfo = { baseUrl, apiKey: apiKeys[0]!, rpcUrl: `http://127.0.0.1:${port}/solana`, network, asset: mint, walletPath, owner: owner.address, agentKeyPath, agentAddress };
    writeJsonAtomic(join(home, "sandbox.json"), info);

    service.recover();
    webhooks.schedule();

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        handler.drain();
        service.close();
        await new Promise<void>((ok) => {
          server.close(() => ok());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2_000).unref();
        });
        await webhooks.close();
        for (const c of cleanups) c();
      })());

    return { ...info, apiKeys, home, port, service, ledger, db, keys, facilitatorFaults: options.facilitatorFaults, close };
  } catch (e) {
    for (const c of cleanups) {
      try {
        c();
      } catch {
        // already failing
      }
    }
    throw e;
  }
}
