/**
 * The audit's reconciliation (src/engine/audit/reconcile.ts), row by row: the wallet's
 * history on chain against the journal's payments and intents, and each discrepancy it must
 * name (or not). Pure: hand-built transactions, no chain.
 */
import { describe, expect, it } from "vitest";
import { reconcile, walletMovement, type AuditInput, type DiscrepancyKind } from "../../src/engine/audit/reconcile.js";
import type { ChainTx } from "../../src/engine/chain/chain.js";
import type { IntentRecord, PaymentRecord } from "../../src/engine/model/types.js";
import {
  ATA,
  inTx,
  intent,
  MIN,
  MINT,
  paid,
  payment,
  payTx,
  sec,
  STRANGER,
  STRANGER_ATA,
  T0,
  usdc,
  WALLET,
} from "./audit.fixtures.js";

interface Row {
  name: string;
  txs?: ChainTx[];
  payments?: PaymentRecord[];
  intents?: IntentRecord[];
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
