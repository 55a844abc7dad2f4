/**
 * The rails of one engine: one per network it pays on (Config.networks), in its order of
 * preference, each loaded on first use — its module, and the chain libraries with it, load
 * then, not with the engine. Here too, which rail pays what: a seller's 402 (the first entry
 * ours to pay, choose.ts), a service's challenge, a journaled payment (the rail of the
 * network it was signed for). The only module outside the rail folders that names them.
 */
import type { PaymentRequirements } from "../../domain/wire.js";
import type { Config } from "../config/config.js";
import { NETWORK_RAILS, networkName } from "../config/networks.js";
import { paidError } from "../errors.js";
import { describeAccept } from "../x402-http/challenge.js";
import { challengeNetwork, chooseRequirement } from "./choose.js";
import type { EvmChain } from "./evm/rpc.js";
import type { Rail, RailVerifier } from "./port.js";
import type { ChainPort } from "./solana/chain.js";

/** A seller's 402 read against our rails: the entry to pay and its rail, or what it offered and what we pay. */
export type Picked =
  | { ok: true; requirement: PaymentRequirements; rail: Rail }
  /** `feePayerOurs`: an entry would have been paid but names one of our keys as its fee payer (Rail.vet). */
  | { ok: false; offered: string[]; terms: string; feePayerOurs?: true };

export interface Rails {
  /** The networks paid on, CAIP-2 ids in order of preference. */
  readonly networks: readonly string[];
  /** The rail that pays on `network` (loaded on first use); config_invalid when none does. */
  rail(network: string): Promise<Rail>;
  /** The rail that follows a journaled payment: its network's (journaled without one: the Solana network's). */
  forPayment(p: { network?: string }): Promise<Rail>;
  /** The rail that checks a service's challenge (choose.ts challengeNetwork). */
  forChallenge(accepts: readonly PaymentRequirements[]): Promise<Rail>;
  /** The entry of a seller's 402 to pay (choose.ts chooseRequirement, each rail saying what it can pay). */
  pick(accepts: readonly PaymentRequirements[]): Promise<Picked>;
  /** Starts fetching each rail's next lifetime ahead (beside a quote or an unpaid request). */
  warm(): void;
}

export interface RailsDeps {
  now: () => number;
  /** The Solana rail's RPC reads, in place of the configured RPC's (tests script the chain with it). */
  solanaChain?: () => Promise<ChainPort>;
  /** The EVM rail's RPC reads, in place of the configured RPC's (tests script the chain with it). */
  evmChain?: () => Promise<EvmChain>;
}

/** The rail of one network, its module loaded now. */
async function loadRail(network: string, config: Config, deps: RailsDeps): Promise<Rail> {
  const kind = NETWORK_RAILS[network];
  if (kind === "solana") {
    const { createSolanaRail } = await import("./solana/rail.js");
    return createSolanaRail({
      network,
      mint: config.mint,
      ...(config.owner ? { owner: config.owner } : {}),
      walletPath: () => config.walletPath,
      rpcUrl: () => config.rpcUrl,
      now: deps.now,
      ...(deps.solanaChain ? { chain: deps.solanaChain } : {}),
    });
  }
  if (kind === "evm") {
    const { createEvmRail } = await import("./evm/rail.js");
    return createEvmRail({
      network,
      walletPath: () => config.evmWalletPath,
      rpcUrl: () => config.evmRpcUrl,
      now: deps.now,
      ...(deps.evmChain ? { chain: deps.evmChain } : {}),
    });
  }
  // The configuration refuses a network no built rail pays on (config/networks.ts).
  throw new Error(`${network} is not a network this server knows`);
}

const notListed = (network: string) =>
  paidError("config_invalid", {
    issues: [
      {
        key: "PAID_ACTIONS_NETWORKS",
        message: `does not name ${networkName(network)}: nothing there is paid or followed`,
      },
    ],
  });

/**
 * The rails for `config` (its networks; its wallets, owner and RPCs read when first needed:
 * the embedded sandbox may still move them).
 */
export function createRails(config: Config, deps: RailsDeps): Rails {
  const networks = [...config.networks];
  const loaded = new Map<string, Promise<Rail>>();
  const rail = (network: string): Promise<Rail> => {
    if (!networks.includes(network)) return Promise.reject(notListed(network));
    let loading = loaded.get(network);
    if (!loading) {
      loading = loadRail(network, config, deps).catch((e: unknown) => {
        loaded.delete(network); // a failed load is tried again on the next use
        throw e;
      });
      loaded.set(network, loading);
    }
    return loading;
  };
  return {
    networks,
    rail,
    // Payments journaled before networks were recorded were made on the Solana network configured.
    forPayment: (p) => rail(p.network ?? config.network),
    forChallenge: (accepts) => rail(challengeNetwork(accepts, networks) ?? config.network),
    async pick(accepts) {
      const rails = await Promise.all(networks.map(rail));
      const railOf = new Map(rails.map((r) => [r.network, r]));
      // The one order (choose.ts); an entry a rail accepts is vetted by its rules that need the key
      // (Rail.vet) only when it is the next candidate, so a rail is keyed only for what it would pay.
      const vetted = new Set<PaymentRequirements>();
      let feePayerOurs = false;
      for (;;) {
        const next = chooseRequirement(accepts, networks, (r) => !vetted.has(r) && !!railOf.get(r.network)?.accepts(r));
        const on = next && railOf.get(next.network);
        if (!next || !on) break;
        if ((await on.vet(next)) !== "fee_payer") return { ok: true, requirement: next, rail: on };
        vetted.add(next);
        feePayerOurs = true;
      }
      const terms = rails.map((r) => r.terms).join(" or ");
      return {
        ok: false,
        offered: accepts.map(describeAccept),
        terms,
        ...(feePayerOurs ? { feePayerOurs: true } : {}),
      };
    },
    warm() {
      for (const network of networks)
        rail(network).then(
          (r) => r.warm(),
          () => undefined, // a rail that does not load fails the call that needs it
        );
    },
  };
}

/** Rails for an engine that pays nothing (a command that only reads or approves): every use is refused. */
export function noRails(refusal: () => Error): Rails {
  const refuse = () => Promise.reject(refusal());
  return { networks: [], rail: refuse, forPayment: refuse, forChallenge: refuse, pick: refuse, warm: () => undefined };
}

/**
 * The checks a receipt's network needs of its rail (rails/port.ts RailVerifier), with no
 * key and no configuration: for `receipt verify`, which may run anywhere. Undefined for a
 * network no rail of this build knows.
 */
export async function railVerifier(network: string): Promise<RailVerifier | undefined> {
  const kind = NETWORK_RAILS[network];
  if (kind === "solana") return (await import("./solana/verify.js")).solanaVerifier;
  if (kind === "evm") return (await import("./evm/verify.js")).evmVerifier;
  return undefined;
}

/**
 * The EIP-712 recovery of the first rail of this build that has one (for a seller's offers
 * and receipts signed in x402's `eip712` format): the EVM rail's (the Solana rail has none).
 */
export async function typedDataRecovery(): Promise<RailVerifier["recoverTypedData"]> {
  for (const network of Object.keys(NETWORK_RAILS)) {
    const v = await railVerifier(network);
    if (v?.recoverTypedData) return v.recoverTypedData.bind(v);
  }
  return undefined;
}
