/**
 * Starting and stopping a reference service ("sandbox") on a home directory: the SQLite
 * file, the ledger, the service keys, the demo wallet, the x402 facilitator and the paid
 * resources it settles, the HTTP server on loopback, and `sandbox.json` describing how to
 * reach it. One sandbox per home directory at a time.
 */
import type { Server } from "node:http";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync, renameSync } from "node:fs";
import { join, resolve } from "node:path";
import type Database from "better-sqlite3";
import { SOLANA_DEVNET, USDC_MINT } from "../domain/networks.js";
import type { ServiceKeys } from "./ledger/chain.js";
import type { GroupSync, SyncFiles } from "./group-sync.js";
import { isAlive, lockHome } from "./home-lock.js";
import { loadServiceKeys, loadSigningKey, openLedger, openStore } from "./home.js";
import { createHttpHandler, type HttpOptions, type RateLimit } from "./http/handler.js";
import { listen, stopServer } from "./http/server.js";
import { createFacilitatorApi } from "./facilitator/api.js";
import { inProcessFacilitatorClient } from "./facilitator/client.js";
import { DiscoveryCatalog } from "./facilitator/discovery.js";
import { SandboxFacilitator } from "./facilitator/facilitator.js";
import type { FacilitatorFaults } from "./facilitator/faults.js";
export { FacilitatorFaults } from "./facilitator/faults.js";
import { PAID_RESOURCES } from "./resources/catalog.js";
import { createPaidResources } from "./resources/server.js";
import { sellerSigner, type SellerKeyInfo, type SellerSigner } from "./resources/offer-receipt.js";
import type { Ledger } from "./ledger/ledger.js";
import { SandboxService } from "./service/service.js";
import { systemResolver, type Resolver } from "./service/webhook-guard.js";
import { Webhooks } from "./service/webhooks.js";
import { closeEvm, openEvm, type EvmInfo } from "./evm/index.js";
import type { EvmLedger } from "./evm/ledger.js";
import { EvmSettler } from "./evm/settle.js";
export type { EvmInfo } from "./evm/index.js";

export const DEFAULT_PORT = 8402;
export const DEFAULT_PROVIDER_DELAY_MS = 3_000;
export const DEFAULT_QUOTE_TTL_MS = 5 * 60_000;
export const DEFAULT_BLOCKHASH_TTL_MS = 60_000;
export const DEFAULT_RATE_LIMIT: RateLimit = { perSecond: 50, burst: 200 };
export { DEMO_ALLOWANCE } from "./home.js";

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
   * (`new FacilitatorFaults().pendingAfterSend(1)`, see faults.ts), for the v1 payments and
   * the /facilitator endpoint alike. Absent: no hook.
   */
  facilitatorFaults?: FacilitatorFaults;
  /**
   * The EVM ledger (eip155:84532 on an anvil node); default on. `false` leaves it off, as a
   * platform without an anvil binary does.
   */
  evm?: boolean;
  /** How long the EVM chain goes without a block before an empty one is mined (evm/index.ts EVM_IDLE_BLOCK_MS). */
  evmIdleBlockMs?: number;
  /**
   * Test hook: the file operations of the store's group fsync (group-sync.ts), to hold a
   * sync and see that nothing is answered before it. Absent: node:fs.
   */
  syncFiles?: SyncFiles;
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
  /**
   * The sandbox's x402 facilitator (`/supported`, `/verify`, `/settle`, `/discovery/resources`),
   * for stock sellers' `HTTPFacilitatorClient`; absent in a sandbox.json written before it.
   */
  facilitatorUrl?: string;
  /** The EVM ledger (evm/index.ts); absent when it is off or in a sandbox.json written before it. */
  evm?: EvmInfo;
  /** The key its paid resources sign offers and receipts with (x402 offer-receipt, JWS); absent before it. */
  sellerKey?: SellerKeyInfo;
}

export interface Sandbox extends SandboxInfo {
  facilitatorUrl: string;
  /** The facilitator behind `facilitatorUrl`, and its Bazaar catalog. */
  facilitator: SandboxFacilitator;
  catalog: DiscoveryCatalog;
  apiKeys: string[];
  home: string;
  port: number;
  service: SandboxService;
  ledger: Ledger;
  db: Database.Database;
  /** The store's group fsync: what is acknowledged is on disk (group-sync.ts). */
  sync: GroupSync;
  keys: ServiceKeys;
  /** The EVM ledger, when it is on (balances, the chain's RPC, its keys). */
  evmLedger: EvmLedger | undefined;
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

function writeJsonAtomic(path: string, value: unknown, mode = 0o600): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/** What the service is built on: the opened home and the process's clock and log. */
interface ServiceGround {
  db: Database.Database;
  sync: GroupSync;
  ledger: Ledger;
  keys: ServiceKeys;
  network: string;
  mint: string;
  now: () => number;
  log: (line: string) => void;
  /** Settlement on the EVM ledger, when it is on. */
  evm: EvmSettler | undefined;
  /** The sandbox's signing key: the service's and the paid resources' offers and receipts (x402 offer-receipt). */
  signer: SellerSigner;
}

/** The sandbox's signing key, made on first start and kept in its store. */
const signerOf = (db: Database.Database) => sellerSigner(loadSigningKey(db));

/** The service and its webhooks; `baseUrl` is known once the server listens. */
function createService(options: SandboxOptions, ground: ServiceGround, baseUrl: () => string) {
  const { db, sync, now, log } = ground;
  const webhooks = new Webhooks({
    db,
    now,
    log,
    durable: () => sync.durable(),
    allowPrivate: options.allowPrivateWebhooks ?? false,
    resolve: options.webhookResolver ?? systemResolver,
  });
  const service = new SandboxService({
    ...ground,
    webhooks,
    baseUrl,
    quoteTtlMs: options.quoteTtlMs ?? DEFAULT_QUOTE_TTL_MS,
    providerDelayMs: options.providerDelayMs ?? DEFAULT_PROVIDER_DELAY_MS,
    facilitatorFaults: options.facilitatorFaults,
  });
  return { webhooks, service };
}

/**
 * The x402 side: the facilitator (settling on the ledger, cataloguing for the Bazaar), its
 * HTTP surface, and the sandbox's own paid resources settled through it in process.
 */
function createX402(options: SandboxOptions, ground: ServiceGround, origin: () => string) {
  const { db, ledger, keys, network, mint, now, log, evm, signer } = ground;
  const rateLimit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const catalog = new DiscoveryCatalog(db, now);
  const facilitator = new SandboxFacilitator({
    db,
    ledger,
    keys,
    network,
    catalog,
    now,
    log,
    faults: options.facilitatorFaults,
    evm,
  });
  const facilitatorApi = createFacilitatorApi({ facilitator, catalog, rateLimit, now, log });
  const paidResources = createPaidResources({
    facilitator: inProcessFacilitatorClient(facilitator),
    network,
    asset: mint,
    payTo: keys.seller.address,
    ...(evm ? { evmPayTo: evm.seller } : {}),
    signer,
    origin,
    rateLimit,
    now,
    log,
  });
  return { catalog, facilitator, facilitatorApi, paidResources, signer };
}

/**
 * The sandbox's own paid resources in its facilitator's discovery from the first start, as a
 * seller that registered them would list them: each one's 402, as a buyer echoes it. Entries
 * of an origin it no longer listens on are forgotten. A failure is said, not fatal: the
 * resources are listed anyway once paid.
 */
async function listOwnResources(
  x402: ReturnType<typeof createX402>,
  seller: string,
  origin: string,
  log: (line: string) => void,
): Promise<void> {
  try {
    const challenges = await x402.paidResources.challenges();
    const paths = PAID_RESOURCES.map((r) => r.path);
    x402.catalog.registerOwn(seller, origin, paths, challenges);
  } catch (e) {
    log(`could not list the sandbox's own resources in discovery: ${(e as Error).message}`);
  }
}

/** The HTTP handler over the service, listening on 127.0.0.1. */
async function serve(
  options: SandboxOptions,
  parts: Omit<HttpOptions, "rateLimit" | "rpcRateLimit">,
): Promise<{ handler: ReturnType<typeof createHttpHandler>; server: Server; port: number }> {
  const rateLimit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const handler = createHttpHandler({ ...parts, rateLimit, rpcRateLimit: options.rpcRateLimit ?? rateLimit });
  const { server, port } = await listen(handler, options.port ?? DEFAULT_PORT, options.requestTimeoutMs ?? 15_000);
  return { handler, server, port };
}

/**
 * The default log: lines to stderr, written once per turn of the event loop — a busy
 * sandbox logs every settlement, and a write to a pipe is a system call each.
 */
function stderrLog(): (line: string) => void {
  let pending: string[] = [];
  const flush = () => {
    process.stderr.write(pending.join(""));
    pending = [];
  };
  return (line) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push(`[sandbox] ${line}\n`);
  };
}

/** After a failed start: undoes what was opened, newest first, whatever fails on the way. */
function cleanUpQuietly(cleanups: Array<() => void>): void {
  for (const c of cleanups) {
    try {
      c();
    } catch {
      // already failing
    }
  }
}

/** Both ledgers: Solana's, and the EVM one when it can run (evm/index.ts). */
async function openLedgers(
  options: SandboxOptions,
  o: Omit<Parameters<typeof openLedger>[0], "blockhashTtlMs">,
  cleanups: Array<() => void>,
) {
  const blockhashTtlMs = options.blockhashTtlMs ?? DEFAULT_BLOCKHASH_TTL_MS;
  const { ledger, accounts } = await openLedger({ ...o, blockhashTtlMs }, cleanups);
  const evm = await openEvm({ ...o, enabled: options.evm, idleBlockMs: options.evmIdleBlockMs }, cleanups);
  return { ledger, accounts, evm, evmSettler: evm ? new EvmSettler(evm.ledger) : undefined };
}

/** The EVM ledger's records and its chain in step, before any request (settlement-evm.ts, facilitator/evm.ts). */
async function recoverEvm(service: SandboxService, facilitator: SandboxFacilitator): Promise<void> {
  await service.recoverEvm();
  await facilitator.recoverEvm();
}

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const home = resolve(options.home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const now = options.now ?? Date.now;
  const log = options.log ?? stderrLog();
  const lock = lockHome(home);
  const cleanups: Array<() => void> = [() => rmSync(lock, { force: true })];
  try {
    const { db, sync, apiKeys } = openStore(home, { ...options, log }, now, cleanups);
    const network = SOLANA_DEVNET;
    const mint = USDC_MINT[network]!;
    const keys = await loadServiceKeys(db);
    const opened = await openLedgers(options, { db, sync, home, keys, mint, now, log }, cleanups);
    const { ledger, accounts, evm, evmSettler } = opened;
    let origin = "";
    const baseUrl = () => `${origin}/v1`;
    const ground = { db, sync, ledger, keys, network, mint, now, log, evm: evmSettler, signer: signerOf(db) };
    const { webhooks, service } = createService(options, ground, baseUrl);
    const x402 = createX402(options, ground, () => origin);
    await recoverEvm(service, x402.facilitator);
    const { handler, server, port } = await serve(options, {
      service,
      webhooks,
      facilitator: x402.facilitatorApi,
      paidResources: x402.paidResources,
      ledger,
      db,
      sync,
      apiKeys,
      now,
      log,
    });
    origin = `http://127.0.0.1:${port}`;
    const info: SandboxInfo & { facilitatorUrl: string } = {
      baseUrl: baseUrl(),
      apiKey: apiKeys[0]!,
      rpcUrl: `${origin}/solana`,
      network,
      asset: mint,
      ...accounts,
      facilitatorUrl: `${origin}/facilitator`,
      ...(evm ? { evm: evm.info } : {}),
      sellerKey: x402.signer.info,
    };
    await listOwnResources(x402, keys.seller.address, origin, log);
    // What start-up wrote (genesis, keys) is on disk before anyone is told where to find it.
    sync.syncNow();
    writeJsonAtomic(join(home, "sandbox.json"), info);
    service.recover();
    webhooks.schedule();
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        handler.drain();
        service.close();
        await stopServer(server);
        await webhooks.close();
        await closeEvm(evm?.ledger, log);
        for (const c of cleanups) c();
      })());
    return {
      ...info,
      apiKeys,
      home,
      port,
      service,
      facilitator: x402.facilitator,
      catalog: x402.catalog,
      ledger,
      db,
      sync,
      keys,
      evmLedger: evm?.ledger,
      facilitatorFaults: options.facilitatorFaults,
      close,
    };
  } catch (e) {
    cleanUpQuietly(cleanups);
    throw e;
  }
}
