/**
 * What the x402 payment tests (test/sandbox/payments-*.test.ts) do and check against their
 * sandbox: a fresh quote for SERVER_INPUT, a proof presented through /payments/confirm or
 * POST /executions, the USDC balances of the payer and the treasury, the shape of a refused
 * proof, a quote that is still unpaid, and a transaction's USDC movement per owner.
 */
import { expect } from "vitest";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { SERVER_INPUT, type ApiResponse, type TestSandbox } from "./sandbox.js";

export const ACTION = "servers.provision";
export const AMOUNT = 288_000n; // 0.288 USDC for SERVER_INPUT

type Via = "confirm" | "execute";

/**
 * The checks against the sandbox `sandbox()` returns: it is read at each call, so the checks
 * can be made while a describe is defined and its sandbox starts later, in beforeAll.
 */
export function paymentChecks(sandbox: () => TestSandbox) {
  let seq = 0;
  const key = (what: string) => `${what}-${++seq}`;

  async function newQuote(): Promise<{ quoteId: string; reqs: PaymentRequirements; quote: any }> {
    const quote = await sandbox().quote(ACTION, SERVER_INPUT);
    expect(quote.amount).toBe("0.288");
    const reqs = quote.paymentRequirement.accepts[0] as PaymentRequirements;
    expect(reqs.amount).toBe(AMOUNT.toString());
    return { quoteId: quote.quoteId, reqs, quote };
  }

  const confirm = (quoteId: string, paymentProof: string, idem = key("confirm")) =>
    sandbox().call("POST", "/payments/confirm", {
      body: { quoteId, paymentProof },
      headers: { "idempotency-key": idem },
    });

  const execute = (quoteId: string, proof?: string, extra: Record<string, string> = {}, idem = key("exec")) =>
    sandbox().call("POST", "/executions", {
      body: { action: ACTION, input: SERVER_INPUT },
      headers: {
        "idempotency-key": idem,
        "x-quote-id": quoteId,
        ...(proof ? { "x-payment-proof": proof } : {}),
        ...extra,
      },
    });

  const present = (via: Via, quoteId: string, proof: string) =>
    via === "confirm" ? confirm(quoteId, proof) : execute(quoteId, proof);

  /** USDC balances of the payer, the treasury and any other owners. */
  async function balances(...others: string[]): Promise<Record<string, bigint>> {
    const t = sandbox();
    const owners = [t.wallet.address, t.sb.keys.treasury.address, ...others];
    const out: Record<string, bigint> = {};
    for (const o of owners) out[o] = await t.usdc(o);
    return out;
  }

  async function expectBalances(expected: Record<string, bigint>): Promise<void> {
    const t = sandbox();
    const treasury = t.sb.keys.treasury.address;
    const now = await balances(...Object.keys(expected).filter((o) => o !== t.wallet.address && o !== treasury));
    expect(now).toEqual(expected);
  }

  function expectInvalid(res: ApiResponse, reason: string | RegExp, quoteId?: string): void {
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe("payment_invalid");
    expect(typeof res.body.error.reason).toBe("string");
    if (typeof reason === "string") expect(res.body.error.reason).toBe(reason);
    else expect(res.body.error.reason).toMatch(reason);
    expect(res.body.error.requestId).toMatch(/^req_/);
    if (quoteId) {
      expect(res.body.error.quoteId).toBe(quoteId);
      // The refusal carries a fresh challenge for the same quote.
      expect(res.body.error.paymentRequired.accepts[0].extra.memo).toBe(quoteId);
    }
  }

  /** No payment is recorded for the quote: an execution without proof is asked to pay. */
  async function expectStillUnpaid(quoteId: string): Promise<void> {
    const res = await execute(quoteId);
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe("payment_required");
  }

  async function executionsOf(quoteId: string): Promise<any[]> {
    const res = await sandbox().call("GET", "/executions?limit=100");
    expect(res.status).toBe(200);
    return (res.body.items as any[]).filter((e) => e.quoteId === quoteId);
  }

  /** Token balance change of `owner` (USDC) in a landed transaction, from RPC getTransaction. */
  function usdcDelta(tx: any, owner: string): bigint {
    const mint = sandbox().sb.asset;
    const pick = (list: any[]) =>
      BigInt(list.find((b: any) => b.owner === owner && b.mint === mint)?.uiTokenAmount.amount ?? "0");
    return pick(tx.meta.postTokenBalances) - pick(tx.meta.preTokenBalances);
  }

  return {
    key,
    newQuote,
    confirm,
    execute,
    present,
    balances,
    expectBalances,
    expectInvalid,
    expectStillUnpaid,
    executionsOf,
    usdcDelta,
  };
}
