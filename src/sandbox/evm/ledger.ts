/**
 * The sandbox's EVM ledger: an anvil node (node.ts) as chain eip155:84532, with USDC at x402's
 * default address for that chain (contracts/: EIP-3009, name "USDC", version "2", 6 decimals)
 * and Multicall3's tryAggregate at its canonical address; the service's EVM keys; genesis (the
 * demo wallet funded with 1000 USDC, the agent key with 25); and the state file (state.ts),
 * written before anything that moved money is acknowledged. Reads and writes go through viem.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseAbi,
  publicActions,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import type Database from "better-sqlite3";
import { statement } from "../db.js";
import { CONTRACTS } from "./contracts/artifacts.js";
import { startNode, type EvmNode } from "./node.js";
import { readState, StateFile } from "./state.js";

export const EVM_NETWORK = "eip155:84532";
export const EVM_CHAIN_ID = 84532;
/** x402's default USDC for eip155:84532, and its EIP-712 domain. */
export const EVM_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const;
export const EVM_USDC_DOMAIN = { name: "USDC", version: "2" } as const;
export const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;
export const USDC_ABI = parseAbi(CONTRACTS.SandboxUSDC.abi);

/** Gas money for every key the sandbox or a test sends from (1000 ETH). */
const GAS_FUNDING = 10n ** 21n;

/** The service's EVM keys: who mints, who pays gas to settle, who is paid (v1 quotes, demo resources). */
export interface EvmKeys {
  minter: PrivateKeyAccount;
  facilitator: PrivateKeyAccount;
  treasury: PrivateKeyAccount;
  seller: PrivateKeyAccount;
}
const KEY_NAMES = ["minter", "facilitator", "treasury", "seller"] as const;

export const evmChain = (rpcUrl: string) =>
  defineChain({
    id: EVM_CHAIN_ID,
    name: "paid-actions sandbox (eip155:84532)",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });

/** The service's EVM keys, each generated once and kept in the store (like its Solana keys). */
export function loadEvmKeys(db: Database.Database): EvmKeys {
  const row = statement(db, `SELECT value FROM meta WHERE key = 'evm_keys'`).get() as { value: string } | undefined;
  const raw = (row ? JSON.parse(row.value) : {}) as Partial<Record<keyof EvmKeys, Hex>>;
  const missing = KEY_NAMES.filter((name) => !raw[name]);
  for (const name of missing) raw[name] = generatePrivateKey();
  if (missing.length > 0) {
    statement(
      db,
      `INSERT INTO meta (key, value) VALUES ('evm_keys', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
    ).run(JSON.stringify(raw));
  }
  return Object.fromEntries(KEY_NAMES.map((name) => [name, privateKeyToAccount(raw[name]!)])) as unknown as EvmKeys;
}

/**
 * How often a sent transaction's receipt is asked for: anvil on loopback mines it at once, and
 * viem's default (4 s without a chain block time) left a settlement waiting seconds now and then.
 */
const RECEIPT_POLL_MS = 50;

/** A wallet client for one key on the ledger, with the public actions too (what x402's facilitator signer wants). */
export function walletOn(rpcUrl: string, account: PrivateKeyAccount) {
  return createWalletClient({
    account,
    chain: evmChain(rpcUrl),
    transport: http(rpcUrl),
    pollingInterval: RECEIPT_POLL_MS,
  }).extend(publicActions);
}
export type EvmWallet = ReturnType<typeof walletOn>;

export class EvmLedger {
  readonly public: PublicClient;
  private readonly state: StateFile;
  private readonly wallets = new Map<string, EvmWallet>();
  /** Per sending key, the end of its latest send (never rejected): the next one starts after it. */
  private readonly sending = new Map<string, Promise<unknown>>();
  /** keepTime's timer, and whether its check is running. */
  private clock: NodeJS.Timeout | undefined;
  private mining = false;

  constructor(
    readonly node: EvmNode,
    readonly keys: EvmKeys,
    statePath: string,
  ) {
    this.public = createPublicClient({
      chain: evmChain(node.rpcUrl),
      transport: http(node.rpcUrl),
      pollingInterval: RECEIPT_POLL_MS,
    });
    this.state = new StateFile(statePath, (method, params) => this.rpc(method, params));
  }

  get rpcUrl(): string {
    return this.node.rpcUrl;
  }

  /** A JSON-RPC call by name (anvil's own methods included). */
  rpc(method: string, params: unknown[]): Promise<unknown> {
    return this.public.request({ method: method as "eth_chainId", params: params as never });
  }

  wallet(account: PrivateKeyAccount): EvmWallet {
    let w = this.wallets.get(account.address);
    if (!w) this.wallets.set(account.address, (w = walletOn(this.rpcUrl, account)));
    return w;
  }

  /**
   * Runs `send` once every earlier send from the same key has finished. A key's transactions
   * take its account's nonces in turn: two prepared at once would be given the same nonce, and
   * the node would refuse the second ("nonce too low") — a valid payment left unsettled.
   */
  inTurn<T>(from: string, send: () => Promise<T>): Promise<T> {
    const mine = (this.sending.get(from) ?? Promise.resolve()).then(send);
    this.sending.set(
      from,
      mine.catch(() => undefined),
    );
    return mine;
  }

  /** Writes the chain's state to its file; resolves once a dump taken after this call is on disk. */
  persist(): Promise<void> {
    return this.state.persist();
  }

  async balanceOf(owner: string): Promise<bigint> {
    return this.public.readContract({
      address: EVM_USDC,
      abi: USDC_ABI,
      functionName: "balanceOf",
      args: [owner as Address],
    });
  }

  /** Whether an EIP-3009 authorization (authorizer, nonce) was used or cancelled on the chain. */
  async authorizationUsed(authorizer: string, nonce: string): Promise<boolean> {
    return this.public.readContract({
      address: EVM_USDC,
      abi: USDC_ABI,
      functionName: "authorizationState",
      args: [authorizer as Address, nonce as Hex],
    });
  }

  /** Sends a transaction that calls the token and waits for its receipt; throws when it reverts. */
  async callToken(
    from: PrivateKeyAccount,
    call: { functionName: "initialize" | "mint" | "transfer" | "transferWithAuthorization"; args: readonly unknown[] },
  ): Promise<Hex> {
    const wallet = this.wallet(from);
    const hash = await this.inTurn(from.address, () =>
      wallet.writeContract({
        address: EVM_USDC,
        abi: USDC_ABI,
        functionName: call.functionName,
        args: call.args as never,
      }),
    );
    const receipt = await this.public.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`${call.functionName} reverted in ${hash}`);
    return hash;
  }

  /**
   * Installs the contracts and funds the accounts, on a fresh chain: USDC's code at its address,
   * initialised by the minter (its storage set as a FiatToken proxy's is), gas for every key,
   * and the demo USDC minted. The caller persists the state afterwards.
   */
  async genesis(funding: Array<{ to: string; amount: bigint }>, gasFor: string[]): Promise<void> {
    await this.rpc("anvil_setCode", [EVM_USDC, CONTRACTS.SandboxUSDC.runtime]);
    await this.rpc("anvil_setCode", [MULTICALL3, CONTRACTS.SandboxMulticall.runtime]);
    const gas = `0x${GAS_FUNDING.toString(16)}`;
    for (const who of [...KEY_NAMES.map((k) => this.keys[k].address), ...gasFor]) {
      await this.rpc("anvil_setBalance", [who, gas]);
    }
    await this.callToken(this.keys.minter, {
      functionName: "initialize",
      args: [EVM_USDC_DOMAIN.name, "USDC", "USD", 6, this.keys.minter.address],
    });
    for (const { to, amount } of funding)
      await this.callToken(this.keys.minter, { functionName: "mint", args: [to, amount] });
  }

  /** Loads the chain from its state file, if it has one; false on a fresh chain. */
  async load(statePath: string): Promise<boolean> {
    const saved = readState(statePath);
    if (!saved) return false;
    const ok = await this.rpc("anvil_loadState", [saved]);
    if (ok !== true) throw new Error(`anvil could not load the EVM ledger's state from ${statePath}`);
    return true;
  }

  /**
   * Mines an empty block whenever the chain has gone `idleMs` without one (checked every
   * fifth of it): anvil mines only on a transaction, and a client concludes that an
   * authorization can never land only once the newest block's time is past its validBefore.
   * A chain with traffic gets no extra block; a quiet one gets one per `idleMs`, persisted.
   */
  keepTime(idleMs: number, log: (line: string) => void): void {
    if (this.clock) return;
    this.clock = setInterval(
      () =>
        void this.mineIfIdle(idleMs).catch((e: unknown) =>
          log(`EVM ledger: could not mine an idle block (${(e as Error).message})`),
        ),
      Math.max(50, Math.floor(idleMs / 5)),
    );
    this.clock.unref();
  }

  private async mineIfIdle(idleMs: number): Promise<void> {
    if (this.mining) return;
    this.mining = true;
    try {
      const newest = await this.public.getBlock({ blockTag: "latest" });
      if (Date.now() - Number(newest.timestamp) * 1000 < idleMs) return;
      await this.rpc("evm_mine", []);
      await this.persist();
    } finally {
      this.mining = false;
    }
  }

  async close(): Promise<void> {
    if (this.clock) clearInterval(this.clock);
    await this.node.stop();
  }
}

/** Starts the node for a home's EVM ledger (a stale one of the same home is killed first). */
export async function startEvmNode(o: {
  binary: string;
  pidFile: string;
  log: (line: string) => void;
  port?: number;
}): Promise<EvmNode> {
  return startNode({ ...o, chainId: EVM_CHAIN_ID });
}
