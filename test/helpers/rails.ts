/**
 * The rails a hostile suite runs on (issue 31 stage 3), as one small fixture each: how an
 * engine is told to pay on it, which sandbox it needs, whose balances move and how they are
 * read from that rail's own ledger (Solana: the sandbox's RPC, the token account's balance;
 * EVM: the sandbox's anvil RPC, USDC's `balanceOf`), which entry of a quote's `accepts` is
 * ours, and the values a lying service drifts to. A suite does `describe.each(RAILS)` and
 * keeps its assertions one text for both rails.
 */
import { createPublicClient, http, parseAbi, type Address, type PublicClient } from "viem";
import { BASE_MAINNET, BASE_SEPOLIA, EVM_USDC, SOLANA_DEVNET, SOLANA_MAINNET } from "../../src/domain/networks.js";
import type { SandboxOptions } from "../../src/sandbox/index.js";
import { refundTransferWire } from "../../src/sandbox/ledger/chain.js";
import { rpcCall, type TestSandbox } from "./sandbox.js";

const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);

/** One public client per anvil RPC (the sandboxes of one test file). */
const clients = new Map<string, PublicClient>();
const evmClient = (rpcUrl: string): PublicClient => {
  let c = clients.get(rpcUrl);
  if (!c) clients.set(rpcUrl, (c = createPublicClient({ transport: http(rpcUrl) })));
  return c;
};

/** A requirement as the v1 service and sellers write it (loosely typed: lying proxies rewrite it). */
export interface Accepted {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

export interface RailFixture {
  /** "solana" or "evm": the name the suites' tests carry. */
  name: "solana" | "evm";
  /** What startTestSandbox needs for it (EVM: the anvil ledger). */
  sandbox: Partial<SandboxOptions>;
  /** The CAIP-2 network paid on. */
  network: string;
  /** The engine env (on top of serviceEnv) that pays on this rail only. */
  env(t: TestSandbox): Record<string, string>;
  /** Whose USDC a payment moves: the demo wallet (Solana's own-account mode) or the agent's EVM key. */
  payer(t: TestSandbox): string;
  /** The v1 service's payee on this rail. */
  treasury(t: TestSandbox): string;
  /** The payee of the sandbox's own x402 resources on this rail. */
  seller(t: TestSandbox): string;
  /** An owner's atomic USDC on this rail's ledger, read over its RPC. */
  balance(t: TestSandbox, owner: string): Promise<bigint>;
  /** Our entry of a quote's or a 402's `accepts` (the one on this rail's network). */
  ours(accepts: Accepted[]): Accepted;
  /** What a lying service swaps in: another USDC of the family, another network of it, another payee. */
  drift: { asset: string; network: string; payee: string };
  /** The settlement transaction's shape on this ledger. */
  tx: RegExp;
  /**
   * Makes a proof (base64 x402 payload) unable to land from now on, as time passing would.
   * Solana: the ledger's blockhash moves on. EVM: 3 s after the call (the proof was just
   * signed), a block is mined at the authorization's validBefore, so that the next proof,
   * valid as long from later, can still land on a chain whose clock now runs ahead. Anvil's
   * clock never goes back: on EVM, give the test a sandbox of its own.
   */
  expire(t: TestSandbox, proof: string): Promise<void>;
  /** Whether `expire` moves the ledger's clock for good (EVM: give the test a sandbox of its own). */
  expiryMovesClock: boolean;
  /** Sends `amount` from the v1 treasury back to the payer on this ledger, as a refund would; its transaction. */
  refund(t: TestSandbox, amount: bigint): Promise<string>;
}

/** A proof's EIP-3009 authorization (EVM), as the payload carries it. */
export function authorizationOf(proof: string): {
  from: string;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
} {
  const a = JSON.parse(Buffer.from(proof, "base64").toString("utf8")).payload.authorization;
  return { from: a.from, nonce: a.nonce, validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore) };
}

const oursOn =
  (network: string) =>
  (accepts: Accepted[]): Accepted => {
    const a = accepts.find((x) => x.network === network);
    if (!a) throw new Error(`no entry on ${network} in ${JSON.stringify(accepts.map((x) => x.network))}`);
    return a;
  };

export const SOLANA: RailFixture = {
  name: "solana",
  sandbox: {},
  network: SOLANA_DEVNET,
  env: () => ({}),
  payer: (t) => t.wallet.address,
  treasury: (t) => t.sb.keys.treasury.address,
  seller: (t) => t.sb.keys.seller.address,
  balance: (t, owner) => t.usdc(owner),
  ours: oursOn(SOLANA_DEVNET),
  drift: {
    asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", // mainnet USDC
    network: SOLANA_MAINNET,
    payee: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
  },
  tx: /^[1-9A-HJ-NP-Za-km-z]{64,90}$/,
  expire: async (t) => t.sb.ledger.rotateBlockhash(),
  expiryMovesClock: false,
  async refund(t, amount) {
    const sent = t.sb.ledger.submit(
      await refundTransferWire(t.sb.ledger, t.sb.keys, t.sb.asset, t.wallet.address, amount),
    );
    if (!sent.ok) throw new Error(`the refund transfer failed: ${sent.error}`);
    return sent.signature;
  },
};

const evm = (t: TestSandbox) => {
  if (!t.sb.evm || !t.sb.evmLedger) throw new Error("the EVM rail needs a sandbox started with evm: true");
  return { info: t.sb.evm, ledger: t.sb.evmLedger, keys: t.sb.evmLedger.keys };
};

export const EVM: RailFixture = {
  name: "evm",
  sandbox: { evm: true },
  network: BASE_SEPOLIA,
  env: (t) => ({
    PAID_ACTIONS_NETWORKS: "base-sepolia",
    PAID_ACTIONS_NETWORK: "",
    PAID_ACTIONS_EVM_WALLET: evm(t).info.agentKeyPath,
    PAID_ACTIONS_EVM_RPC_URL: evm(t).info.rpcUrl,
  }),
  payer: (t) => evm(t).info.agentAddress,
  treasury: (t) => evm(t).keys.treasury.address,
  seller: (t) => evm(t).keys.seller.address,
  balance: (t, owner) =>
    evmClient(evm(t).info.rpcUrl).readContract({
      address: evm(t).info.asset as Address,
      abi: ERC20,
      functionName: "balanceOf",
      args: [owner as Address],
    }),
  ours: oursOn(BASE_SEPOLIA),
  drift: {
    asset: EVM_USDC[BASE_MAINNET]!.address, // another ERC-20 contract than this chain's USDC
    network: BASE_MAINNET,
    payee: "0x000000000000000000000000000000000000dEaD",
  },
  tx: /^0x[0-9a-f]{64}$/,
  async expire(t, proof) {
    // The proof was signed a moment ago: 3 s on, the chain's jump to its validBefore leaves the
    // next proof (valid as long, from later) room to land.
    await new Promise((r) => setTimeout(r, 3_000));
    await mineAt(t, authorizationOf(proof).validBefore);
  },
  expiryMovesClock: true,
  refund: (t, amount) =>
    evm(t).ledger.callToken(evm(t).keys.treasury, {
      functionName: "transfer",
      args: [evm(t).info.agentAddress, amount],
    }),
};

/** Both rails, Solana first: `describe.each(RAILS)("... on $name", (rail) => ...)`. */
export const RAILS: readonly RailFixture[] = [SOLANA, EVM];

/** The payer's and the payee's balances on a rail's ledger, read together. */
export async function balances(rail: RailFixture, t: TestSandbox, payee = rail.treasury(t)) {
  const [payer, to] = await Promise.all([rail.balance(t, rail.payer(t)), rail.balance(t, payee)]);
  return { payer, payee: to };
}

/**
 * What moved since `before`, read from the ledger (not the journal): how much left the payer
 * and how much reached the payee. One debit per intent is `{payer: price, payee: price}`.
 */
export async function moved(
  rail: RailFixture,
  t: TestSandbox,
  before: { payer: bigint; payee: bigint },
  payee = rail.treasury(t),
): Promise<{ payer: bigint; payee: bigint }> {
  const now = await balances(rail, t, payee);
  return { payer: before.payer - now.payer, payee: now.payee - before.payee };
}

/**
 * Mines one block at `timestamp` (unix seconds) on the sandbox's anvil, through its RPC: anvil
 * mines only when a transaction arrives, so a test that needs the chain's time to pass moves it.
 * Anvil never goes back: later blocks follow on from there.
 */
export async function mineAt(t: TestSandbox, timestamp: bigint): Promise<void> {
  await rpcCall(evm(t).info.rpcUrl, "evm_setNextBlockTimestamp", [`0x${timestamp.toString(16)}`]);
  await rpcCall(evm(t).info.rpcUrl, "evm_mine", []);
}

/** Whether an EIP-3009 authorization's nonce is used (or canceled) on the sandbox's anvil. */
export async function authorizationUsed(t: TestSandbox, authorizer: string, nonce: string): Promise<boolean> {
  return t.sb.evmLedger!.authorizationUsed(authorizer, nonce);
}
