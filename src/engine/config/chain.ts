/**
 * The configuration of the chains: the Solana RPC we trust about money (`SOLANA_RPC_URL` /
 * `rpcUrl`), the Solana cluster payments are made on (`PAID_ACTIONS_NETWORK` / `network`,
 * which fixes the USDC mint), the EVM rail's key and RPC (`PAID_ACTIONS_EVM_WALLET` /
 * `evmWallet`, `PAID_ACTIONS_EVM_RPC_URL` / `evmRpcUrl`), and the networks paid on in order of
 * preference (`PAID_ACTIONS_NETWORKS` / `networks`: networks.ts says what a list may hold).
 */
import { resolve } from "node:path";
import { resolveNetwork, SOLANA_DEVNET, SOLANA_MAINNET } from "../../domain/networks.js";
import type { Config } from "./config.js";
import type { FetchReader } from "./fetching.js";
import { resolveNetworks } from "./networks.js";
import { checkSecureUrl } from "./urls.js";

export const CHAIN_ENV = {
  rpcUrl: "SOLANA_RPC_URL",
  network: "PAID_ACTIONS_NETWORK",
  networks: "PAID_ACTIONS_NETWORKS",
  evmWallet: "PAID_ACTIONS_EVM_WALLET",
  evmRpcUrl: "PAID_ACTIONS_EVM_RPC_URL",
} as const;

const DEFAULT_RPC: Record<string, string> = {
  [SOLANA_MAINNET]: "https://api.mainnet-beta.solana.com",
  [SOLANA_DEVNET]: "https://api.devnet.solana.com",
};

/** The EVM rail's key file and RPC, as configured (the embedded sandbox gives its own in sandbox mode). */
function evmOf(r: FetchReader) {
  const [walletRaw] = r.pick(CHAIN_ENV.evmWallet, r.file.evmWallet, "evmWallet");
  const [rpcRaw, rpcKey] = r.pick(CHAIN_ENV.evmRpcUrl, r.file.evmRpcUrl, "evmRpcUrl");
  // As SOLANA_RPC_URL: it decides whether a refused payment may be signed again, and its path
  // or query may carry a provider's API key (kept out of every message).
  if (rpcRaw !== undefined) checkSecureUrl(rpcRaw, rpcKey, r.issues);
  return {
    ...(walletRaw ? { evmWalletPath: resolve(walletRaw) } : {}),
    ...(rpcRaw !== undefined ? { evmRpcUrl: rpcRaw } : {}),
  };
}

/** The chain: the RPCs we trust about money, the Solana cluster (which fixes the USDC mint), the EVM key, the networks paid on. */
export function chainOf(r: FetchReader, mode: Config["mode"]) {
  const [rpcRaw, rpcKey] = r.pick(CHAIN_ENV.rpcUrl, r.file.rpcUrl, "rpcUrl");
  // The RPC node decides whether a refused payment may be signed again, so it gets the
  // base URL's transport rule; its path and query may carry a provider's API key.
  if (rpcRaw !== undefined) checkSecureUrl(rpcRaw, rpcKey, r.issues);
  const [networkRaw, networkKey] = r.pick(CHAIN_ENV.network, r.file.network, "network");
  let named: string | undefined;
  if (networkRaw !== undefined) {
    const resolved = resolveNetwork(networkRaw.trim());
    if (!resolved) {
      r.issues.push({
        key: networkKey,
        message: `${JSON.stringify(networkRaw)} is not a known network; use solana, solana-devnet or a CAIP-2 id such as ${SOLANA_MAINNET}`,
      });
    } else if (mode === "sandbox" && resolved !== SOLANA_DEVNET) {
      r.issues.push({
        key: networkKey,
        message: `the embedded sandbox emulates solana-devnet; unset it, or set PAID_ACTIONS_BASE_URL to a service on ${resolved}`,
      });
    } else named = resolved;
  }
  const evm = evmOf(r);
  const fileList = r.file.networks;
  const [listRaw, listKey] = r.pick(
    CHAIN_ENV.networks,
    typeof fileList === "string" ? fileList : fileList?.join(","),
    "networks",
  );
  const defaultSolana = mode === "sandbox" ? SOLANA_DEVNET : SOLANA_MAINNET;
  const paid = resolveNetworks({
    list: listRaw,
    solana: named,
    defaultSolana,
    mode,
    evm: { wallet: evm.evmWalletPath !== undefined, rpcUrl: evm.evmRpcUrl !== undefined },
  });
  if (!paid.ok) for (const message of paid.problems) r.issues.push({ key: listKey, message });
  const network = paid.ok ? paid.solana : (named ?? defaultSolana);
  return {
    rpcUrl: rpcRaw ?? (mode === "service" ? DEFAULT_RPC[network] : undefined),
    network,
    networkExplicit: networkRaw !== undefined || (paid.ok && paid.fromList),
    networks: paid.ok ? paid.networks : [network],
    ...evm,
  };
}
