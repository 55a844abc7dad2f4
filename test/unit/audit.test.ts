import { describe, expect, it } from "vitest";
import { reconcile, walletMovement, type AuditInput, type DiscrepancyKind } from "../../src/engine/audit/reconcile.js";
import { ChainScanError, scanWalletHistory } from "../../src/engine/audit/scan.js";
import type { ChainPort, ChainTx, SignatureEntry } from "../../src/engine/chain/chain.js";
import type { Intent, PaymentRecord } from "../../src/engine/model/types.js";
import { parseSince, urlOrigin } from "../../src/commands/audit.js";

const WALLET = "Wa11et1111111111111111111111111111111111111";
const ATA = "Wa11etAta11111111111111111111111111111111111";
const MINT = "Mint111111111111111111111111111111111111111";
const PAYEE = "Payee11111111111111111111111111111111111111";
const PAYEE_ATA = "PayeeAta1111111111111111111111111111111111";
const STRANGER = "Stranger111111111111111111111111111111111111";
const STRANGER_ATA = "StrangerAta11111111111111111111111111111111";

const T0 = Date.parse("2026-11-01T12:00:00Z");
const MIN = 60_000;
const sec = (ms: number) => Math.floor(ms / 1000);
const usdc = (n: number) => BigInt(Math.round(n * 1_000_000));
let slot = 100n;

/** A payment transfer from the wallet to `to`, carrying `memo`, at `at` (ms). */
function payTx(
  sig: string,
  memo: string | null,
  amount: bigint,
  at = T0 + MIN,
  o: { to?: string; toOwner?: string; noBalances?: boolean; failed?: boolean } = {},
): ChainTx {
  const to = o.to ?? PAYEE_ATA;
  return {
    signature: sig,
    slot: slot++,
    blockTime: sec(at),
    failed: o.failed ?? false,
    feePayer: PAYEE,
    transfers: [{ source: ATA, destination: to, authority: WALLET, mint: MINT, amount }],
    memos: memo === null ? [] : [memo],
    balanceChanges: o.noBalances
      ? []
      : [
          { account: ATA, owner: WALLET, mint: MINT, delta: -amount },
          { account: to, owner: o.toOwner ?? PAYEE, mint: MINT, delta: amount },
        ],
  };
}

/** Money into the wallet from `fromOwner`'s account. */
function inTx(sig: string, amount: bigint, at = T0 + 2 * MIN, fromOwner = PAYEE): ChainTx {
  const from = fromOwner === PAYEE ? PAYEE_ATA : STRANGER_ATA;
  return {
    signature: sig,
    slot: slot++,
    blockTime: sec(at),
    failed: false,
    feePayer: fromOwner,
    transfers: [{ source: from, destination: ATA, authority: fromOwner, mint: MINT, amount }],
    memos: [],
    balanceChanges: [
      { account: from, owner: fromOwner, mint: MINT, delta: -amount },
      { account: ATA, owner: WALLET, mint: MINT, delta: amount },
    ],
  };
}

function payment(
  quoteId: string,
  intentId: string,
  amount: bigint,
  fate: PaymentRecord["fate"],
  o: Partial<PaymentRecord> = {},
): PaymentRecord {
  return {
    quoteId,
    intentId,
    attempt: 1,
    amount,
    payee: PAYEE,
    payer: WALLET,
    mint: MINT,
    source: ATA,
    blockhash: "bh",
    lastValidHeight: 1_150n,
    signedAt: T0,
    sentAt: T0,
    fate,
    tx: null,
    claimedTx: null,
    checkedAt: null,
    watch: false,
    ...o,
  };
}

function intent(intentId: string, o: Partial<Intent> = {}): Intent {
  return {
    intentId,
    intentKey: `k-${intentId}`,
    attempt: 1,
    idemKey: `k-${intentId}`,
    service: "svc",
    action: "servers.provision",
    input: {},
    fingerprint: "f",
    agentBudget: null,
    state: "executed",
    quoteId: null,
    quote: null,
    amount: null,
    payee: PAYEE,
    quoteExpiresAt: null,
    quotedAt: null,
    requirements: null,
    proof: null,
    payment: null,
    paymentTx: null,
    settlement: "verified",
    executionId: null,
    execution: null,
    execStatus: "completed",
    output: null,
    refund: null,
    refundState: "none",
    refundCredit: 0n,
    refundTx: null,
    refundSeenAt: null,
    budgetState: "spent",
    budgetAmount: null,
    budgetAt: null,
    approvalId: null,
    error: null,
    attention: null,
    callId: null,
    leaseOwner: null,
    leaseUntil: null,
    nextPollAt: null,
    pollIntervalMs: null,
    createdAt: T0 - 1000,
    updatedAt: T0,
    ...o,
  };
}

/** An intent that paid `quoteId` (`amount`) and executed, its settlement verified. */
const paid = (intentId: string, quoteId: string, amount: bigint, o: Partial<Intent> = {}) =>
  intent(intentId, { quoteId, amount, budgetAmount: amount, paymentTx: `tx-${quoteId}`, ...o });

interface Row {
  name: string;
  txs?: ChainTx[];
  payments?: PaymentRecord[];
  intents?: Intent[];
  now?: number;
  since?: number;
  kinds: DiscrepancyKind[];
  check?: (r: ReturnType<typeof reconcile>) => void;
}

const A = usdc(0.288);
const B = usdc(1.5);

const rows: Row[] = [
  {
    name: "an honest history: one payment, executed and verified, on chain",
    txs: [payTx("s1", "q1", A)],
    payments: [payment("q1", "i1", A, "landed", { tx: "s1" })],
    intents: [paid("i1", "q1", A)],
    kinds: [],
    check: (r) => {
      expect(r.outflows).toEqual([
        {
          transaction: "s1",
          at: new Date(sec(T0 + MIN) * 1000).toISOString(),
          amount: "0.288",
          quoteId: "q1",
          intentId: "i1",
          matched: true,
        },
      ]);
      expect(r.payments.map((p) => [p.quoteId, p.status, p.chainTransaction])).toEqual([["q1", "on_chain", "s1"]]);
      expect(r.ok).toBe(true);
    },
  },
  {
    name: "an outflow without a memo is unknown",
    txs: [payTx("s1", null, A)],
    kinds: ["unknown_outflow"],
    check: (r) => expect(r.discrepancies[0]).toMatchObject({ transaction: "s1", chainAmount: "0.288" }),
  },
  {
    name: "an outflow whose memo names a quote the journal does not know is unknown, and named",
    txs: [payTx("s1", "q_lost", B)],
    payments: [],
    kinds: ["unknown_outflow"],
    check: (r) => {
      expect(r.discrepancies[0]).toMatchObject({ quoteId: "q_lost", transaction: "s1", chainAmount: "1.50" });
      expect(r.ok).toBe(false);
    },
  },
  {
    name: "a matched payment that moved another amount",
    txs: [payTx("s1", "q1", B)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [paid("i1", "q1", A)],
    kinds: ["amount_mismatch"],
    check: (r) =>
      expect(r.discrepancies[0]).toMatchObject({
        quoteId: "q1",
        intentId: "i1",
        journalAmount: "0.288",
        chainAmount: "1.50",
      }),
  },
  {
    name: "a matched payment that paid someone other than the journal's payee",
    txs: [payTx("s1", "q1", A, T0 + MIN, { to: STRANGER_ATA, toOwner: STRANGER })],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [paid("i1", "q1", A)],
    kinds: ["payee_mismatch"],
  },
  {
    name: "two transfers carrying one quote's memo: paid twice",
    txs: [payTx("s1", "q1", A), payTx("s2", "q1", A, T0 + 2 * MIN)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [paid("i1", "q1", A)],
    kinds: ["duplicate_payment"],
    check: (r) => expect(r.discrepancies[0]!.transaction).toBe("s2"),
  },
  {
    name: "a payment the journal says can never land is on chain",
    txs: [payTx("s1", "q1", A)],
    payments: [payment("q1", "i1", A, "never")],
    intents: [intent("i1", { state: "new", attempt: 2, quoteId: null, settlement: "none" })],
    kinds: ["landed_but_never"],
  },
  {
    name: "a payment of an intent the journal counts as failed (nothing spent) is on chain",
    txs: [payTx("s1", "q1", A)],
    payments: [payment("q1", "i1", A, "pending")],
    intents: [paid("i1", "q1", A, { state: "failed", settlement: "none", budgetState: "released" })],
    kinds: ["landed_but_never"],
  },
  {
    name: "a payment on chain whose journal record belongs to no intent",
    txs: [payTx("s1", "q1", A)],
    payments: [payment("q1", "i_gone", A, "landed")],
    intents: [],
    kinds: ["orphan_payment"],
  },
  {
    name: "a payment recorded as landed that is not on chain",
    txs: [],
    payments: [payment("q1", "i1", A, "landed", { tx: "s_ghost" })],
    intents: [paid("i1", "q1", A)],
    kinds: ["claimed_but_absent"],
    check: (r) => {
      expect(r.discrepancies[0]).toMatchObject({
        quoteId: "q1",
        intentId: "i1",
        transaction: "s_ghost",
        journalAmount: "0.288",
      });
      expect(r.payments[0]!.status).toBe("absent");
    },
  },
  {
    name: "a settlement the service claimed long ago, executed, not on chain",
    txs: [],
    payments: [payment("q1", "i1", A, "pending", { claimedTx: "s_claimed" })],
    intents: [paid("i1", "q1", A, { settlement: "claimed", paymentTx: "s_claimed" })],
    now: T0 + 10 * MIN,
    kinds: ["claimed_but_absent"],
  },
  {
    name: "a settlement claimed moments ago, not on our RPC yet: in flight",
    txs: [],
    payments: [payment("q1", "i1", A, "pending", { claimedTx: "s_claimed" })],
    intents: [paid("i1", "q1", A, { state: "paid", settlement: "claimed" })],
    now: T0 + 30_000,
    kinds: [],
    check: (r) => expect(r.inFlight.map((f) => f.quoteId)).toEqual(["q1"]),
  },
  {
    name: "a verified settlement whose transfer is missing is absent even moments later",
    txs: [],
    payments: [payment("q1", "i1", A, "pending")],
    intents: [paid("i1", "q1", A, { settlement: "verified" })],
    now: T0 + 30_000,
    kinds: ["claimed_but_absent"],
  },
  {
    name: "a signed proof the service has not settled: in flight, not a discrepancy",
    txs: [],
    payments: [payment("q1", "i1", A, "pending")],
    intents: [paid("i1", "q1", A, { state: "unsettled", settlement: "none" })],
    kinds: [],
    check: (r) => {
      expect(r.inFlight).toHaveLength(1);
      expect(r.payments[0]!.status).toBe("in_flight");
    },
  },
  {
    name: "a proof that never landed, its intent moved on to a new attempt that landed",
    txs: [payTx("s2", "q2", A)],
    payments: [payment("q1", "i1", A, "never"), payment("q2", "i1", A, "landed", { attempt: 2, signedAt: T0 + 1000 })],
    intents: [paid("i1", "q2", A, { attempt: 2 })],
    kinds: [],
    check: (r) => expect(r.payments.map((p) => p.status)).toEqual(["not_landed", "on_chain"]),
  },
  {
    name: "a refund credited and on chain from the payee",
    txs: [payTx("s1", "q1", A), inTx("r1", A)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [
      paid("i1", "q1", A, {
        execStatus: "refunded",
        refund: { amount: "0.288", currency: "USDC", transaction: "r1" },
        refundState: "verified",
        refundCredit: A,
        refundTx: "r1",
      }),
    ],
    kinds: [],
    check: (r) => {
      expect(r.refunds).toMatchObject([
        { intentId: "i1", status: "verified", credited: "0.288", chainAmount: "0.288" },
      ]);
      expect(r.deposits).toEqual([]);
    },
  },
  {
    name: "a refund credited whose transaction is not in the history",
    txs: [payTx("s1", "q1", A)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [
      paid("i1", "q1", A, { execStatus: "refunded", refundState: "verified", refundCredit: A, refundTx: "r_ghost" }),
    ],
    kinds: ["unverified_refund"],
    check: (r) =>
      expect(r.discrepancies[0]).toMatchObject({ intentId: "i1", transaction: "r_ghost", journalAmount: "0.288" }),
  },
  {
    name: "a refund credited in full that brought back less",
    txs: [payTx("s1", "q1", A), inTx("r1", usdc(0.1))],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [
      paid("i1", "q1", A, { execStatus: "refunded", refundState: "verified", refundCredit: A, refundTx: "r1" }),
    ],
    kinds: ["unverified_refund"],
    check: (r) => expect(r.discrepancies[0]).toMatchObject({ chainAmount: "0.10", journalAmount: "0.288" }),
  },
  {
    name: "a refund credited from a transaction that came from someone other than the payee",
    txs: [payTx("s1", "q1", A), inTx("r1", A, T0 + 2 * MIN, STRANGER)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [
      paid("i1", "q1", A, { execStatus: "refunded", refundState: "verified", refundCredit: A, refundTx: "r1" }),
    ],
    kinds: ["unverified_refund"],
  },
  {
    name: "one refund transaction credited to two intents",
    txs: [payTx("s1", "q1", A), payTx("s2", "q2", A), inTx("r1", A)],
    payments: [payment("q1", "i1", A, "landed"), payment("q2", "i2", A, "landed")],
    intents: [
      paid("i1", "q1", A, { refundState: "verified", refundCredit: A, refundTx: "r1" }),
      paid("i2", "q2", A, { refundState: "verified", refundCredit: A, refundTx: "r1" }),
    ],
    kinds: ["unverified_refund", "unverified_refund"],
  },
  {
    name: "a refund the service reports but nothing credited yet: information only",
    txs: [payTx("s1", "q1", A), inTx("r1", A)],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [
      paid("i1", "q1", A, {
        execStatus: "refunded",
        refund: { amount: "0.288", currency: "USDC", transaction: "r1" },
        refundState: "pending",
      }),
    ],
    kinds: [],
    check: (r) => {
      expect(r.refunds).toMatchObject([{ status: "not_credited", chainAmount: "0.288", refundState: "pending" }]);
      expect(r.deposits).toEqual([]);
    },
  },
  {
    name: "a human topping up the wallet is a deposit",
    txs: [inTx("d1", usdc(100), T0 + MIN, STRANGER)],
    kinds: [],
    check: (r) =>
      expect(r.deposits).toEqual([
        { transaction: "d1", at: new Date(sec(T0 + MIN) * 1000).toISOString(), amount: "100.00" },
      ]),
  },
  {
    name: "an outflow before the window is not reported; a payment signed just before it still matches",
    since: T0,
    txs: [payTx("s_old", null, B, T0 - 5 * MIN), payTx("s1", "q1", A, T0 + 10_000)],
    payments: [payment("q1", "i1", A, "landed", { signedAt: T0 - 30_000 })],
    intents: [paid("i1", "q1", A)],
    kinds: [],
    check: (r) => {
      expect(r.outflows.map((o) => o.transaction)).toEqual(["s1"]);
      expect(r.payments).toEqual([]);
    },
  },
  {
    name: "a payment in the window whose transfer's block time is just before it (clock skew) is on chain",
    since: T0,
    txs: [payTx("s1", "q1", A, T0 - 20_000)],
    payments: [payment("q1", "i1", A, "landed", { signedAt: T0 + 1000 })],
    intents: [paid("i1", "q1", A)],
    kinds: [],
    check: (r) => expect(r.payments[0]!.status).toBe("on_chain"),
  },
  {
    name: "payments of another wallet are not this account's business",
    txs: [],
    payments: [payment("q1", "i1", A, "landed", { payer: STRANGER })],
    intents: [paid("i1", "q1", A)],
    kinds: [],
    check: (r) => expect(r.otherWallet).toEqual([{ quoteId: "q1", payer: STRANGER, mint: MINT }]),
  },
  {
    name: "a transaction that failed on chain moved nothing",
    txs: [payTx("s1", null, A, T0 + MIN, { failed: true })],
    kinds: [],
    check: (r) => expect(r.outflows).toEqual([]),
  },
  {
    name: "a node that reports no token balances: the transfer out still counts",
    txs: [payTx("s1", "q1", A, T0 + MIN, { noBalances: true }), payTx("s2", null, B, T0 + MIN, { noBalances: true })],
    payments: [payment("q1", "i1", A, "landed")],
    intents: [paid("i1", "q1", A)],
    kinds: ["unknown_outflow"],
    check: (r) => expect(r.discrepancies[0]!.transaction).toBe("s2"),
  },
];

describe("reconcile: the wallet's history against the journal", () => {
  it.each(rows)("$name", (row) => {
    const input: AuditInput = {
      since: row.since ?? T0 - 10 * MIN,
      now: row.now ?? T0 + 60 * MIN,
      wallet: WALLET,
      walletAta: ATA,
      mint: MINT,
      txs: row.txs ?? [],
      payments: row.payments ?? [],
      intents: row.intents ?? [],
    };
    const report = reconcile(input);
    expect(report.discrepancies.map((d) => d.kind).sort()).toEqual([...row.kinds].sort());
    expect(report.ok).toBe(row.kinds.length === 0);
    for (const d of report.discrepancies) expect(d.message.length).toBeGreaterThan(10);
    expect(() => JSON.stringify(report)).not.toThrow(); // no bigint in the report
    row.check?.(report);
  });

  it("walletMovement: the node's balance change wins over the decoded transfers when larger", () => {
    const tx = payTx("s1", "q1", A);
    tx.balanceChanges[0]!.delta = -(A + B); // an inner instruction moved more
    expect(walletMovement(tx, ATA, MINT)).toEqual({ out: A + B, in: 0n });
    expect(walletMovement(inTx("r", A), ATA, MINT)).toEqual({ out: 0n, in: A });
    expect(walletMovement(payTx("s", null, A, T0, { failed: true }), ATA, MINT)).toEqual({ out: 0n, in: 0n });
  });
});

// ---- The scan, over a scripted chain port ------------------------------------------

/** A history of `n` entries, newest first, one per minute back from `newest`. */
function history(n: number, newest: number, failedEvery = 0): SignatureEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    signature: `sig${i}`,
    slot: BigInt(10_000 - i),
    blockTime: sec(newest - i * MIN),
    failed: failedEvery > 0 && i % failedEvery === failedEvery - 1,
    memo: null,
  }));
}

/** A scripted chain port: pages `entries` as a node would; records each call; throws on what it was not told to expect. */
function scripted(
  entries: SignatureEntry[],
  o: { failSignatures?: number; nullTimes?: number; repeatPage?: boolean } = {},
) {
  const calls: string[] = [];
  let failures = o.failSignatures ?? 0;
  const nulls = new Map<string, number>();
  const port: ChainPort = {
    latestBlockhash: () => {
      throw new Error("unexpected latestBlockhash");
    },
    finalizedHeight: () => {
      throw new Error("unexpected finalizedHeight");
    },
    tokenAccount: () => {
      throw new Error("unexpected tokenAccount");
    },
    blockhashValid: () => {
      throw new Error("unexpected blockhashValid");
    },
    signaturesFor: async (address, { before, until, limit }) => {
      calls.push(`sigs ${before ?? "-"} ${limit}`);
      if (address !== ATA) throw new Error(`unexpected address ${address}`);
      if (until) throw new Error("unexpected until");
      if (failures > 0) {
        failures--;
        throw new Error("HTTP 503");
      }
      const start = before && !o.repeatPage ? entries.findIndex((e) => e.signature === before) + 1 : 0;
      return entries.slice(start, start + limit);
    },
    transaction: async (sig) => {
      calls.push(`tx ${sig}`);
      const entry = entries.find((e) => e.signature === sig);
      if (!entry) throw new Error(`unexpected transaction ${sig}`);
      const seen = nulls.get(sig) ?? 0;
      if (seen < (o.nullTimes ?? 0)) {
        nulls.set(sig, seen + 1);
        return null;
      }
      return { ...payTx(sig, null, 1n), slot: entry.slot, blockTime: entry.blockTime };
    },
  };
  return { port, calls };
}

const noSleep = async () => undefined;

describe("scanWalletHistory: the token account's history back to a time", () => {
  it("pages with `before` until it reaches an entry older than `from`, and reads each successful transaction", async () => {
    const entries = history(300, T0, 10); // every 10th failed
    const from = T0 - 249.5 * MIN; // entries 0..249 are inside
    const { port, calls } = scripted(entries);
    const scan = await scanWalletHistory(port, ATA, from, { pageSize: 100, concurrency: 3, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toEqual(["sigs - 100", "sigs sig99 100", "sigs sig199 100"]);
    expect(scan.signatures).toBe(250);
    expect(scan.failed).toBe(25);
    expect(scan.transactionsRead).toBe(225);
    expect(scan.pages).toBe(3);
    expect(calls.filter((c) => c.startsWith("tx"))).toHaveLength(225);
    expect(calls).not.toContain("tx sig9"); // failed on chain: moved nothing, not fetched
    expect(scan.txs.map((t) => t.slot)).toEqual([...scan.txs.map((t) => t.slot)].sort((a, b) => (a < b ? -1 : 1))); // oldest first
  });

  it("returns the history oldest first, keeping the node's order within one slot", async () => {
    const entries = history(4, T0).map((e) => ({ ...e, slot: 7n }));
    const scan = await scanWalletHistory(scripted(entries).port, ATA, 0, { sleep: noSleep });
    expect(scan.txs.map((t) => t.signature)).toEqual(["sig3", "sig2", "sig1", "sig0"]);
  });

  it("stops at the end of a short history without asking for another page", async () => {
    const { port, calls } = scripted(history(42, T0));
    const scan = await scanWalletHistory(port, ATA, 0, { pageSize: 100, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toHaveLength(1);
    expect(scan.txs).toHaveLength(42);
  });

  it("an exactly full last page is followed by one more (empty) page", async () => {
    const { port, calls } = scripted(history(200, T0));
    const scan = await scanWalletHistory(port, ATA, 0, { pageSize: 100, sleep: noSleep });
    expect(calls.filter((c) => c.startsWith("sigs"))).toEqual(["sigs - 100", "sigs sig99 100", "sigs sig199 100"]);
    expect(scan.signatures).toBe(200);
  });

  it("retries an RPC that fails once, and gives up with rpc_unavailable when it keeps failing", async () => {
    const once = scripted(history(5, T0), { failSignatures: 1 });
    expect((await scanWalletHistory(once.port, ATA, 0, { sleep: noSleep })).signatures).toBe(5);
    const down = scripted(history(5, T0), { failSignatures: 99 });
    const err = await scanWalletHistory(down.port, ATA, 0, { attempts: 3, sleep: noSleep }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainScanError);
    expect((err as ChainScanError).reason).toBe("rpc_unavailable");
    expect(down.calls).toHaveLength(3);
  });

  it("asks again for a transaction the node lists but does not serve yet; one never served is transaction_missing", async () => {
    const lagging = scripted(history(3, T0), { nullTimes: 1 });
    expect((await scanWalletHistory(lagging.port, ATA, 0, { sleep: noSleep })).txs).toHaveLength(3);
    const pruned = scripted(history(3, T0), { nullTimes: 99 });
    await expect(scanWalletHistory(pruned.port, ATA, 0, { attempts: 2, sleep: noSleep })).rejects.toMatchObject({
      reason: "transaction_missing",
    });
  });

  it("refuses a history longer than its bound, and a node that repeats a page", async () => {
    await expect(
      scanWalletHistory(scripted(history(500, T0)).port, ATA, 0, { pageSize: 100, maxSignatures: 250, sleep: noSleep }),
    ).rejects.toMatchObject({ reason: "history_too_long" });
    await expect(
      scanWalletHistory(scripted(history(500, T0), { repeatPage: true }).port, ATA, 0, {
        pageSize: 100,
        sleep: noSleep,
      }),
    ).rejects.toMatchObject({ reason: "rpc_unavailable" });
  });
});

describe("audit command helpers", () => {
  it.each([
    ["2026-11-01", Date.parse("2026-11-01T00:00:00Z")],
    ["2026-11-01T12:00:00Z", Date.parse("2026-11-01T12:00:00Z")],
    ["2026-11-01T12:00", Date.parse("2026-11-01T12:00:00Z")],
    ["2026-11-01T12:00:00.250+02:00", Date.parse("2026-11-01T10:00:00.250Z")],
    ["2026-02-30", undefined],
    ["2026-11-01T25:00:00Z", undefined],
    ["yesterday", undefined],
    ["1730000000", undefined],
    ["", undefined],
  ])("parseSince(%j)", (text, expected) => {
    expect(parseSince(text)).toBe(expected);
  });

  it("an RPC URL is shown by its origin only (an API key may be in its path or query)", () => {
    expect(urlOrigin("https://user:pw@rpc.example.com:8443/v2/SECRETKEY?api-key=SECRET")).toBe(
      "https://rpc.example.com:8443",
    );
    expect(urlOrigin("not a url")).toBe("(an invalid URL)");
  });
});
