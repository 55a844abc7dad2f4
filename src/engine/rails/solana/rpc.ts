/**
 * The chain port over a Solana JSON-RPC endpoint (the user's own, from the configuration),
 * with @solana/kit's standard client over our transport (rpc-transport.ts): `getLatestBlockhash`,
 * `getBlockHeight`, `getAccountInfo`
 * (jsonParsed, for a token account's delegate and allowance), `isBlockhashValid`,
 * `getSignaturesForAddress`, `getTransaction` (base64, decoded here; several in one batch: rpc-batch.ts).
 * Nothing else is asked of the node.
 */
import type { ChainPort, ChainTransfer, ChainTx, RawEvidence, TokenAccountState } from "./chain.js";
import { keyName, readWireBase64 } from "../../../domain/solana-wire.js";
import { undiciTransport } from "./rpc-transport.js";
import { transactionsInOneTrip } from "./rpc-batch.js";

type Kit = typeof import("@solana/kit");

const TOKEN_PROGRAMS = new Set([
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
]);
const MEMO_PROGRAMS = new Set([
  "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
  "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
]);
const TRANSFER = 3;
const TRANSFER_CHECKED = 12;

interface TokenBalanceJson {
  accountIndex: number | bigint;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string };
}

/** What getTransaction (encoding base64) returns, as far as it is read here. */
export interface RpcTransaction {
  slot: bigint | number;
  blockTime: bigint | number | null;
  meta: {
    err: unknown;
    preTokenBalances?: readonly TokenBalanceJson[] | null;
    postTokenBalances?: readonly TokenBalanceJson[] | null;
    loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] } | null;
  } | null;
  transaction: readonly [string, string] | readonly string[];
}

function u64le(data: Uint8Array, offset: number): bigint | undefined {
  if (data.length < offset + 8) return undefined;
  let value = 0n;
  for (let i = 7; i >= 0; i--) value = (value << 8n) | BigInt(data[offset + i]!);
  return value;
}

/** A message's account keys (base58) and instructions, as the engine reads them. */
interface ReadMessage {
  staticAccounts: string[];
  instructions: Array<{ programIndex: number; accounts: ArrayLike<number>; data: Uint8Array }>;
}

/**
 * The message of a wire transaction (base64): read from its bytes (domain/solana-wire.ts,
 * about a tenth of kit's decoders' CPU), or by kit's decoders for anything that reader does
 * not take (which then refuse it as they always did).
 */
async function readMessage(signature: string, wire: string): Promise<ReadMessage> {
  const fast = readWireBase64(wire);
  if (fast)
    return {
      staticAccounts: fast.keys.map(keyName),
      instructions: fast.instructions.map((ix) => ({
        programIndex: ix.programIndex,
        accounts: ix.accounts,
        data: ix.data,
      })),
    };
  const kit = await import("@solana/kit");
  const tx = kit.getTransactionDecoder().decode(kit.getBase64Encoder().encode(wire));
  const message = kit.getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  if (message.version !== "legacy" && message.version !== 0)
    throw new Error(`transaction ${signature} has a message version this client does not read`);
  return {
    staticAccounts: message.staticAccounts.map(String),
    instructions: message.instructions.map((ix) => ({
      programIndex: ix.programAddressIndex,
      accounts: ix.accountIndices ?? [],
      data: new Uint8Array(ix.data ?? []),
    })),
  };
}

/** Decodes a getTransaction (base64) answer into what the engine checks. */
export async function decodeRpcTransaction(signature: string, raw: RpcTransaction): Promise<ChainTx> {
  const wire = raw.transaction[0];
  if (typeof wire !== "string") throw new Error("getTransaction did not answer in base64");
  const message = await readMessage(signature, wire);
  const loaded = raw.meta?.loadedAddresses;
  const keys: string[] = [...message.staticAccounts, ...(loaded?.writable ?? []), ...(loaded?.readonly ?? [])];
  const transfers: ChainTransfer[] = [];
  const memos: string[] = [];
  for (const ix of message.instructions) {
    const program = keys[ix.programIndex];
    const data = ix.data;
    const accounts = Array.from(ix.accounts, (i) => keys[i] ?? "");
    if (program && MEMO_PROGRAMS.has(program)) {
      memos.push(new TextDecoder().decode(data));
    } else if (program && TOKEN_PROGRAMS.has(program)) {
      const amount = u64le(data, 1);
      if (amount === undefined) continue;
      if (data[0] === TRANSFER_CHECKED && accounts.length >= 4) {
        transfers.push({
          source: accounts[0]!,
          mint: accounts[1]!,
          destination: accounts[2]!,
          authority: accounts[3]!,
          amount,
        });
      } else if (data[0] === TRANSFER && accounts.length >= 3) {
        transfers.push({
          source: accounts[0]!,
          mint: null,
          destination: accounts[1]!,
          authority: accounts[2]!,
          amount,
        });
      }
    }
  }
  const balances = new Map<string, { owner: string | null; mint: string; pre: bigint; post: bigint }>();
  const add = (list: readonly TokenBalanceJson[] | null | undefined, which: "pre" | "post") => {
    for (const b of list ?? []) {
      const account = keys[Number(b.accountIndex)];
      if (!account) continue;
      const entry = balances.get(account) ?? { owner: b.owner ?? null, mint: b.mint, pre: 0n, post: 0n };
      entry[which] = BigInt(b.uiTokenAmount.amount);
      balances.set(account, entry);
    }
  };
  add(raw.meta?.preTokenBalances, "pre");
  add(raw.meta?.postTokenBalances, "post");
  return {
    signature,
    slot: BigInt(raw.slot),
    blockTime: raw.blockTime === null ? null : Number(raw.blockTime),
    failed: raw.meta === null || (raw.meta.err !== null && raw.meta.err !== undefined),
    feePayer: keys[0] ?? null,
    transfers,
    memos,
    balanceChanges: [...balances].map(([account, b]) => ({
      account,
      owner: b.owner,
      mint: b.mint,
      delta: b.post - b.pre,
    })),
  };
}

/** A token account's jsonParsed data as a node gives it; throws on anything that is not one. */
export function parseTokenAccount(data: unknown): TokenAccountState {
  const parsed = (data as { program?: unknown; parsed?: { type?: unknown; info?: Record<string, unknown> } } | null)
    ?.parsed;
  const info = parsed?.info;
  if (parsed?.type !== "account" || !info) throw new Error("the account is not an SPL Token account");
  const amountOf = (v: unknown) => {
    const a = (v as { amount?: unknown } | undefined)?.amount;
    if (typeof a !== "string" || !/^\d{1,20}$/.test(a)) throw new Error("the token account's amount is not a u64");
    return BigInt(a);
  };
  const delegate = typeof info.delegate === "string" ? info.delegate : null;
  return {
    owner: String(info.owner),
    mint: String(info.mint),
    amount: amountOf(info.tokenAmount),
    delegate,
    delegatedAmount: delegate === null ? 0n : amountOf(info.delegatedAmount),
  };
}

/** A transaction's wire bytes, decoded, and its signature status (ChainPort.transactionEvidence). */
async function evidenceOf(
  rpc: ReturnType<Kit["createSolanaRpc"]>,
  sig: string,
  abortSignal: AbortSignal,
): Promise<RawEvidence | null> {
  const kit = await import("@solana/kit");
  const res = await rpc
    .getTransaction(kit.signature(sig), {
      encoding: "base64",
      maxSupportedTransactionVersion: 0,
      commitment: "confirmed",
    })
    .send({ abortSignal });
  if (!res) return null;
  const raw = res as unknown as RpcTransaction;
  const wire = raw.transaction[0];
  if (typeof wire !== "string") throw new Error("getTransaction did not answer in base64");
  const statuses = await rpc
    .getSignatureStatuses([kit.signature(sig)], { searchTransactionHistory: true })
    .send({ abortSignal });
  const status = statuses.value[0];
  return {
    tx: await decodeRpcTransaction(sig, raw),
    wire,
    finality: status?.confirmationStatus ? String(status.confirmationStatus) : null,
  };
}

/**
 * The chain port over `rpcUrl` (a function when the RPC may move: read for every request).
 * Each read is bounded by `timeoutMs`.
 */
export async function createRpcChain(
  rpcUrl: string | (() => string),
  timeoutMs = 8_000,
): Promise<ChainPort & Required<Pick<ChainPort, "transactionEvidence">>> {
  const kit = await import("@solana/kit");
  const currentUrl = typeof rpcUrl === "function" ? rpcUrl : () => rpcUrl;
  let client: { url: string; rpc: ReturnType<typeof kit.createSolanaRpc> } | undefined;
  const rpc = () => {
    const url = currentUrl();
    if (client?.url !== url) client = { url, rpc: kit.createSolanaRpcFromTransport(undiciTransport(url)) };
    return client.rpc;
  };
  const signal = () => AbortSignal.timeout(timeoutMs);
  return {
    async latestBlockhash() {
      // At "finalized", like the height the fate rule compares it with.
      const res = await rpc().getLatestBlockhash({ commitment: "finalized" }).send({ abortSignal: signal() });
      return { blockhash: String(res.value.blockhash), lastValidHeight: BigInt(res.value.lastValidBlockHeight) };
    },
    async tokenAccount(address) {
      const res = await rpc()
        .getAccountInfo(kit.address(address), { encoding: "jsonParsed", commitment: "confirmed" })
        .send({ abortSignal: signal() });
      return res.value ? parseTokenAccount(res.value.data) : null;
    },
    async finalizedHeight() {
      return BigInt(await rpc().getBlockHeight({ commitment: "finalized" }).send({ abortSignal: signal() }));
    },
    async blockhashValid(blockhash) {
      // Asked at "finalized": once even the finalized bank no longer accepts the blockhash,
      // any transaction that used it is in a finalized block, which every history read sees.
      const res = await rpc()
        .isBlockhashValid(kit.blockhash(blockhash), { commitment: "finalized" })
        .send({ abortSignal: signal() });
      return typeof res.value === "boolean" ? res.value : undefined;
    },
    async signaturesFor(address, opts) {
      const res = await rpc()
        .getSignaturesForAddress(kit.address(address), {
          limit: opts.limit,
          commitment: "confirmed",
          ...(opts.before ? { before: kit.signature(opts.before) } : {}),
          ...(opts.until ? { until: kit.signature(opts.until) } : {}),
        })
        .send({ abortSignal: signal() });
      return res.map((e) => ({
        signature: String(e.signature),
        slot: BigInt(e.slot),
        blockTime: e.blockTime === null ? null : Number(e.blockTime),
        failed: e.err !== null,
        memo: e.memo,
      }));
    },
    async transaction(sig) {
      const res = await rpc()
        .getTransaction(kit.signature(sig), {
          encoding: "base64",
          maxSupportedTransactionVersion: 0,
          commitment: "confirmed",
        })
        .send({ abortSignal: signal() });
      if (!res) return null;
      return decodeRpcTransaction(sig, res as unknown as RpcTransaction);
    },
    transactions: (sigs) => transactionsInOneTrip(currentUrl(), sigs, signal(), decodeRpcTransaction),
    transactionEvidence: (sig) => evidenceOf(rpc(), sig, signal()),
  };
}
