/**
 * A sandbox home's durable state as the sandbox opens it: the SQLite store (its API keys,
 * the service's own keys), and the ledger with its genesis — the USDC mint, the demo wallet
 * funded with 1000 USDC, the seller's token account — and, on first start, the agent key the
 * demo wallet lets spend a demo allowance of its USDC as its delegate.
 */
import { chmodSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { generateKeypairBytes, readKeypairFile, signerFromBytes, writeKeypairFile } from "../domain/keypair.js";
import { formatDecimal, parseDecimal } from "../domain/money.js";
import { startCheckpoints } from "./checkpoints.js";
import { openDatabase, statement } from "./db.js";
import { GroupSync, type SyncFiles } from "./group-sync.js";
import { clearUnfinishedIdempotency } from "./http/handler.js";
import { ensureTokenAccount, genesis, grantDemoAllowance, type ServiceKeys } from "./ledger/chain.js";
import { Ledger } from "./ledger/ledger.js";
import { newSigningKey } from "./resources/offer-receipt.js";

const WALLET_FUNDING = parseDecimal("1000")!;
/** What the demo wallet (the owner) grants the agent key on first start. */
export const DEMO_ALLOWANCE = parseDecimal("25")!;

function meta(db: Database.Database, key: string): string | undefined {
  return (statement(db, `SELECT value FROM meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
}

function setMeta(db: Database.Database, key: string, value: string): void {
  statement(
    db,
    `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
  ).run(key, value);
}

/** The service's keys, each generated once and kept; a home made before a key existed gets it on its next start. */
export async function loadServiceKeys(db: Database.Database): Promise<ServiceKeys> {
  const stored = meta(db, "service_keys");
  const raw = (stored ? JSON.parse(stored) : {}) as Partial<Record<keyof ServiceKeys, string>>;
  const names = ["feePayer", "treasury", "mintAuthority", "seller"] as const;
  const missing = names.filter((name) => !raw[name]);
  for (const name of missing) raw[name] = Buffer.from(generateKeypairBytes()).toString("base64");
  if (missing.length > 0) setMeta(db, "service_keys", JSON.stringify(raw));
  const load = (name: keyof ServiceKeys) => signerFromBytes(new Uint8Array(Buffer.from(raw[name]!, "base64")));
  return {
    feePayer: await load("feePayer"),
    treasury: await load("treasury"),
    mintAuthority: await load("mintAuthority"),
    seller: await load("seller"),
  };
}

/** The sandbox's own signing key for the offers and receipts its resources sign (Ed25519, PKCS#8), made once and kept. */
export function loadSigningKey(db: Database.Database): string {
  let key = meta(db, "seller_signing_key");
  if (!key) {
    key = newSigningKey();
    setMeta(db, "seller_signing_key", key);
  }
  return key;
}

/**
 * The store, its files readable by this user only, its WAL checkpoints off the request thread
 * (checkpoints.ts), the group fsync that makes its writes durable (group-sync.ts), and the API keys it accepts (one generated and kept when none is given).
 */
export function openStore(
  home: string,
  o: { apiKeys?: string[]; busyTimeoutMs?: number; syncFiles?: SyncFiles; log: (line: string) => void },
  now: () => number,
  cleanups: Array<() => void>,
): { db: Database.Database; sync: GroupSync; apiKeys: string[] } {
  const path = join(home, "sandbox.sqlite");
  const db = openDatabase(path, o.busyTimeoutMs);
  cleanups.unshift(() => db.close());
  const checkpoints = startCheckpoints(db, { path, busyTimeoutMs: o.busyTimeoutMs, log: o.log });
  cleanups.unshift(() => checkpoints.close());
  const sync = new GroupSync(db, join(home, "sandbox.sqlite-wal"), o.syncFiles);
  cleanups.unshift(() => sync.close());
  for (const suffix of ["", "-wal", "-shm"]) {
    if (existsSync(join(home, `sandbox.sqlite${suffix}`))) chmodSync(join(home, `sandbox.sqlite${suffix}`), 0o600);
  }
  clearUnfinishedIdempotency(db, now());
  const apiKeys = o.apiKeys?.filter((k) => k.length > 0) ?? [];
  for (const k of apiKeys) {
    if (!/^[\x21-\x7e]{8,512}$/.test(k))
      throw new Error("an API key must be 8-512 printable ASCII characters without spaces");
  }
  if (apiKeys.length > 0) return { db, sync, apiKeys };
  let generated = meta(db, "generated_api_key");
  if (!generated) {
    generated = `sk_sandbox_${randomBytes(24).toString("base64url")}`;
    setMeta(db, "generated_api_key", generated);
  }
  return { db, sync, apiKeys: [generated] };
}

/** The demo wallet (the owner) and the agent key, as sandbox.json names them. */
export interface DemoAccounts {
  walletPath: string;
  owner: string;
  agentKeyPath: string;
  agentAddress: string;
}

/** The ledger, its genesis done once (redone from nothing when a crash cut it short), and the demo allowance granted once. */
export async function openLedger(
  o: {
    db: Database.Database;
    sync: GroupSync;
    home: string;
    keys: ServiceKeys;
    mint: string;
    now: () => number;
    log: (line: string) => void;
    blockhashTtlMs: number;
  },
  cleanups: Array<() => void>,
): Promise<{ ledger: Ledger; accounts: DemoAccounts }> {
  const { db, home, keys, mint, log } = o;
  const snapshotPath = join(home, "ledger.snapshot");
  const walletPath = join(home, "wallet.json");
  if (meta(db, "genesis_done") !== "1") {
    // A genesis interrupted by a crash is redone from nothing: nothing else ran yet.
    statement(db, `DELETE FROM ledger_addresses`).run();
    statement(db, `DELETE FROM ledger_log`).run();
    rmSync(snapshotPath, { force: true });
  }
  const ledger = Ledger.open({
    db,
    snapshotPath,
    now: o.now,
    blockhashTtlMs: o.blockhashTtlMs,
    syncLog: () => o.sync.syncNow(),
  });
  cleanups.unshift(() => ledger.close());
  if (meta(db, "genesis_done") !== "1") {
    if (!existsSync(walletPath)) writeKeypairFile(walletPath, generateKeypairBytes());
    const wallet = await signerFromBytes(readKeypairFile(walletPath));
    await genesis(ledger, keys, mint, wallet, WALLET_FUNDING);
    ledger.snapshot();
    setMeta(db, "genesis_done", "1");
    log(`new sandbox in ${home}: demo wallet ${wallet.address} funded with 1000 USDC`);
  }
  // The seller's token account must exist before its first payment (an upgraded home gets it now).
  await ensureTokenAccount(ledger, keys, keys.seller.address, mint);
  const agentKeyPath = join(home, "agent-key.json");
  const owner = await signerFromBytes(readKeypairFile(walletPath));
  if (meta(db, "agent_key_done") !== "1") {
    if (!existsSync(agentKeyPath)) writeKeypairFile(agentKeyPath, generateKeypairBytes());
    const agent = await signerFromBytes(readKeypairFile(agentKeyPath));
    await grantDemoAllowance(ledger, keys, mint, owner, agent.address, DEMO_ALLOWANCE);
    setMeta(db, "agent_key_done", "1");
    log(
      `agent key ${agent.address} may spend up to ${formatDecimal(DEMO_ALLOWANCE)} USDC of the demo wallet, as its delegate`,
    );
  }
  const agentAddress = (await signerFromBytes(readKeypairFile(agentKeyPath))).address;
  return { ledger, accounts: { walletPath, owner: owner.address, agentKeyPath, agentAddress } };
}
