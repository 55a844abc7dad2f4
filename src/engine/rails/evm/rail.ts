/**
 * The EVM rail (rails/port.ts): x402 "exact" on one EVM chain, in x402's default USDC there —
 * an EIP-3009 transferWithAuthorization signed by the agent key (sign.ts), its lifetime and
 * nonce ours (rules.ts), the key's own balance the ceiling the chain enforces (EIP-3009 has
 * no delegate), and the truth about that money from the user's own EVM RPC (truth.ts,
 * history.ts over rpc.ts). The key and the RPC load on first use, each once (a failed load
 * is tried again on the next use).
 */
import { randomBytes } from "node:crypto";
import { getAddress } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { formatDecimal } from "../../../domain/money.js";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { checkChallengeWith } from "../../budget/policy.js";
import { networkName } from "../../config/networks.js";
import { paidError } from "../../errors.js";
import type { Rail } from "../port.js";
import { usdcOn, type EvmUsdc } from "./assets.js";
import { scanEvmHistory } from "./history.js";
import { loadEvmKey } from "./key.js";
import { evmReceipts } from "./receipts.js";
import { createEvmChain, type EvmChain } from "./rpc.js";
import { evmChecks, unpayable, validityWindow, VALIDITY_BOUND_S } from "./rules.js";
import { signAuthorization } from "./sign.js";
import { evmTruth } from "./truth.js";
import { once } from "../once.js";

export interface EvmRailOptions {
  /** The chain (CAIP-2), which fixes its USDC. */
  network: string;
  /** The agent's EVM key file, read when the key is first needed. */
  walletPath: () => string | undefined;
  /** Our EVM RPC, read for every request (the embedded sandbox's may move). */
  rpcUrl: () => string | undefined;
  now: () => number;
  /** RPC reads to use instead of the configured RPC's (tests script the chain with it). */
  chain?: () => Promise<EvmChain>;
  /** Randomness for nonces (default: node:crypto). */
  random?: (bytes: number) => Uint8Array;
  /** Our bound on an authorization's validity, seconds (default VALIDITY_BOUND_S). */
  validityBoundS?: number;
}

/** What the rail's parts share: its settings, its USDC, its key and RPC (loaded on first use). */
export interface EvmDeps {
  o: EvmRailOptions;
  usdc: EvmUsdc;
  key: () => Promise<PrivateKeyAccount>;
  chain: () => Promise<EvmChain>;
}

const needs = (key: string, what: string) => paidError("config_invalid", { issues: [{ key, message: what }] });

function depsOf(o: EvmRailOptions): EvmDeps {
  const usdc = usdcOn(o.network);
  const key = once(async () => {
    const path = o.walletPath();
    if (!path) throw needs("PAID_ACTIONS_EVM_WALLET", "names no EVM key file: there is no key to pay with");
    return loadEvmKey(path);
  });
  const rpcUrl = () => {
    const url = o.rpcUrl();
    if (!url) throw needs("PAID_ACTIONS_EVM_RPC_URL", "names no EVM RPC: the chain cannot be read");
    return url;
  };
  const chain = once<EvmChain>(
    o.chain ??
      (async () => {
        rpcUrl();
        return createEvmChain(rpcUrl, usdc.address);
      }),
  );
  return { o, usdc, key, chain };
}

/** How long a balance read is counted down before it is read again (as the Solana allowance's). */
const BALANCE_CACHE_MS = 5_000;

type Paying = Omit<
  Rail,
  "kind" | "network" | "terms" | "fate" | "verifySettlement" | "refundInflow" | "watch" | "evidence" | "signReceipt"
>;

/**
 * The ceiling before signing: the key's own balance (EIP-3009 has no delegate), read through
 * our RPC and counted down per price admitted until it is read again; a price it cannot
 * cover is refused unsigned (`balance_insufficient`).
 */
function balanceGate(d: EvmDeps): (amount: bigint) => Promise<void> {
  const { o, key, chain } = d;
  let cached: { left: bigint; at: number } | undefined;
  return async (amount) => {
    const wallet = (await key()).address;
    if (cached && o.now() - cached.at < BALANCE_CACHE_MS && cached.left >= amount) {
      cached.left -= amount;
      return;
    }
    let left: bigint;
    try {
      left = await (await chain()).balance(wallet);
    } catch (e) {
      cached = undefined;
      const detail = (e as Error).message.slice(0, 200);
      throw paidError("payment_failed", { problem: "rpc", what: "balance", network: o.network, detail });
    }
    if (left < amount) {
      cached = undefined;
      throw paidError("balance_insufficient", {
        wallet,
        network: networkName(o.network),
        balance: formatDecimal(left),
        amount: formatDecimal(amount),
      });
    }
    cached = { left: left - amount, at: o.now() };
  };
}

/** The port's checks, ceiling, lifetime, signature and history read, on EVM. */
function paying(d: EvmDeps): Paying {
  const { o, usdc, key, chain } = d;
  const random = o.random ?? ((n: number) => randomBytes(n));
  return {
    accepts: (r) => unpayable(r, o.network, usdc) === undefined,
    // The facilitator submits the authorization and pays the gas: no fee payer of ours to refuse.
    vet: async () => undefined,
    async check(priced, accepts, now) {
      return checkChallengeWith(priced, accepts, evmChecks(priced, o.network, usdc), now);
    },
    admit: balanceGate(d),
    async ceiling() {
      const wallet = (await key()).address;
      return { kind: "balance", left: await (await chain()).balance(wallet), account: wallet };
    },
    warm: () => undefined, // the lifetime comes from the clock: nothing to fetch
    async lifetime(requirement) {
      const window = validityWindow(o.now(), requirement.maxTimeoutSeconds, o.validityBoundS ?? VALIDITY_BOUND_S);
      const nonce = `0x${Buffer.from(random(32)).toString("hex")}`;
      return { rail: "evm", ...window, nonce };
    },
    dropLifetime: () => undefined, // every proof has its own nonce and bound: nothing is held
    async sign(requirement: PaymentRequirements, lifetime, opts) {
      if (lifetime.rail !== "evm") throw new Error("an EVM proof is signed with an EVM lifetime");
      const account = await key();
      let proof: string;
      try {
        proof = await signAuthorization(account, requirement, usdc, lifetime, opts);
      } catch (e) {
        const detail = (e as Error).message.slice(0, 300);
        throw paidError("payment_failed", { problem: "build", detail, network: o.network });
      }
      const record = {
        network: o.network,
        payer: account.address,
        mint: usdc.address,
        source: account.address,
        blockhash: null,
        lastValidHeight: null,
        payee: getAddress(requirement.payTo),
        nonce: lifetime.nonce,
        validAfter: lifetime.validAfter,
        validBefore: lifetime.validBefore,
      };
      return { proof, record };
    },
    async account() {
      const wallet = (await key()).address;
      return { wallet, account: wallet, asset: usdc.address };
    },
    async scanHistory(fromMs, opts) {
      const wallet = (await key()).address;
      return scanEvmHistory(await chain(), wallet, usdc.address, fromMs, opts);
    },
  };
}

export function createEvmRail(o: EvmRailOptions): Rail {
  const d = depsOf(o);
  return {
    kind: "evm",
    network: o.network,
    terms: `exact on ${o.network} in USDC ${d.usdc.address}`,
    ...paying(d),
    ...evmTruth(d),
    ...evmReceipts(d),
  };
}
