/**
 * Opening a home's EVM ledger (ledger.ts) with the sandbox: the node started, the chain
 * loaded from its state file — or, on a fresh home (or one whose genesis a crash cut short),
 * made anew: the contracts installed, the demo wallet's EVM key funded with 1000 USDC and the
 * agent's EVM key with 25 (there is no delegate on EVM: the agent spends its own). Without an
 * anvil binary for this platform, or when the node will not start, the EVM ledger is off and
 * the sandbox says so; the Solana ledger is unaffected.
 */
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { parseDecimal } from "../../domain/money.js";
import { statement } from "../db.js";
import type { GroupSync } from "../group-sync.js";
import { EVM_CHAIN_ID, EVM_NETWORK, EVM_USDC, EvmLedger, loadEvmKeys, startEvmNode } from "./ledger.js";
import { findAnvil } from "./node.js";

/** What `sandbox.json` says of the EVM ledger (its `evm` block). */
export interface EvmInfo {
  rpcUrl: string;
  network: string;
  chainId: number;
  asset: string;
  agentAddress: string;
  /** The agent's EVM private key: `0x` and 64 hex digits, one line, mode 0600. */
  agentKeyPath: string;
  /** The demo wallet's EVM address (its key is `evm-wallet.key` in the home). */
  ownerAddress: string;
}

export const EVM_WALLET_FUNDING = parseDecimal("1000")!;
export const EVM_AGENT_FUNDING = parseDecimal("25")!;
/**
 * A quiet chain gets an empty block after this long without one (EvmLedger.keepTime): an
 * authorization's validBefore is at most 5 minutes after it was signed (the EVM rail's bound),
 * so one left unsettled is seen to be unable to land within about twice that.
 */
export const EVM_IDLE_BLOCK_MS = 5 * 60_000;

/** Reads a key file this module wrote, creating it (0600) when absent. */
export function readOrCreateKey(path: string): PrivateKeyAccount {
  if (!existsSync(path)) writeFileSync(path, `${generatePrivateKey()}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  const hex = readFileSync(path, "utf8").trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex))
    throw new Error(`${path} does not hold an EVM private key (0x + 64 hex digits)`);
  return privateKeyToAccount(hex as Hex);
}

/** The EVM node's port of the previous start, as sandbox.json says: its RPC URL stays the same. */
function previousPort(home: string): number | undefined {
  try {
    const info = JSON.parse(readFileSync(join(home, "sandbox.json"), "utf8")) as { evm?: { rpcUrl?: unknown } };
    const port = typeof info.evm?.rpcUrl === "string" ? Number(new URL(info.evm.rpcUrl).port) : NaN;
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

const meta = (db: Database.Database, key: string) =>
  (statement(db, `SELECT value FROM meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;

/**
 * The home's EVM ledger and what sandbox.json says of it; undefined (and said in the log) when
 * it is off. `enabled: false` turns it off on purpose.
 */
export async function openEvm(
  o: {
    home: string;
    db: Database.Database;
    sync: GroupSync;
    log: (line: string) => void;
    enabled?: boolean | undefined;
    /** EvmLedger.keepTime's bound (default EVM_IDLE_BLOCK_MS). */
    idleBlockMs?: number | undefined;
  },
  cleanups: Array<() => void>,
): Promise<{ ledger: EvmLedger; info: EvmInfo } | undefined> {
  if (o.enabled === false) return undefined;
  const anvil = findAnvil();
  if ("missing" in anvil) {
    o.log(`the EVM ledger (${EVM_NETWORK}) is off: ${anvil.missing}; the Solana ledger runs as usual`);
    return undefined;
  }
  const statePath = join(o.home, "evm-state.bin");
  let node;
  try {
    node = await startEvmNode({
      binary: anvil.path,
      pidFile: join(o.home, "evm-node.pid"),
      log: o.log,
      port: previousPort(o.home),
    });
  } catch (e) {
    o.log(`the EVM ledger (${EVM_NETWORK}) is off: ${(e as Error).message}; the Solana ledger runs as usual`);
    return undefined;
  }
  const ledger = new EvmLedger(node, loadEvmKeys(o.db), statePath);
  cleanups.unshift(() => void ledger.close());
  const owner = readOrCreateKey(join(o.home, "evm-wallet.key"));
  const agentKeyPath = join(o.home, "evm-agent.key");
  const agent = readOrCreateKey(agentKeyPath);
  if (meta(o.db, "evm_genesis_done") === "1") {
    if (!(await ledger.load(statePath))) throw new Error(`the EVM ledger's state file ${statePath} is missing`);
  } else {
    // A genesis a crash cut short is redone from nothing: nothing else ran on this chain yet.
    rmSync(statePath, { force: true });
    await ledger.genesis(
      [
        { to: owner.address, amount: EVM_WALLET_FUNDING },
        { to: agent.address, amount: EVM_AGENT_FUNDING },
      ],
      [owner.address, agent.address],
    );
    await ledger.persist();
    statement(o.db, `INSERT INTO meta (key, value) VALUES ('evm_genesis_done', '1') ON CONFLICT(key) DO NOTHING`).run();
    o.sync.syncNow();
    o.log(
      `EVM ledger ${EVM_NETWORK}: demo wallet ${owner.address} funded with 1000 USDC, agent ${agent.address} with 25`,
    );
  }
  ledger.keepTime(o.idleBlockMs ?? EVM_IDLE_BLOCK_MS, o.log);
  return {
    ledger,
    info: {
      rpcUrl: ledger.rpcUrl,
      network: EVM_NETWORK,
      chainId: EVM_CHAIN_ID,
      asset: EVM_USDC,
      agentAddress: agent.address,
      agentKeyPath,
      ownerAddress: owner.address,
    },
  };
}

/** The EVM ledger's last dump (what it holds is on disk already: this spares a replay), then its node stopped. */
export async function closeEvm(ledger: EvmLedger | undefined, log: (line: string) => void): Promise<void> {
  if (!ledger) return;
  await ledger.persist().catch((e: Error) => log(`EVM ledger: last dump failed: ${e.message}`));
  await ledger.close();
}
