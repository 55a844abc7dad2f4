/**
 * The EVM rail's chain port: how it learns about money on an EVM chain — through the user's
 * own RPC (PAID_ACTIONS_EVM_RPC_URL), never through a seller or the service. A few standard
 * reads of one USDC contract (the newest block, a block's time, `authorizationState`,
 * `balanceOf`, its Transfer / AuthorizationUsed / AuthorizationCanceled logs, a receipt)
 * behind a narrow interface, so the rules are tested with a scripted chain as well as against
 * the sandbox's anvil node. Addresses come back checksummed, nonces in lower-case hex.
 */
import {
  createPublicClient,
  decodeEventLog,
  encodeEventTopics,
  getAddress,
  http,
  keccak256,
  parseAbi,
  type Hex,
  type Log,
  type PublicClient,
} from "viem";
import type { Head } from "./rules.js";

/** What the rail reads of USDC's contract. */
export const USDC_ABI = parseAbi([
  "function balanceOf(address account) view returns (uint256)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
]);

/** One of the token's events, decoded. */
export type TokenEvent =
  | { kind: "transfer"; from: string; to: string; value: bigint }
  | { kind: "used"; authorizer: string; nonce: string }
  | { kind: "canceled"; authorizer: string; nonce: string };

/** A log of the token, where it is on chain. */
export interface TokenLog {
  event: TokenEvent;
  blockNumber: bigint;
  tx: string;
  logIndex: number;
}

/** A transaction's receipt as the rail needs it: only the token's logs, in their order. */
export interface EvmReceipt {
  tx: string;
  blockNumber: bigint;
  /** The block's hash (lower case), when the node gave it. */
  blockHash?: string;
  /** Its position in the block (for ordering). */
  index: number;
  /** Who sent it (for x402: the facilitator that settled it). */
  from: string;
  failed: boolean;
  logs: TokenLog[];
}

/** Which of the token's logs to read. */
export type LogQuery =
  | { kind: "transfer_from"; address: string; fromBlock: bigint; toBlock: bigint }
  | { kind: "transfer_to"; address: string; fromBlock: bigint; toBlock: bigint }
  | { kind: "used"; address: string; nonce: string; fromBlock: bigint; toBlock: bigint }
  | { kind: "canceled"; address: string; nonce: string; fromBlock: bigint; toBlock: bigint };

export interface EvmChain {
  /** The newest block. Throws when the RPC does not answer. */
  head(): Promise<Head>;
  /** A block's number and time. Throws when the RPC does not answer (or has no such block). */
  block(number: bigint): Promise<Head>;
  /** Whether the authorizer's nonce is used (or canceled) at block `at`. Throws when the RPC does not answer. */
  authorizationUsed(authorizer: string, nonce: string, at: bigint): Promise<boolean>;
  /** The address's USDC balance (atomic units). Throws when the RPC does not answer. */
  balance(owner: string): Promise<bigint>;
  /** The token's logs of one kind in a block range, in chain order. Throws when the RPC does not answer. */
  logs(q: LogQuery): Promise<TokenLog[]>;
  /** A transaction's receipt; null when the node does not have it. Throws when the RPC does not answer. */
  receipt(tx: string): Promise<EvmReceipt | null>;
  /**
   * A transaction as signed (0x, its RLP bytes, which hash to its id); null when the node does
   * not have it. Throws when the RPC does not answer.
   */
  rawTransaction(tx: string): Promise<string | null>;
  /** The newest block the node tags `safe` or `finalized`; null when it tags none. Throws when the RPC does not answer. */
  tagged(tag: "safe" | "finalized"): Promise<bigint | null>;
}

/** A log of `token` decoded as one of its events; undefined for anything else. */
export function decodeTokenLog(token: string, log: Pick<Log, "address" | "data" | "topics">): TokenEvent | undefined {
  if (log.address.toLowerCase() !== token.toLowerCase()) return undefined;
  try {
    const d = decodeEventLog({ abi: USDC_ABI, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
    if (d.eventName === "Transfer")
      return { kind: "transfer", from: getAddress(d.args.from), to: getAddress(d.args.to), value: d.args.value };
    const who = { authorizer: getAddress(d.args.authorizer), nonce: d.args.nonce.toLowerCase() };
    return d.eventName === "AuthorizationUsed" ? { kind: "used", ...who } : { kind: "canceled", ...who };
  } catch {
    return undefined;
  }
}

const toTokenLog = (token: string, log: Log): TokenLog[] => {
  const event = decodeTokenLog(token, log);
  if (!event || log.blockNumber === null || log.transactionHash === null || log.logIndex === null) return [];
  return [{ event, blockNumber: log.blockNumber, tx: log.transactionHash.toLowerCase(), logIndex: log.logIndex }];
};

/** The topics of a log query (indexed arguments filter exactly). */
function topicsOf(q: LogQuery): (Hex | Hex[] | null)[] {
  const address = getAddress(q.address);
  if (q.kind === "transfer_from" || q.kind === "transfer_to")
    return encodeEventTopics({
      abi: USDC_ABI,
      eventName: "Transfer",
      args: q.kind === "transfer_from" ? { from: address } : { to: address },
    });
  const args = { authorizer: address, nonce: q.nonce as Hex };
  return q.kind === "used"
    ? encodeEventTopics({ abi: USDC_ABI, eventName: "AuthorizationUsed", args })
    : encodeEventTopics({ abi: USDC_ABI, eventName: "AuthorizationCanceled", args });
}

const hex = (n: bigint) => `0x${n.toString(16)}` as Hex;

/**
 * A read's failure without the RPC's URL, which may carry a provider's API key: viem's short
 * message (its long one names the URL and the request), and the URL cut out of it all the same.
 */
async function guarded<T>(url: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    const short = (e as { shortMessage?: unknown }).shortMessage;
    const text = typeof short === "string" ? short : (e as Error).message;
    const origin = (() => {
      try {
        return new URL(url).origin;
      } catch {
        return "the EVM RPC";
      }
    })();
    const error = new Error(text.split(url).join(origin).slice(0, 300));
    error.name = (e as Error).name;
    throw error;
  }
}

/**
 * The chain port over `rpcUrl` (a function when the RPC may move: read for every request),
 * reading USDC at `token`. Each read is bounded by `timeoutMs`.
 */
export function createEvmChain(rpcUrl: () => string, token: string, timeoutMs = 8_000): EvmChain {
  let client: { url: string; rpc: PublicClient } | undefined;
  const rpc = () => {
    const url = rpcUrl();
    if (client?.url !== url)
      client = { url, rpc: createPublicClient({ transport: http(url, { timeout: timeoutMs, retryCount: 0 }) }) };
    return client.rpc;
  };
  const address = getAddress(token);
  const headOf = (b: { number: bigint | null; timestamp: bigint }): Head => {
    if (b.number === null) throw new Error("the RPC gave a block without a number");
    return { number: b.number, timestamp: b.timestamp };
  };
  const g = <T>(read: () => Promise<T>) => guarded(rpcUrl(), read);
  return {
    head: () => g(async () => headOf(await rpc().getBlock({ blockTag: "latest" }))),
    block: (number) => g(async () => headOf(await rpc().getBlock({ blockNumber: number }))),
    authorizationUsed(authorizer, nonce, at) {
      return g(() =>
        rpc().readContract({
          address,
          abi: USDC_ABI,
          functionName: "authorizationState",
          args: [getAddress(authorizer), nonce as Hex],
          blockNumber: at,
        }),
      );
    },
    balance(owner) {
      return g(() =>
        rpc().readContract({ address, abi: USDC_ABI, functionName: "balanceOf", args: [getAddress(owner)] }),
      );
    },
    logs: (q) => g(() => readLogs(rpc(), address, q)),
    receipt: (tx) => g(() => readReceipt(rpc(), address, tx)),
    rawTransaction: (tx) => g(() => readRaw(rpc(), tx)),
    tagged: (tag) =>
      g(async () => {
        try {
          return (await rpc().getBlock({ blockTag: tag })).number;
        } catch (e) {
          if ((e as Error).name === "BlockNotFoundError") return null;
          throw e;
        }
      }),
  };
}

/**
 * The signed bytes of a transaction (`eth_getRawTransactionByHash`, which geth, reth, anvil and
 * the usual providers serve), kept only when they hash to `tx`.
 */
async function readRaw(rpc: PublicClient, tx: string): Promise<string | null> {
  const raw = await rpc.request({ method: "eth_getRawTransactionByHash", params: [tx as Hex] });
  if (raw === null || raw === "0x") return null;
  if (keccak256(raw) !== tx.toLowerCase()) throw new Error(`the RPC's bytes of ${tx} do not hash to it`);
  return raw.toLowerCase();
}

/** The token's logs one query asks for (raw topics: the filter done by the node). */
async function readLogs(rpc: PublicClient, address: Hex, q: LogQuery): Promise<TokenLog[]> {
  const raw = (await rpc.request({
    method: "eth_getLogs",
    params: [{ address, topics: topicsOf(q), fromBlock: hex(q.fromBlock), toBlock: hex(q.toBlock) }],
  })) as Array<Record<string, unknown>>;
  return raw.flatMap((l) =>
    toTokenLog(address, {
      address: l.address as Hex,
      data: l.data as Hex,
      topics: l.topics as [Hex, ...Hex[]],
      blockNumber: BigInt(l.blockNumber as string),
      transactionHash: l.transactionHash as Hex,
      logIndex: Number(BigInt(l.logIndex as string)),
    } as Log),
  );
}

/** A transaction's receipt, with only the token's logs; null when the node does not have it. */
async function readReceipt(rpc: PublicClient, address: Hex, tx: string): Promise<EvmReceipt | null> {
  let r;
  try {
    r = await rpc.getTransactionReceipt({ hash: tx as Hex });
  } catch (e) {
    if ((e as Error).name === "TransactionReceiptNotFoundError") return null;
    throw e;
  }
  return {
    tx: r.transactionHash.toLowerCase(),
    blockNumber: r.blockNumber,
    blockHash: r.blockHash.toLowerCase(),
    index: r.transactionIndex,
    from: getAddress(r.from),
    failed: r.status !== "success",
    logs: r.logs.flatMap((l) => toTokenLog(address, l)),
  };
}
