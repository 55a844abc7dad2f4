/**
 * Finding things on an EVM chain by time, through the rail's chain port: the block at a
 * moment (a binary search over block times: every node serves block headers), and the
 * token's logs over a block range read in bounded chunks (RPC providers cap the range of one
 * eth_getLogs). Where an authorization was used — or canceled — is found from its logs
 * between the moment it was signed and our newest block.
 */
import type { ChainTx } from "../../chain/chain.js";
import { authorizationTx } from "./decode.js";
import type { Head } from "./rules.js";
import type { EvmChain, LogQuery, TokenLog } from "./rpc.js";

/** Blocks per eth_getLogs request (public RPCs refuse wider ranges). */
export const LOG_CHUNK_BLOCKS = 2_000n;

/** How far before its signature an authorization's use is looked for (this machine's clock against the chain's). */
export const CLOCK_SKEW_S = 600n;

/** The last block at or before `t` (unix seconds), found between 0 and `head`; 0 when even block 0 is later. */
export async function blockAt(chain: EvmChain, t: bigint, head: Head): Promise<bigint> {
  if (head.timestamp <= t) return head.number;
  let lo = 0n;
  let hi = head.number;
  if ((await chain.block(lo)).timestamp > t) return 0n;
  // Invariant: block lo is at or before t, block hi is after it.
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if ((await chain.block(mid)).timestamp <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The logs a query asks for over [fromBlock, toBlock], read chunk by chunk, in chain order; `pages` counts the requests. */
export async function chunkedLogs(
  chain: EvmChain,
  q: LogQuery,
  read: (q: LogQuery) => Promise<TokenLog[]> = (x) => chain.logs(x),
  pages = { n: 0 },
): Promise<TokenLog[]> {
  const out: TokenLog[] = [];
  for (let from = q.fromBlock; from <= q.toBlock; from += LOG_CHUNK_BLOCKS) {
    const to = from + LOG_CHUNK_BLOCKS - 1n < q.toBlock ? from + LOG_CHUNK_BLOCKS - 1n : q.toBlock;
    pages.n++;
    out.push(...(await read({ ...q, fromBlock: from, toBlock: to })));
  }
  return out;
}

/** What the token's logs say of an authorization whose nonce is used: the transfer it made, a cancellation, or nothing found. */
export type UseFound = { kind: "landed"; tx: ChainTx } | { kind: "canceled" } | { kind: "missing" };

/**
 * Where the authorization (`authorizer`, `nonce`) of a proof signed at `signedAtMs` was used,
 * searched up to `head`: its AuthorizationUsed log, then the transaction's receipt, read as
 * the part of it that authorization did. Throws when the RPC does not answer.
 */
export async function findUse(
  chain: EvmChain,
  token: string,
  a: { authorizer: string; nonce: string; signedAtMs: number },
  head: Head,
): Promise<UseFound> {
  const since = BigInt(Math.floor(a.signedAtMs / 1000)) - CLOCK_SKEW_S;
  const range = {
    address: a.authorizer,
    nonce: a.nonce,
    fromBlock: await blockAt(chain, since, head),
    toBlock: head.number,
  };
  const [used] = await chunkedLogs(chain, { kind: "used", ...range });
  if (used) {
    const receipt = await chain.receipt(used.tx);
    if (!receipt) return { kind: "missing" };
    const time = (await chain.block(receipt.blockNumber)).timestamp;
    const tx = authorizationTx(receipt, time, token, a);
    return tx ? { kind: "landed", tx } : { kind: "missing" };
  }
  const [canceled] = await chunkedLogs(chain, { kind: "canceled", ...range });
  return canceled ? { kind: "canceled" } : { kind: "missing" };
}
