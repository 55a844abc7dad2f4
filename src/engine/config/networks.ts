/**
 * Which networks this server pays on (PAID_ACTIONS_NETWORKS, config `networks`), in order of
 * preference, as pure functions of the settings: the names a person may write, the rail each
 * network belongs to, and the rules a list must keep. Table-tested (config-networks.test.ts).
 *
 * PAID_ACTIONS_NETWORK (one Solana network) keeps working as it always has: without a list,
 * the list is that one network. With both, they must agree on the Solana network.
 *
 * An EVM network in the list needs its key and RPC (PAID_ACTIONS_EVM_WALLET,
 * PAID_ACTIONS_EVM_RPC_URL); in sandbox mode the embedded sandbox gives both for
 * base-sepolia, which its EVM ledger emulates. A list that cannot be paid as written is a
 * configuration issue (fail closed, naming the key), never quietly narrowed — a person who
 * lists Base expects Base sellers to be paid, and must hear when they will not be.
 */
import { BASE_MAINNET, BASE_SEPOLIA, SOLANA_DEVNET, SOLANA_MAINNET } from "../../domain/networks.js";

export { BASE_MAINNET, BASE_SEPOLIA } from "../../domain/networks.js";

/** The short names a list may use (x402 v1's), and the CAIP-2 id each stands for. */
export const NETWORK_SHORT_NAMES: Readonly<Record<string, string>> = {
  solana: SOLANA_MAINNET,
  "solana-devnet": SOLANA_DEVNET,
  base: BASE_MAINNET,
  "base-sepolia": BASE_SEPOLIA,
};

/** The rail each network this server knows is paid on. */
export const NETWORK_RAILS: Readonly<Record<string, "solana" | "evm">> = {
  [SOLANA_MAINNET]: "solana",
  [SOLANA_DEVNET]: "solana",
  [BASE_MAINNET]: "evm",
  [BASE_SEPOLIA]: "evm",
};

/** The rails built into this server: a network of another rail cannot be paid on. */
export const BUILT_RAILS: readonly ("solana" | "evm")[] = ["solana", "evm"];

/** A network's short name when it has one (for messages), else its CAIP-2 id. */
export function networkName(caip2: string): string {
  return Object.entries(NETWORK_SHORT_NAMES).find(([, id]) => id === caip2)?.[0] ?? caip2;
}

/** The CAIP-2 id a short name or a known CAIP-2 id stands for; undefined when this server does not know it. */
export function resolveAnyNetwork(name: string): string | undefined {
  const caip2 = NETWORK_SHORT_NAMES[name] ?? name;
  return NETWORK_RAILS[caip2] ? caip2 : undefined;
}

/** The entries of a list as written: a comma-separated string, or an array (the file's). */
export function listEntries(raw: string | readonly string[]): string[] {
  return (typeof raw === "string" ? raw.split(",") : raw).map((s) => s.trim()).filter(Boolean);
}

export interface NetworksInput {
  /** PAID_ACTIONS_NETWORKS / `networks`, as written (undefined: not set). */
  list: string | readonly string[] | undefined;
  /** The Solana network PAID_ACTIONS_NETWORK / `network` names, resolved (undefined: not set, or not valid). */
  solana: string | undefined;
  /** The Solana network used when neither names one: devnet in sandbox mode, mainnet with a service. */
  defaultSolana: string;
  mode: "sandbox" | "service";
  /**
   * What the EVM rail is given (PAID_ACTIONS_EVM_WALLET, PAID_ACTIONS_EVM_RPC_URL); in sandbox
   * mode the embedded sandbox gives both (absent: neither is set).
   */
  evm?: { wallet: boolean; rpcUrl: boolean };
}

export type NetworksResult =
  | {
      ok: true;
      /** CAIP-2 ids, in order of preference. */
      networks: string[];
      /** The one Solana network among them (the Solana rail's cluster, its USDC mint and RPC). */
      solana: string;
      /** Whether the list named the Solana network (PAID_ACTIONS_NETWORK did not). */
      fromList: boolean;
    }
  | { ok: false; problems: string[] };

const KNOWN = "solana, solana-devnet, base, base-sepolia or a CAIP-2 id such as " + SOLANA_MAINNET;

/**
 * The networks to pay on, or every problem with the list: a name this server does not know,
 * a network named twice, two Solana networks (SOLANA_RPC_URL serves one cluster), two EVM
 * networks (PAID_ACTIONS_EVM_RPC_URL serves one chain), a network of a rail this build does
 * not have, an EVM network without its key or RPC, a Solana network other than
 * PAID_ACTIONS_NETWORK's, and (in sandbox mode) networks other than the ones the sandbox
 * emulates: solana-devnet and base-sepolia.
 */
export function resolveNetworks(i: NetworksInput): NetworksResult {
  if (i.list === undefined) {
    const solana = i.solana ?? i.defaultSolana;
    return { ok: true, networks: [solana], solana, fromList: false };
  }
  const problems: string[] = [];
  const entries = listEntries(i.list);
  if (entries.length === 0) problems.push("lists no network; name at least one, such as solana");
  const networks: string[] = [];
  for (const entry of entries) {
    const caip2 = resolveAnyNetwork(entry);
    if (caip2 === undefined)
      problems.push(`${JSON.stringify(entry.slice(0, 60))} is not a known network; use ${KNOWN}`);
    else if (networks.includes(caip2)) problems.push(`names ${networkName(caip2)} twice`);
    else networks.push(caip2);
  }
  const solanas = networks.filter((n) => NETWORK_RAILS[n] === "solana");
  if (solanas.length > 1)
    problems.push(
      `names ${solanas.map(networkName).join(" and ")}: one Solana network at a time (SOLANA_RPC_URL serves one cluster)`,
    );
  const evms = networks.filter((n) => NETWORK_RAILS[n] === "evm");
  if (evms.length > 1)
    problems.push(
      `names ${evms.map(networkName).join(" and ")}: one EVM network at a time (PAID_ACTIONS_EVM_RPC_URL serves one chain)`,
    );
  for (const n of networks) {
    const rail = NETWORK_RAILS[n]!;
    if (!BUILT_RAILS.includes(rail))
      problems.push(`names ${networkName(n)} (${n}): this build has no ${rail} rail, so nothing would be paid there`);
  }
  for (const n of evms) problems.push(...evmProblems(n, i));
  const listed = solanas[0];
  if (i.solana !== undefined && listed !== i.solana)
    problems.push(
      listed === undefined
        ? `does not name ${networkName(i.solana)}, the Solana network PAID_ACTIONS_NETWORK names; name it, or unset PAID_ACTIONS_NETWORK`
        : `names ${networkName(listed)}, but PAID_ACTIONS_NETWORK names ${networkName(i.solana)}; make them agree, or unset PAID_ACTIONS_NETWORK`,
    );
  if (i.mode === "sandbox" && listed !== undefined && listed !== SOLANA_DEVNET)
    problems.push(
      `names ${networkName(listed)}: the embedded sandbox emulates solana-devnet; name solana-devnet, or set PAID_ACTIONS_BASE_URL to a service on ${listed}`,
    );
  if (problems.length > 0) return { ok: false, problems };
  // A list without a Solana network pays on EVM alone; the Solana settings still name a cluster.
  return { ok: true, networks, solana: listed ?? i.solana ?? i.defaultSolana, fromList: listed !== undefined };
}

/** What keeps an EVM network of the list from being paid: the sandbox's chain only in sandbox mode, else its key and RPC. */
function evmProblems(network: string, i: NetworksInput): string[] {
  if (i.mode === "sandbox")
    return network === BASE_SEPOLIA
      ? []
      : [
          `names ${networkName(network)}: the embedded sandbox emulates base-sepolia; name base-sepolia, or set PAID_ACTIONS_BASE_URL to a service on ${network}`,
        ];
  const missing = [
    ...(i.evm?.wallet ? [] : ["PAID_ACTIONS_EVM_WALLET"]),
    ...(i.evm?.rpcUrl ? [] : ["PAID_ACTIONS_EVM_RPC_URL"]),
  ];
  return missing.length === 0
    ? []
    : [
        `names ${networkName(network)} (${network}), an EVM network: paying there needs ${missing.join(" and ")} (the agent's EVM key file and an RPC of that chain)`,
      ];
}
