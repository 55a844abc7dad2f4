/**
 * What the chain tests share: a scripted chain port that records every call and fails the
 * test on any call it was not told to expect, the priced payment as a hand-built
 * transaction, and history entries for the memo search. Used by chain-verify-payment,
 * chain-refund-inflow, chain-find-by-memo and chain-proof-fate (*.test.ts).
 */
import { expect } from "vitest";
import type {
  ChainPort,
  ChainTx,
  ExpectedPayment,
  ScanLimits,
  SignatureEntry,
} from "../../src/engine/rails/solana/chain.js";

// ---- A scripted chain -----------------------------------------------------------------

export type Method =
  "latestBlockhash" | "finalizedHeight" | "tokenAccount" | "blockhashValid" | "signaturesFor" | "transaction";

/** One entry of the scripted history; `tx` absent = fetching it is not expected. */
export interface Scripted {
  entry: SignatureEntry;
  tx?: ChainTx | null;
}

/**
 * A fake chain port: one address's history (newest first) paged like
 * getSignaturesForAddress, scripted blockhash answers, a record of every call, and a
 * surprise (recorded and thrown) for anything it was not told to expect.
 */
export class ScriptedChain implements ChainPort {
  readonly calls: string[] = [];
  readonly surprises: string[] = [];
  /** Methods that fail as if the RPC were unreachable. */
  readonly down = new Set<Method>();
  /** Runs after finalizedHeight answers (e.g. to land a transfer between the two reads). */
  afterHeight: (() => void) | undefined;
  /** The finalized block height it answers; undefined: it is not expected to be asked. */
  height: bigint | undefined;

  constructor(
    readonly address: string,
    readonly history: Scripted[],
    readonly blockhashes: Record<string, boolean | undefined> = {},
  ) {}

  private enter(method: Method, text: string): void {
    this.calls.push(text);
    if (this.down.has(method)) throw new Error("fetch failed: connect ECONNREFUSED 127.0.0.1:8899");
  }

  private surprise(text: string): never {
    this.surprises.push(text);
    throw new Error(`scripted chain: unexpected ${text}`);
  }

  async latestBlockhash(): Promise<never> {
    this.enter("latestBlockhash", "latestBlockhash");
    return this.surprise("latestBlockhash");
  }

  async tokenAccount(account: string): Promise<never> {
    this.enter("tokenAccount", `tokenAccount ${account}`);
    return this.surprise(`tokenAccount ${account}`);
  }

  async finalizedHeight(): Promise<bigint> {
    this.enter("finalizedHeight", "finalizedHeight");
    if (this.height === undefined) this.surprise("finalizedHeight");
    const answer = this.height;
    this.afterHeight?.();
    return answer;
  }

  async blockhashValid(blockhash: string): Promise<boolean | undefined> {
    const text = `blockhashValid ${blockhash}`;
    this.enter("blockhashValid", text);
    if (!(blockhash in this.blockhashes)) this.surprise(text);
    return this.blockhashes[blockhash];
  }

  async signaturesFor(
    addr: string,
    opts: { before?: string; until?: string; limit: number },
  ): Promise<SignatureEntry[]> {
    const text = `signaturesFor ${addr} before=${opts.before ?? "-"} limit=${opts.limit}`;
    this.enter("signaturesFor", text);
    if (addr !== this.address || opts.until !== undefined || !(opts.limit > 0)) this.surprise(text);
    let start = 0;
    if (opts.before !== undefined) {
      const i = this.history.findIndex((h) => h.entry.signature === opts.before);
      if (i < 0) this.surprise(text);
      start = i + 1;
    }
    return this.history.slice(start, start + opts.limit).map((h) => ({ ...h.entry }));
  }

  async transaction(signature: string): Promise<ChainTx | null> {
    const text = `transaction ${signature}`;
    this.enter("transaction", text);
    const h = this.history.find((x) => x.entry.signature === signature);
    if (!h || !("tx" in h)) this.surprise(text);
    return h.tx ?? null;
  }
}

const chains: ScriptedChain[] = [];
export function scripted(history: Scripted[], blockhashes?: Record<string, boolean | undefined>): ScriptedChain {
  const chain = new ScriptedChain(WALLET_ATA, history, blockhashes);
  chains.push(chain);
  return chain;
}
/** For afterEach: findByMemo turns a thrown surprise into "unknown": make every surprise fail the test. */
export function expectNoSurprises(): void {
  const surprises = chains.flatMap((c) => c.surprises);
  chains.length = 0;
  expect(surprises).toEqual([]);
}

// ---- Hand-built transactions ----------------------------------------------------------

export const WALLET = "Wallet";
export const WALLET_ATA = "WalletAta";
export const PAYEE = "Payee";
export const PAYEE_ATA = "PayeeAta";
export const MINT = "Mint";
export const MEMO = "q_target";
export const AMOUNT = 250_000n;
export const EXPECTED: ExpectedPayment = {
  wallet: WALLET,
  walletAta: WALLET_ATA,
  payeeAta: PAYEE_ATA,
  mint: MINT,
  amount: AMOUNT,
  memo: MEMO,
};

/** The priced payment, exactly; `over` changes it. */
export function payment(over: Partial<ChainTx> = {}, signature = "PaySig"): ChainTx {
  return {
    signature,
    slot: 100n,
    blockTime: SIGNED_S + 5,
    failed: false,
    feePayer: "FeePayer",
    transfers: [{ source: WALLET_ATA, destination: PAYEE_ATA, authority: WALLET, mint: MINT, amount: AMOUNT }],
    memos: [MEMO],
    balanceChanges: [
      { account: WALLET_ATA, owner: WALLET, mint: MINT, delta: -AMOUNT },
      { account: PAYEE_ATA, owner: PAYEE, mint: MINT, delta: AMOUNT },
    ],
    ...over,
  };
}

/** A transfer of the priced payment with fields changed. */
export const transfer = (over: Partial<ChainTx["transfers"][number]> = {}) => ({
  source: WALLET_ATA,
  destination: PAYEE_ATA,
  authority: WALLET,
  mint: MINT as string | null,
  amount: AMOUNT,
  ...over,
});
export const walletDelta = (delta: bigint, mint = MINT) => [
  { account: WALLET_ATA, owner: WALLET, mint, delta },
  { account: PAYEE_ATA, owner: PAYEE, mint: MINT, delta: -delta },
];

// ---- History entries, for the memo search ---------------------------------------------

export const SIGNED_AT = Date.parse("2026-01-01T12:00:00Z");
export const SIGNED_S = SIGNED_AT / 1000;
export const LIMITS: ScanLimits = { pageSize: 3, maxPages: 4, skewMs: 60_000 };

/** A history entry; the node's memo summary is "[len] text" per memo, joined with "; ". */
export function entry(
  signature: string,
  o: {
    secondsAfterSigning?: number;
    memos?: string[] | null;
    undefinedMemo?: boolean;
    failed?: boolean;
    tx?: ChainTx | null;
    blockTime?: number | null;
  } = {},
): Scripted {
  const memo = o.undefinedMemo
    ? undefined
    : o.memos
      ? o.memos.map((m) => `[${Buffer.byteLength(m)}] ${m}`).join("; ")
      : null;
  const blockTime = o.blockTime !== undefined ? o.blockTime : SIGNED_S + (o.secondsAfterSigning ?? 10);
  return {
    entry: { signature, slot: 1n, blockTime, failed: o.failed ?? false, memo },
    ...("tx" in o ? { tx: o.tx } : {}),
  };
}
/** `n` unrelated entries (memo null: never fetched). */
export const filler = (prefix: string, n: number, secondsAfterSigning = 30): Scripted[] =>
  Array.from({ length: n }, (_, i) => entry(`${prefix}${i}`, { secondsAfterSigning }));
export const first = (before = "-") => `signaturesFor ${WALLET_ATA} before=${before} limit=${LIMITS.pageSize}`;
