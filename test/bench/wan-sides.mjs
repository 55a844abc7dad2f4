// The two sides of the WAN section (wan.mjs) on each rail, each pointed at the proxy's lane of
// its own: the MCP server over stdio, configured as a real service (its URLs through the
// proxy, not sandbox mode), and the stock x402 client of the rail.
//   Solana: `servers_provision` against `@x402/fetch` + `@x402/svm` paying POST /executions
//           (402, pay, retry), the RPC of both the sandbox's /solana.
//   EVM:    `paid_fetch` of the sandbox's paid resource on eip155:84532
//           (PAID_ACTIONS_NETWORKS=base-sepolia, PAID_ACTIONS_EVM_WALLET / _EVM_RPC_URL) against
//           `@x402/fetch` + `@x402/evm` (ExactEvmScheme with a viem account from the agent's
//           EVM key) paying the same URL; the RPC of both the sandbox's EVM ledger (anvil).
// A rail is `{ name, network(info), labels, upstreams(info) ([{name, url}]), mcpSide(svc, proxy), peerSide(svc,
// proxy) }`; a side is `{ once(), sample(samples), close?() }`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { INPUT, loadWallet, mcpClient, serviceEnv, timed, work } from "./common.mjs";

/** The sandbox's paid resource both EVM sides buy (0.001 USDC). */
const EVM_RESOURCE = "/x402/weather?city=Porto";
const EVM_NETWORK = "eip155:84532";

/** The MCP server over stdio with `env`, each paid call `call(client)`; `once` throws on a refusal. */
async function mcpSide(env, call) {
  const { client } = await mcpClient(env);
  await client.listTools();
  const once = () => call(client);
  return {
    once,
    // No retry here: the engine re-signs a proof whose blockhash expired by itself, in the call.
    sample: async (samples) => {
      const t0 = performance.now();
      await once();
      samples.push(performance.now() - t0);
    },
    close: () => client.close(),
  };
}

/** The sandbox's info with its API and Solana RPC as the lane's client must see them. */
const through = (proxy, lane, info) => ({
  ...info,
  baseUrl: proxy.url(lane, info.baseUrl),
  rpcUrl: proxy.url(lane, info.rpcUrl),
});

const refused = (r) => new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);

export const SOLANA_RAIL = {
  name: "solana-devnet",
  network: (info) => info.network,
  labels: { mcp: "MCP server over stdio (SQLite journal)", peer: "peer (@x402/fetch + @x402/svm)" },
  upstreams: (info) => [{ name: "service and its Solana RPC", url: info.baseUrl }],
  mcpSide: (svc, proxy) =>
    mcpSide(serviceEnv(through(proxy, "mcp", svc.info), join(work, "wan-home")), async (client) => {
      const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
      if (r.isError) throw refused(r);
    }),
  /** The stock x402 client paying POST /executions (402, pay, retry) on the proxy's peer lane. */
  peerSide: async (svc, proxy) => {
    const wallet = await loadWallet(svc.info.walletPath);
    const peerClient = new x402Client();
    peerClient.register("solana:*", new ExactSvmScheme(wallet, { rpcUrl: proxy.url("peer", svc.info.rpcUrl) }));
    const paidFetch = wrapFetchWithPayment(fetch, peerClient);
    const url = `${proxy.url("peer", svc.info.baseUrl)}/executions`;
    const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
    let k = 0;
    const once = async () => {
      const res = await paidFetch(url, {
        method: "POST",
        headers: { ...headers, "idempotency-key": `wan-peer-${process.pid}-${k++}` },
        body: JSON.stringify({ action: "servers.provision", input: INPUT }),
      });
      if (res.status !== 201) throw new Error(`peer ${res.status}: ${await res.text()}`);
      await res.text();
    };
    // A proof signed just before the ledger's blockhash moved on is refused: signed again, as
    // paid-call.mjs does, timing only the attempt that paid (see timed() in common.mjs).
    return { once: () => timed(once), sample: (samples) => timed(once, samples) };
  },
};

/**
 * The MCP server's environment to pay on EVM alone as a service would (not sandbox mode): the
 * sandbox's agent EVM key, `rpcUrl` its EVM RPC, `origin` the one origin it may pay.
 */
export function evmServiceEnv(info, home, { origin, rpcUrl }) {
  return serviceEnv(info, home, {
    PAID_ACTIONS_NETWORKS: "base-sepolia",
    PAID_ACTIONS_NETWORK: "",
    PAID_ACTIONS_EVM_WALLET: info.evm.agentKeyPath,
    PAID_ACTIONS_EVM_RPC_URL: rpcUrl,
    PAID_ACTIONS_ALLOW_ORIGINS: origin,
  });
}

/** One `paid_fetch` of the sandbox's paid resource at `origin`; throws unless it paid, on EVM. */
export async function evmPaidFetch(client, origin) {
  const r = await client.callTool({ name: "paid_fetch", arguments: { url: `${origin}${EVM_RESOURCE}` } });
  if (r.isError) throw refused(r);
  // Paid, and on EVM: a payment on any other network would measure another rail.
  const network = r.structuredContent?.payment?.network;
  if (network !== EVM_NETWORK) throw new Error(`paid_fetch paid on ${network}, not ${EVM_NETWORK}`);
}

/** The sandbox's origin (its paid resources) as the lane's client must see it. */
const resourceOrigin = (proxy, lane, info) => proxy.url(lane, new URL(info.baseUrl).origin);

export const EVM_RAIL = {
  name: "base-sepolia",
  network: () => EVM_NETWORK,
  labels: { mcp: "MCP server over stdio, paid_fetch", peer: "peer (@x402/fetch + @x402/evm)" },
  upstreams: (info) => [
    { name: "service", url: info.baseUrl },
    { name: "EVM RPC", url: info.evm.rpcUrl },
  ],
  mcpSide: (svc, proxy) => {
    const origin = resourceOrigin(proxy, "mcp", svc.info);
    const env = evmServiceEnv(through(proxy, "mcp", svc.info), join(work, "wan-evm-home"), {
      origin,
      rpcUrl: proxy.url("mcp", svc.info.evm.rpcUrl),
    });
    return mcpSide(env, (client) => evmPaidFetch(client, origin));
  },
  /** The stock x402 client paying the resource (402, pay, retry) on the proxy's peer lane. */
  peerSide: async (svc, proxy) => {
    const account = privateKeyToAccount(readFileSync(svc.info.evm.agentKeyPath, "utf8").trim());
    const peerClient = new x402Client();
    peerClient.register("eip155:*", new ExactEvmScheme(account, { rpcUrl: proxy.url("peer", svc.info.evm.rpcUrl) }));
    const paidFetch = wrapFetchWithPayment(fetch, peerClient);
    const url = `${resourceOrigin(proxy, "peer", svc.info)}${EVM_RESOURCE}`;
    const once = async () => {
      const res = await paidFetch(url);
      if (res.status !== 200) throw new Error(`peer ${res.status}: ${await res.text()}`);
      await res.text();
    };
    // An EIP-3009 authorization has no blockhash to expire: one attempt, timed.
    return {
      once,
      sample: async (samples) => {
        const t0 = performance.now();
        await once();
        samples.push(performance.now() - t0);
      },
    };
  },
};
