/**
 * The chain rules (src/engine/chain/chain.ts) against hand-built transactions and a scripted
 * chain port, and the RPC decoder (src/engine/chain/rpc.ts) against real signed v0
 * transactions built with @solana/kit. No network, no ledger.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { getTransferCheckedInstruction, getTransferInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  findByMemo,
  proofFate,
  refundInflow,
  verifyPayment,
  type ChainPort,
  type ChainTx,
  type ExpectedPayment,
  type ScanLimits,
  type SignatureEntry,
} from "../../src/engine/chain/chain.js";
import { decodeRpcTransaction, type RpcTransaction } from "../../src/engine/chain/rpc.js";

// ---- A scripted chain -----------------------------------------------------------------

type Method =
  "latestBlockhash" | "finalizedHeight" | "tokenAccount" | "blockhashValid" | "signaturesFor" | "transaction";

/** One entry of the scripted history; `tx` absent = fetching it is not expected. */
interface Scripted {
  entry: SignatureEntry;
  tx?: ChainTx | null;
}

/**
 * A fake chain port: one address's history (newest first) paged like
 * getSignaturesForAddress, scripted blockhash answers, a record of every call, and a
 * surprise (recorded and thrown) for anything it was not told to expect.
 */
class ScriptedChain implements ChainPort {
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
function scripted(history: Scripted[], blockhashes?: Record<string, boolean | undefined>): ScriptedChain {
  const chain = new ScriptedChain(WALLET_ATA, history, blockhashes);
  chains.push(chain);
  return chain;
}
afterEach(() => {
  // findByMemo turns a thrown surprise into "unknown": make every surprise fail the test.
  const surprises = chains.flatMap((c) => c.surprises);
  chains.length = 0;
  expect(surprises).toEqual([]);
});

// ---- Hand-built transactions ----------------------------------------------------------

const WALLET = "Wallet";
const WALLET_ATA = "WalletAta";
const PAYEE = "Payee";
const PAYEE_ATA = "PayeeAta";
const MINT = "Mint";
const MEMO = "q_target";
const AMOUNT = 250_000n;
const EXPECTED: ExpectedPayment = {
  wallet: WALLET,
  walletAta: WALLET_ATA,
  payeeAta: PAYEE_ATA,
  mint: MINT,
  amount: AMOUNT,
  memo: MEMO,
};

/** The priced payment, exactly; `over` changes it. */
function payment(over: Partial<ChainTx> = {}, signature = "PaySig"): ChainTx {
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
const transfer = (over: Partial<ChainTx["transfers"][number]> = {}) => ({
  source: WALLET_ATA,
  destination: PAYEE_ATA,
  authority: WALLET,
  mint: MINT as string | null,
  amount: AMOUNT,
  ...over,
});
const walletDelta = (delta: bigint, mint = MINT) => [
  { account: WALLET_ATA, owner: WALLET, mint, delta },
  { account: PAYEE_ATA, owner: PAYEE, mint: MINT, delta: -delta },
];

// ---- verifyPayment --------------------------------------------------------------------

describe("verifyPayment", () => {
  it("passes the exact priced payment", () => {
    expect(verifyPayment(payment(), EXPECTED)).toEqual([]);
  });

  it.each<[string, Partial<ChainTx>]>([
    [
      "a plain Transfer (no mint named): the wallet's account fixes the mint",
      { transfers: [transfer({ mint: null })] },
    ],
    [
      "two transfers that add up to the price",
      { transfers: [transfer({ amount: 100_000n }), transfer({ amount: 150_000n })] },
    ],
    ["other memos beside the quote's", { memos: ["hello", MEMO] }],
    ["no balance entry for the wallet's account (the node did not report it)", { balanceChanges: [] }],
    [
      "other accounts' transfers beside ours",
      {
        transfers: [
          transfer(),
          { source: "Elsewhere", destination: "Other", authority: "Someone", mint: MINT, amount: 9n },
        ],
      },
    ],
  ])("passes %s", (_name, over) => {
    expect(verifyPayment(payment(over), EXPECTED)).toEqual([]);
  });

  it.each<[string, Partial<ChainTx>, RegExp[]]>([
    [
      "a failed transaction",
      { failed: true, balanceChanges: walletDelta(0n) },
      [/^transaction PaySig failed on chain$/],
    ],
    ["no memo", { memos: [] }, [/^it carries no memo q_target$/]],
    ["another memo", { memos: ["q_other"] }, [/^it carries no memo q_target$/]],
    ["a memo that only contains the quote id", { memos: ["q_target2"] }, [/^it carries no memo q_target$/]],
    [
      "a wrong destination",
      { transfers: [transfer({ destination: "OtherAta" })] },
      [/^it pays OtherAta, not the payee's token account PayeeAta$/],
    ],
    [
      "an authority that is not our wallet",
      { transfers: [transfer({ authority: "Delegate" })] },
      [/^its transfer is authorised by Delegate, not our wallet$/],
    ],
    ["another mint", { transfers: [transfer({ mint: "OtherMint" })] }, [/^it moves mint OtherMint, not Mint$/]],
    [
      "amount + 1 (the balance agrees)",
      { transfers: [transfer({ amount: AMOUNT + 1n })], balanceChanges: walletDelta(-AMOUNT - 1n) },
      [
        /^it moves 250001 atomic units, not the 250000 priced$/,
        /^the wallet's balance changed by -250001, not by -250000$/,
      ],
    ],
    [
      "amount - 1 (the balance agrees)",
      { transfers: [transfer({ amount: AMOUNT - 1n })], balanceChanges: walletDelta(-AMOUNT + 1n) },
      [
        /^it moves 249999 atomic units, not the 250000 priced$/,
        /^the wallet's balance changed by -249999, not by -250000$/,
      ],
    ],
    [
      "amount + 1 in the instruction only",
      { transfers: [transfer({ amount: AMOUNT + 1n })] },
      [/^it moves 250001 atomic units, not the 250000 priced$/],
    ],
    [
      "a balance change beyond the transfer (an inner instruction moved more)",
      { balanceChanges: walletDelta(-AMOUNT - 5n) },
      [/^the wallet's balance changed by -250005, not by -250000$/],
    ],
    [
      "a balance that went up",
      { balanceChanges: walletDelta(AMOUNT) },
      [/^the wallet's balance changed by 250000, not by -250000$/],
    ],
    [
      "the wallet's account holding another mint",
      { balanceChanges: walletDelta(-AMOUNT, "OtherMint") },
      [/^the wallet's token account holds mint OtherMint, not Mint$/],
    ],
    [
      "nothing moved out of the wallet's account",
      { transfers: [transfer({ source: "SomeoneElsesAta" })] },
      [/^it moves nothing out of the wallet's token account WalletAta$/],
    ],
    ["no transfer at all", { transfers: [] }, [/^it moves nothing out of the wallet's token account WalletAta$/]],
    [
      "an extra transfer out of our account to someone else",
      {
        transfers: [transfer(), transfer({ destination: "Thief", amount: 1n })],
        balanceChanges: walletDelta(-AMOUNT - 1n),
      },
      [
        /^it pays Thief, not the payee's token account PayeeAta$/,
        /^it moves 250001 atomic units/,
        /^the wallet's balance changed by -250001/,
      ],
    ],
  ])("reports %s", (_name, over, problems) => {
    const got = verifyPayment(payment(over), EXPECTED);
    expect(got).toHaveLength(problems.length);
    problems.forEach((p, i) => expect(got[i]).toMatch(p));
  });

  it("reports every problem at once, not just the first", () => {
    const tx = payment({
      failed: true,
      memos: ["q_other"],
      transfers: [transfer({ destination: "OtherAta", authority: "Delegate", mint: "OtherMint", amount: AMOUNT + 1n })],
      balanceChanges: walletDelta(0n, "OtherMint"),
    });
    expect(verifyPayment(tx, EXPECTED)).toEqual([
      "transaction PaySig failed on chain",
      "it carries no memo q_target",
      "it pays OtherAta, not the payee's token account PayeeAta",
      "its transfer is authorised by Delegate, not our wallet",
      "it moves mint OtherMint, not Mint",
      "it moves 250001 atomic units, not the 250000 priced",
      "the wallet's token account holds mint OtherMint, not Mint",
      // The balance delta is not judged on a failed transaction (it moved nothing).
    ]);
  });
});

// ---- refundInflow ---------------------------------------------------------------------

describe("refundInflow", () => {
  const O = { walletAta: WALLET_ATA, payee: PAYEE, mint: MINT };
  const refund = (balanceChanges: ChainTx["balanceChanges"], over: Partial<ChainTx> = {}): ChainTx =>
    payment({ signature: "RefundSig", memos: [], transfers: [], balanceChanges, ...over });
  const wallet = (delta: bigint, mint = MINT) => ({ account: WALLET_ATA, owner: WALLET, mint, delta });
  const payeeAcct = (delta: bigint, account = PAYEE_ATA, mint = MINT) => ({ account, owner: PAYEE, mint, delta });

  it.each<[string, ChainTx["balanceChanges"], bigint | "not_from_payee"]>([
    ["the payee's account loses what the wallet gains", [payeeAcct(-AMOUNT), wallet(AMOUNT)], AMOUNT],
    [
      "the wallet gains less than the payee lost: the wallet's gain",
      [payeeAcct(-AMOUNT), wallet(AMOUNT - 10n), { account: "Fee", owner: "Other", mint: MINT, delta: 10n }],
      AMOUNT - 10n,
    ],
    [
      "the payee lost less than the wallet gained: the payee's loss",
      [payeeAcct(-100n), wallet(AMOUNT), { account: "OtherAta", owner: "Other", mint: MINT, delta: -(AMOUNT - 100n) }],
      100n,
    ],
    [
      "the payee's loss spread over two of its accounts",
      [payeeAcct(-100n), payeeAcct(-150n, "PayeeAta2"), wallet(250n)],
      250n,
    ],
    [
      "inflow from someone other than the payee",
      [{ account: "OtherAta", owner: "Other", mint: MINT, delta: -AMOUNT }, wallet(AMOUNT)],
      "not_from_payee",
    ],
    [
      "a payee account whose owner the node did not report",
      [{ account: PAYEE_ATA, owner: null, mint: MINT, delta: -AMOUNT }, wallet(AMOUNT)],
      "not_from_payee",
    ],
    ["no inflow: the wallet's balance unchanged", [payeeAcct(0n), wallet(0n)], "not_from_payee"],
    [
      "no inflow: the wallet paid (our own payment, not a refund)",
      [wallet(-AMOUNT), payeeAcct(AMOUNT)],
      "not_from_payee",
    ],
    ["no balance entries at all", [], "not_from_payee"],
    ["another mint", [payeeAcct(-AMOUNT, PAYEE_ATA, "OtherMint"), wallet(AMOUNT, "OtherMint")], "not_from_payee"],
  ])("%s", (_name, balanceChanges, expected) => {
    expect(refundInflow(refund(balanceChanges), O)).toBe(expected);
  });

  it("a failed transaction brought nothing back", () => {
    expect(refundInflow(refund([payeeAcct(-AMOUNT), wallet(AMOUNT)], { failed: true }), O)).toBe("not_from_payee");
  });
});

// ---- findByMemo -----------------------------------------------------------------------

const SIGNED_AT = Date.parse("2026-01-01T12:00:00Z");
const SIGNED_S = SIGNED_AT / 1000;
const LIMITS: ScanLimits = { pageSize: 3, maxPages: 4, skewMs: 60_000 };

/** A history entry; the node's memo summary is "[len] text" per memo, joined with "; ". */
function entry(
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
const filler = (prefix: string, n: number, secondsAfterSigning = 30): Scripted[] =>
  Array.from({ length: n }, (_, i) => entry(`${prefix}${i}`, { secondsAfterSigning }));
const first = (before = "-") => `signaturesFor ${WALLET_ATA} before=${before} limit=${LIMITS.pageSize}`;

describe("findByMemo", () => {
  it("finds the transfer on the first page", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([entry("Other", { memos: ["q_other"] }), entry("Target", { memos: [MEMO], tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("pages back with `before` = the last signature of the previous page", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([
      ...filler("a", 3),
      ...filler("b", 3),
      entry("Target", { memos: [MEMO], tx }),
      ...filler("c", 3),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), first("a2"), first("b2"), "transaction Target"]);
  });

  it("skips a failed entry carrying the memo without fetching it", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([
      entry("FailedTry", { memos: [MEMO], failed: true }),
      entry("Target", { memos: [MEMO], tx }),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("skips entries with no memo (null) and with other memos without fetching them", async () => {
    const chain = scripted([entry("NoMemo1"), entry("Other", { memos: ["q_other"] })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first()]);
  });

  it("fetches an entry whose memo the node did not report (undefined)", async () => {
    const tx = payment({}, "Silent");
    const chain = scripted([entry("Silent", { undefinedMemo: true, tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
    expect(chain.calls).toEqual([first(), "transaction Silent"]);
  });

  it("fetches an unreported memo and goes on when the transaction does not carry it", async () => {
    const chain = scripted([entry("Silent", { undefinedMemo: true, tx: payment({ memos: ["q_other"] }, "Silent") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), "transaction Silent"]);
  });

  it("fetches a summary that merely contains the memo, and needs the exact memo in the transaction", async () => {
    const chain = scripted([entry("Longer", { memos: [`${MEMO}2`], tx: payment({ memos: [`${MEMO}2`] }, "Longer") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), "transaction Longer"]);
  });

  it("skips a transaction the node reports failed even when the history entry did not", async () => {
    const chain = scripted([entry("Flaky", { memos: [MEMO], tx: payment({ failed: true }, "Flaky") })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
  });

  it("is unknown when a listed entry that may carry the memo cannot be read from the node", async () => {
    // The history says a successful transaction carries our memo, but getTransaction answers
    // null (a lagging node behind a load balancer, a pruned ledger): it may be our payment, so
    // the search cannot end "absent" (which proofFate would turn into "never").
    const chain = scripted([entry("Unreadable", { memos: [MEMO], tx: null })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({
      kind: "unknown",
      why: expect.stringContaining("Unreadable"),
    });
  });

  it("is absent when the history ends (a short page)", async () => {
    const chain = scripted(filler("a", 2));
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first()]);
  });

  it("is absent when a full page is followed by an empty one", async () => {
    const chain = scripted(filler("a", 3));
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), first("a2")]);
  });

  it("is absent on an empty history", async () => {
    const chain = scripted([]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
  });

  it("is absent on reaching entries older than sinceMs - skewMs, without looking at them", async () => {
    const skewS = LIMITS.skewMs / 1000;
    const chain = scripted([
      ...filler("a", 3),
      // Just inside the skew window: still looked at.
      entry("JustInside", { secondsAfterSigning: -skewS, memos: ["q_other"] }),
      // Older than the window: the scan stops here, even though this one carries the memo.
      entry("TooOld", { secondsAfterSigning: -skewS - 1, memos: [MEMO] }),
      ...filler("z", 5, -skewS - 100),
    ]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([first(), first("a2")]);
  });

  it("does not stop at an entry without a block time", async () => {
    const tx = payment({}, "Target");
    const chain = scripted([entry("NoTime", { blockTime: null }), entry("Target", { memos: [MEMO], tx })]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({ kind: "found", tx });
  });

  it("is unknown when maxPages is exhausted before the history reaches the signing time", async () => {
    const chain = scripted(filler("a", 3 * LIMITS.maxPages + 1));
    const r = await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS);
    expect(r).toEqual({ kind: "unknown", why: expect.stringContaining("longer than 12 transactions") });
    expect(chain.calls).toEqual([first(), first("a2"), first("a5"), first("a8")]);
  });

  it("is unknown when the RPC does not answer the history", async () => {
    const chain = scripted([entry("Target", { memos: [MEMO], tx: payment({}, "Target") })]);
    chain.down.add("signaturesFor");
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not answer (fetch failed"),
    });
  });

  it("is unknown when the RPC does not answer a transaction", async () => {
    const chain = scripted([entry("Target", { memos: [MEMO], tx: payment({}, "Target") })]);
    chain.down.add("transaction");
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({ kind: "unknown" });
    expect(chain.calls).toEqual([first(), "transaction Target"]);
  });

  it("is unknown when the outage starts on a later page", async () => {
    const chain = scripted(filler("a", 5));
    const original = chain.signaturesFor.bind(chain);
    let pages = 0;
    chain.signaturesFor = async (addr, opts) => {
      if (++pages === 2) chain.down.add("signaturesFor");
      return original(addr, opts);
    };
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT, LIMITS)).toMatchObject({ kind: "unknown" });
  });

  it("uses the default limits when none are given", async () => {
    const chain = scripted([]);
    expect(await findByMemo(chain, WALLET_ATA, MEMO, SIGNED_AT)).toEqual({ kind: "absent" });
    expect(chain.calls).toEqual([`signaturesFor ${WALLET_ATA} before=- limit=100`]);
  });
});

// ---- proofFate ------------------------------------------------------------------------

describe("proofFate", () => {
  const BH = "Blockhash1";
  const LAST_VALID = 1_000n;
  const PAST = LAST_VALID + 1n;
  const proof = (o: { blockhash?: string | null; lastValidHeight?: bigint | null } = {}) => ({
    walletAta: WALLET_ATA,
    memo: MEMO,
    blockhash: o.blockhash === undefined ? BH : o.blockhash,
    lastValidHeight: o.lastValidHeight === undefined ? LAST_VALID : o.lastValidHeight,
    signedAt: SIGNED_AT,
  });
  const landedHistory = (): Scripted[] => [entry("Target", { memos: [MEMO], tx: payment({}, "Target") })];
  const absentHistory = (): Scripted[] => filler("a", 2);
  const at = (chain: ScriptedChain, height: bigint) => ((chain.height = height), chain);

  it.each<[string, bigint]>([
    ["still valid", LAST_VALID],
    ["past its last valid height", PAST],
  ])("landed when the history holds the transfer, whatever the height (%s)", async (_name, height) => {
    const chain = at(scripted(landedHistory()), height);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({ kind: "landed", tx: payment({}, "Target") });
  });

  it("landed when the height cannot be read but the history holds the transfer", async () => {
    const chain = at(scripted(landedHistory()), PAST);
    chain.down.add("finalizedHeight");
    expect(await proofFate(chain, proof(), LIMITS)).toMatchObject({ kind: "landed" });
  });

  it("never: our finalized height is past the last valid height and the history since signing holds no transfer with the memo", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({ kind: "never" });
  });

  it("reads the finalized height before the history, and asks nothing about the blockhash it vouched for at signing", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    await proofFate(chain, proof(), LIMITS);
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("sees a transfer that landed just before the height passed (the height was read first)", async () => {
    // Read the other way round, the history would be empty and the height past: "never".
    const chain = at(scripted([]), PAST);
    chain.afterHeight = () => chain.history.push(...landedHistory());
    expect(await proofFate(chain, proof(), LIMITS)).toMatchObject({ kind: "landed" });
  });

  it("unknown while the height has not passed the last valid one (at it, the transfer can still land)", async () => {
    const chain = at(scripted(absentHistory()), LAST_VALID);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("may still land"),
    });
  });

  it("unknown, not never, when the height cannot be read", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    chain.down.add("finalizedHeight");
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not say its finalized block height"),
    });
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("unknown when the history cannot be read, even past the last valid height", async () => {
    const chain = at(scripted(absentHistory()), PAST);
    chain.down.add("signaturesFor");
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("did not answer"),
    });
  });

  it("unknown when the history is too long to read back to the signing, even past the last valid height", async () => {
    const chain = at(scripted(filler("a", 3 * LIMITS.maxPages + 1)), PAST);
    expect(await proofFate(chain, proof(), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("longer than"),
    });
  });

  it("a blockhash our RPC never vouched for is unknown, never never, even when the RPC calls it invalid (it may not be valid yet)", async () => {
    const chain = at(scripted(absentHistory(), { [BH]: false }), PAST * 100n);
    expect(await proofFate(chain, proof({ lastValidHeight: null }), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("never vouched"),
    });
    expect(chain.calls).toEqual([`blockhashValid ${BH}`, "finalizedHeight", first()]);
  });

  it("a blockhash our RPC calls valid now is vouched for: at most a lifetime past the height read after it", async () => {
    const chain = at(scripted(absentHistory(), { [BH]: true }), 500n);
    expect(await proofFate(chain, proof({ lastValidHeight: null }), LIMITS)).toEqual({
      kind: "unknown",
      why: expect.stringContaining("valid up to block height 650"),
      vouched: 650n,
    });
    expect(chain.calls).toEqual([`blockhashValid ${BH}`, "finalizedHeight", first()]);
  });

  it("without a blockhash or a last valid height nothing is asked about it, and an empty history is unknown", async () => {
    const chain = at(scripted([]), PAST);
    expect(await proofFate(chain, proof({ blockhash: null, lastValidHeight: null }), LIMITS)).toMatchObject({
      kind: "unknown",
    });
    expect(chain.calls).toEqual(["finalizedHeight", first()]);
  });

  it("without a blockhash, a transfer in the history still counts as landed", async () => {
    const chain = at(scripted(landedHistory()), PAST);
    expect(await proofFate(chain, proof({ blockhash: null, lastValidHeight: null }), LIMITS)).toMatchObject({
      kind: "landed",
    });
  });
});

// ---- decodeRpcTransaction -------------------------------------------------------------

const MEMO_V2 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
const MEMO_V1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
const TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

describe("decodeRpcTransaction", () => {
  let feePayer: KeyPairSigner;
  let owner: KeyPairSigner;
  let mint: Address;
  let source: Address;
  let destination: Address;
  let payee: Address;
  let lookupTable: Address;
  let recentBlockhash: string;

  beforeAll(async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => generateKeyPairSigner()));
    [feePayer, owner] = [keys[0]!, keys[1]!];
    [mint, source, destination, payee, lookupTable] = keys.slice(2, 7).map((k) => k.address) as [
      Address,
      Address,
      Address,
      Address,
      Address,
    ];
    recentBlockhash = keys[7]!.address;
  });

  const memoIx = (text: string, program = MEMO_V2): Instruction => ({
    programAddress: address(program),
    accounts: [],
    data: new TextEncoder().encode(text),
  });
  const transferChecked = (amount: bigint, program: string = TOKEN_PROGRAM_ADDRESS) =>
    getTransferCheckedInstruction(
      { source, mint, destination, authority: owner, amount, decimals: 6 },
      { programAddress: address(program) },
    );

  /** Signs a v0 transaction; returns its base64 wire form and its static account keys. */
  async function signed(instructions: Instruction[], lookup?: Record<string, Address[]>) {
    const base = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: toBlockhash(recentBlockhash), lastValidBlockHeight: 1_000n },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const message = lookup
      ? compressTransactionMessageUsingAddressLookupTables(
          base,
          lookup as Parameters<typeof compressTransactionMessageUsingAddressLookupTables>[1],
        )
      : base;
    const tx = await signTransactionMessageWithSigners(message);
    const compiled = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    return { wire: getBase64EncodedWireTransaction(tx), keys: compiled.staticAccounts.map(String) };
  }

  const balance = (accountIndex: number, acctMint: string, acctOwner: string | undefined, amount: bigint) => ({
    accountIndex,
    mint: acctMint,
    ...(acctOwner !== undefined ? { owner: acctOwner } : {}),
    uiTokenAmount: { amount: amount.toString() },
  });

  function rpcAnswer(wire: string, meta: Partial<NonNullable<RpcTransaction["meta"]>> | null = {}): RpcTransaction {
    return {
      slot: 4242n,
      blockTime: 1_767_268_800n,
      meta:
        meta === null
          ? null
          : {
              err: null,
              preTokenBalances: [],
              postTokenBalances: [],
              loadedAddresses: { writable: [], readonly: [] },
              ...meta,
            },
      transaction: [wire, "base64"],
    };
  }

  it("reads a TransferChecked with a memo: transfer, memo, balance changes, fee payer", async () => {
    const { wire, keys } = await signed([transferChecked(250_000n), memoIx("q_abc")]);
    const at = (a: string) => keys.indexOf(a);
    const raw = rpcAnswer(wire, {
      preTokenBalances: [
        balance(at(source), mint, owner.address, 1_000_000n),
        balance(at(destination), mint, payee, 0n),
      ],
      postTokenBalances: [
        balance(at(source), mint, owner.address, 750_000n),
        balance(at(destination), mint, payee, 250_000n),
      ],
    });
    const tx = await decodeRpcTransaction("Sig1", raw);
    expect(tx).toEqual({
      signature: "Sig1",
      slot: 4242n,
      blockTime: 1_767_268_800,
      failed: false,
      feePayer: feePayer.address,
      transfers: [{ source, mint, destination, authority: owner.address, amount: 250_000n }],
      memos: ["q_abc"],
      balanceChanges: [
        { account: source, owner: owner.address, mint, delta: -250_000n },
        { account: destination, owner: payee, mint, delta: 250_000n },
      ],
    } satisfies ChainTx);
    // What the engine then checks passes on it.
    expect(
      verifyPayment(tx, {
        wallet: owner.address,
        walletAta: source,
        payeeAta: destination,
        mint,
        amount: 250_000n,
        memo: "q_abc",
      }),
    ).toEqual([]);
  });

  it("reads a failed transaction as failed (meta.err non-null), and one without meta as failed", async () => {
    const { wire } = await signed([transferChecked(1n), memoIx("q_abc")]);
    const failed = await decodeRpcTransaction(
      "Sig2",
      rpcAnswer(wire, { err: { InstructionError: [0, { Custom: 1 }] } }),
    );
    expect(failed.failed).toBe(true);
    expect(failed.transfers).toHaveLength(1); // still decoded: the rules ignore a failed one
    expect((await decodeRpcTransaction("Sig3", rpcAnswer(wire, null))).failed).toBe(true);
    expect((await decodeRpcTransaction("Sig4", rpcAnswer(wire, { err: undefined }))).failed).toBe(false);
  });

  it("reads a plain Transfer with no mint", async () => {
    const ix = getTransferInstruction({ source, destination, authority: owner, amount: 7n });
    const { wire } = await signed([ix]);
    const tx = await decodeRpcTransaction("Sig5", rpcAnswer(wire));
    expect(tx.transfers).toEqual([{ source, mint: null, destination, authority: owner.address, amount: 7n }]);
    expect(tx.memos).toEqual([]);
  });

  it("reads Token-2022 transfers and both memo programs, memos as UTF-8", async () => {
    const { wire } = await signed([
      transferChecked(2n ** 64n - 1n, TOKEN_2022),
      memoIx("q_é✓"),
      memoIx("second", MEMO_V1),
    ]);
    const tx = await decodeRpcTransaction("Sig6", rpcAnswer(wire));
    expect(tx.transfers).toEqual([{ source, mint, destination, authority: owner.address, amount: 2n ** 64n - 1n }]);
    expect(tx.memos).toEqual(["q_é✓", "second"]);
  });

  it("ignores token instructions that are not transfers or are too short", async () => {
    const truncated: Instruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [],
      data: new Uint8Array([12, 1, 2]),
    };
    const other: Instruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [],
      data: new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0, 0]),
    };
    const { wire } = await signed([truncated, other]);
    expect((await decodeRpcTransaction("Sig7", rpcAnswer(wire))).transfers).toEqual([]);
  });

  it("resolves accounts loaded from a lookup table, for instructions and balances", async () => {
    const { wire, keys } = await signed([transferChecked(3n), memoIx("q_lut")], { [lookupTable]: [destination] });
    expect(keys).not.toContain(destination);
    const loadedIndex = keys.length; // loaded writable addresses follow the static ones
    const tx = await decodeRpcTransaction(
      "Sig8",
      rpcAnswer(wire, {
        loadedAddresses: { writable: [destination], readonly: [] },
        preTokenBalances: [],
        postTokenBalances: [balance(loadedIndex, mint, payee, 3n)],
      }),
    );
    expect(tx.transfers).toEqual([{ source, mint, destination, authority: owner.address, amount: 3n }]);
    // An account that only appears after (created by the transaction) starts from zero.
    expect(tx.balanceChanges).toEqual([{ account: destination, owner: payee, mint, delta: 3n }]);
  });

  it("reads an account closed by the transaction (only a pre balance) as losing all of it; an unreported owner as null", async () => {
    const { wire, keys } = await signed([transferChecked(1n)]);
    const tx = await decodeRpcTransaction(
      "Sig9",
      rpcAnswer(wire, {
        preTokenBalances: [balance(keys.indexOf(source), mint, undefined, 5n)],
        postTokenBalances: null,
      }),
    );
    expect(tx.balanceChanges).toEqual([{ account: source, owner: null, mint, delta: -5n }]);
  });

  it("takes a null block time and numeric slot as they are", async () => {
    const { wire } = await signed([memoIx("x")]);
    const tx = await decodeRpcTransaction("Sig10", { ...rpcAnswer(wire), slot: 12, blockTime: null });
    expect({ slot: tx.slot, blockTime: tx.blockTime }).toEqual({ slot: 12n, blockTime: null });
  });

  it("refuses an answer that is not base64-encoded", async () => {
    await expect(decodeRpcTransaction("Sig11", { ...rpcAnswer(""), transaction: [] })).rejects.toThrow(/base64/);
  });
});
