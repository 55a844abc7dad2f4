/**
 * x402 sellers that lie in their 402 (test/helpers/x402-seller.ts, settling on the sandbox's
 * ledger): one names our own wallet as the fee payer — a proof we signed would be whole, and
 * the seller could send it to the chain itself with our wallet paying the fee; others give two
 * resources one transfer memo — two purchases the chain could not tell apart. For the first
 * nothing is signed or sent (the rule the action path keeps, budget/policy.ts feePayerDrift);
 * for the second the purchase that comes second is answered with the resource's memo in use,
 * never as the service's error, and nothing is paid for it. The ledger decides what was paid.
 *
 * On EVM those two lies do not apply: the facilitator submits an EIP-3009 authorization and
 * pays the gas (there is no fee payer to name), and every authorization carries a random nonce
 * of ours, so the chain tells two purchases apart whatever memo a seller writes. An EVM seller
 * lies with the proof's lifetime and the token instead: a year-long maxTimeoutSeconds, a
 * validAfter in the future, another ERC-20 contract, another chain (the second describe).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BASE_MAINNET, BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import { PaidActionError } from "../../src/engine/errors.js";
import { VALIDITY_BOUND_S } from "../../src/engine/rails/evm/rules.js";
import { engineFixture, refusal, type EngineFixture } from "../helpers/engine.js";
import { authorizationOf, balances, EVM, moved } from "../helpers/rails.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { startLyingSeller, type LyingSeller } from "../helpers/x402-seller.js";

const PRICE = 10_000n; // 0.01 USDC

describe("x402 sellers that lie in their 402", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  let s: LyingSeller | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every refusal that said nothing was charged: no transfer for it on the ledger, the proofs the seller kept replayed.
    await f?.checkRefusals(s?.proofs.map((p) => ({ headers: { "payment-signature": p.proof }, body: "" })));
    await f?.close();
    await s?.close();
    f = undefined;
    s = undefined;
  });

  const paymentsOf = async (intentId: string) =>
    (await f!.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intentId);

  it("a seller naming our wallet as fee payer: nothing is signed or sent, the wallet's USDC and SOL are untouched", async () => {
    s = await startLyingSeller(t, { extra: () => ({ feePayer: t.wallet.address }), settle: "ledger" });
    f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: s.url } });
    // Enough SOL that the seller could land a proof whose fee our wallet pays (an amount no other airdrop had).
    if (t.sb.ledger.lamports(t.wallet.address) < 10_000_000n) t.sb.ledger.airdrop(t.wallet.address, 1_000_000_007n);
    const [usdc, sol] = [await t.usdc(t.wallet.address), t.sb.ledger.lamports(t.wallet.address)];
    const r = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/fee`, intentKey: "fee-payer-ours-1" }));
    expect(s.proofs, "no proof was handed to the seller").toEqual([]);
    expect(r.code).toBe("payment_unsupported");
    expect(r.message).toMatch(/fee payer/);
    expect(r.message).toMatch(/nothing was paid/);
    expect(await t.usdc(t.wallet.address)).toBe(usdc);
    expect(t.sb.ledger.lamports(t.wallet.address)).toBe(sol);
    const intent = (await f.pa.journal.intentByKey("fee-payer-ours-1"))!;
    expect(intent.state).toBe("refused");
    expect(await paymentsOf(intent.intentId)).toEqual([]);
  });

  it("two resources with one memo, the second paid after the first: answered with the memo in use, paid once", async () => {
    const memo = "shared-memo-0001";
    s = await startLyingSeller(t, {
      extra: () => ({ feePayer: t.sb.keys.feePayer.address, memo }),
      settle: "facilitator",
    });
    // A person approves each: both are priced (the memo not yet on any payment) before either is signed.
    f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: s.url, PAID_ACTIONS_APPROVAL_ABOVE: "0.001" } });
    const before = await t.usdc(t.wallet.address);
    const ask = async (path: string, intentKey: string) => {
      const r = await refusal(f!.pa.engine.payFetch({ url: `${s!.url}${path}`, intentKey }));
      expect(r.code).toBe("approval_required");
      const approvalId = (r as PaidActionError<"approval_required">).context.approvalId;
      await f!.pa.engine.approve(approvalId);
      return approvalId;
    };
    const a = await ask("/paid/a", "memo-first-0001");
    const b = await ask("/paid/b", "memo-second-0001");
    const first = await f.pa.engine.payFetch({ url: `${s.url}/paid/a`, intentKey: "memo-first-0001", approvalId: a });
    expect(first.result).toMatchObject({ status: 200, payment: { amount: "0.01" } });
    const second = await refusal(
      f.pa.engine.payFetch({ url: `${s.url}/paid/b`, intentKey: "memo-second-0001", approvalId: b }),
    );
    expect(second.code, second.message).not.toBe("service_error");
    expect(second.code).toBe("payment_unsupported");
    expect(second.message).toMatch(/memo .*is in use by another purchase/);
    expect(second.message).not.toMatch(/UNIQUE|constraint|duplicate key/i);
    expect(s.proofs.map((p) => p.path)).toEqual(["/paid/a"]);
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
    const loser = (await f.pa.journal.intentByKey("memo-second-0001"))!;
    expect(await paymentsOf(loser.intentId)).toEqual([]);
    expect(loser.budgetState).not.toBe("reserved");
  });

  it("two resources with one memo bought at once: one is paid, the other is refused with the memo in use", async () => {
    const memo = "shared-memo-0002";
    s = await startLyingSeller(t, {
      extra: () => ({ feePayer: t.sb.keys.feePayer.address, memo }),
      settle: "facilitator",
    });
    f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: s.url } });
    const before = await t.usdc(t.wallet.address);
    const buy = (path: string) =>
      f!.pa.engine.payFetch({ url: `${s!.url}${path}` }).then(
        (out) => out.result,
        (e: unknown) => {
          if (e instanceof PaidActionError) return e;
          throw e;
        },
      );
    const both = await Promise.all([buy("/paid/c"), buy("/paid/d")]);
    const refused = both.filter((r): r is PaidActionError => r instanceof PaidActionError);
    expect(refused.map((r) => r.code)).toEqual(["payment_unsupported"]);
    expect(refused[0]!.message).toMatch(/memo .*is in use by another purchase/);
    expect(s.proofs).toHaveLength(1);
    expect(await t.usdc(t.wallet.address)).toBe(before - PRICE);
  });
});

describe("x402 sellers that lie in their 402, on EVM", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  let s: LyingSeller | undefined;
  beforeAll(async () => {
    t = await startTestSandbox(EVM.sandbox);
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every refusal that said nothing was charged: its authorization unused on the EVM ledger, the kept proofs replayed.
    await f?.checkRefusals(s?.proofs.map((p) => ({ headers: { "payment-signature": p.proof }, body: "" })));
    await f?.close();
    await s?.close();
    f = undefined;
    s = undefined;
  });

  /** A seller on the sandbox's EVM ledger (its USDC, its seller key), settling through the facilitator, with the lie. */
  const evmSeller = (lie: { requirement?: Record<string, unknown>; extra?: Record<string, unknown> }) =>
    startLyingSeller(t, {
      requirement: () => ({ network: BASE_SEPOLIA, asset: t.sb.evm!.asset, payTo: EVM.seller(t), ...lie.requirement }),
      extra: () => ({ name: "USDC", version: "2", ...lie.extra }),
      settle: "facilitator",
    });
  const open = (seller: LyingSeller) =>
    engineFixture({ t, env: { ...EVM.env(t), PAID_ACTIONS_ALLOW_ORIGINS: seller.url } });
  const paymentsOf = async (intentId: string) =>
    (await f!.pa.journal.paymentsSince(0)).filter((p) => p.intentId === intentId);

  it("a year-long maxTimeoutSeconds: paid once, the authorization valid no longer than our bound", async () => {
    s = await evmSeller({ requirement: { maxTimeoutSeconds: 365 * 24 * 3600 } });
    f = await open(s);
    const before = await balances(EVM, t, EVM.seller(t));
    const paid = await f.pa.engine.payFetch({ url: `${s.url}/paid/year`, intentKey: "evm-year-timeout" });
    expect(paid.result).toMatchObject({ status: 200, payment: { amount: "0.01", network: BASE_SEPOLIA } });
    expect(await moved(EVM, t, before, EVM.seller(t))).toEqual({ payer: PRICE, payee: PRICE });
    // The proof that left (the seller kept it) and the journal agree: validBefore within our bound of signing.
    expect(s.proofs).toHaveLength(1);
    const signed = authorizationOf(s.proofs[0]!.proof);
    const [record] = await paymentsOf(paid.result.intentId!);
    expect(signed.validBefore).toBe(record!.validBefore);
    const signedS = BigInt(Math.floor(record!.signedAt / 1000));
    expect(signed.validBefore > signedS).toBe(true);
    expect(signed.validBefore <= signedS + BigInt(VALIDITY_BOUND_S)).toBe(true);
    expect(signed.validAfter).toBe(0n);
  });

  it("a validAfter in the future asked for: we sign one that is not in the future, paid once", async () => {
    const later = Math.floor(Date.now() / 1000) + 3600;
    s = await evmSeller({ extra: { validAfter: String(later) }, requirement: { validAfter: String(later) } });
    f = await open(s);
    const before = await balances(EVM, t, EVM.seller(t));
    const paid = await f.pa.engine.payFetch({ url: `${s.url}/paid/later`, intentKey: "evm-future-valid-after" });
    expect(paid.result).toMatchObject({ status: 200, payment: { amount: "0.01" } });
    expect(await moved(EVM, t, before, EVM.seller(t))).toEqual({ payer: PRICE, payee: PRICE });
    const signed = authorizationOf(s.proofs[0]!.proof);
    const [record] = await paymentsOf(paid.result.intentId!);
    expect(signed.validAfter <= BigInt(Math.floor(record!.signedAt / 1000))).toBe(true);
    expect(record!.validAfter).toBe(signed.validAfter);
  });

  for (const [what, lie] of [
    ["another ERC-20 contract", { asset: EVM.drift.asset }],
    [
      `${BASE_MAINNET} while we pay on ${BASE_SEPOLIA}`,
      { network: BASE_MAINNET, asset: EVM_USDC[BASE_MAINNET]!.address },
    ],
  ] as const) {
    it(`a seller asking for ${what}: refused before signing, no proof sent, nothing debited`, async () => {
      s = await evmSeller({ requirement: lie });
      f = await open(s);
      const before = await balances(EVM, t, EVM.seller(t));
      const key = `evm-drift-${lie.asset.slice(2, 10)}`;
      const r = await refusal(f.pa.engine.payFetch({ url: `${s.url}/paid/drift`, intentKey: key }));
      expect(r.code).toBe("payment_unsupported");
      expect(r.message).toMatch(new RegExp(`exact on ${BASE_SEPOLIA} in USDC ${t.sb.evm!.asset}`));
      expect(s.proofs, "no proof was handed to the seller").toEqual([]);
      expect(await moved(EVM, t, before, EVM.seller(t))).toEqual({ payer: 0n, payee: 0n });
      const intent = await f.pa.journal.intentByKey(key);
      if (intent) expect(await paymentsOf(intent.intentId)).toEqual([]);
    });
  }
});
