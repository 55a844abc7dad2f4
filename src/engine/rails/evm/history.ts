/**
 * The EVM rail's history read for the audit: every transaction that moved the key's USDC
 * (the token's Transfer logs from and to the key) back to a time, through the chain port —
 * by block ranges, bounded, retried — then each one's receipt: complete, or "cannot tell"
 * (ChainScanError), never a partial history.
 */
import type { ChainTx } from "../../chain/chain.js";
import { ChainScanError, type ChainScan, type ScanOptions } from "../port.js";
import { chainTxOf } from "./decode.js";
import type { EvmChain, EvmReceipt } from "./rpc.js";
import { blockAt, chunkedLogs } from "./search.js";

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One RPC read tried `attempts` times, with growing pauses; the last failure is "cannot tell". */
function retrier(attempts: number, sleep: (ms: number) => Promise<void>) {
  return async <T>(what: string, read: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (e) {
        if (attempt >= attempts)
          throw new ChainScanError(
            "rpc_unavailable",
            `the EVM RPC did not answer ${what} (${(e as Error).message.slice(0, 200)})`,
          );
        await sleep(250 * 4 ** (attempt - 1));
      }
    }
  };
}

/**
 * The key's USDC history back to `fromMs`, oldest first. `maxSignatures` bounds the
 * transactions read (history_too_long beyond it); `concurrency` the receipts read at once.
 */
export async function scanEvmHistory(
  chain: EvmChain,
  key: string,
  token: string,
  fromMs: number,
  o: ScanOptions = {},
): Promise<ChainScan> {
  const retried = retrier(Math.max(1, o.attempts ?? 3), o.sleep ?? pause);
  const maxTxs = o.maxSignatures ?? 5000;
  const head = await retried("eth_getBlockByNumber", () => chain.head());
  const fromBlock = await retried("eth_getBlockByNumber", () =>
    blockAt(chain, BigInt(Math.floor(fromMs / 1000)), head),
  );
  const pages = { n: 0 };
  const read = (q: Parameters<EvmChain["logs"]>[0]) => retried("eth_getLogs", () => chain.logs(q));
  const range = { address: key, fromBlock, toBlock: head.number };
  const logs = [
    ...(await chunkedLogs(chain, { kind: "transfer_from", ...range }, read, pages)),
    ...(await chunkedLogs(chain, { kind: "transfer_to", ...range }, read, pages)),
  ];
  const hashes = [...new Set(logs.map((l) => l.tx))];
  if (hashes.length > maxTxs)
    throw new ChainScanError(
      "history_too_long",
      `the key's USDC has more than ${maxTxs} transactions since ${new Date(fromMs).toISOString()}; audit a shorter period with --since`,
    );
  const receipts = await readReceipts(chain, hashes, o.concurrency ?? 4, retried);
  const times = new Map<bigint, bigint>();
  const txs: Array<{ r: EvmReceipt; tx: ChainTx }> = [];
  for (const r of receipts) {
    let time = times.get(r.blockNumber);
    if (time === undefined) {
      time = (await retried("eth_getBlockByNumber", () => chain.block(r.blockNumber))).timestamp;
      times.set(r.blockNumber, time);
    }
    txs.push({ r, tx: chainTxOf(r, time, token) });
  }
  txs.sort((a, b) =>
    a.r.blockNumber === b.r.blockNumber ? a.r.index - b.r.index : a.r.blockNumber < b.r.blockNumber ? -1 : 1,
  );
  return {
    txs: txs.map((t) => t.tx),
    signatures: hashes.length,
    transactionsRead: receipts.length,
    failed: 0,
    pages: pages.n,
    from: fromMs,
  };
}

/** Each transaction's receipt, `concurrency` reads at once; one a node lists in its logs but does not return ends the scan. */
async function readReceipts(
  chain: EvmChain,
  hashes: string[],
  concurrency: number,
  retried: ReturnType<typeof retrier>,
): Promise<EvmReceipt[]> {
  const out: EvmReceipt[] = new Array(hashes.length);
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < hashes.length && !stopped) {
      const index = next++;
      const hash = hashes[index]!;
      const receipt = await retried(`eth_getTransactionReceipt for ${hash}`, () => chain.receipt(hash));
      if (!receipt)
        throw new ChainScanError(
          "transaction_missing",
          `the EVM RPC lists transaction ${hash} in the token's logs but does not return its receipt`,
        );
      out[index] = receipt;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), Math.max(1, hashes.length)) }, worker));
  } finally {
    stopped = true;
  }
  return out;
}
