/**
 * A stock x402 v2 client pays the sandbox: `wrapFetchWithPayment` from @x402/fetch with
 * an `x402Client` carrying the reference `ExactSvmScheme` client. It reads the 402's
 * PAYMENT-REQUIRED header, signs, and retries with PAYMENT-SIGNATURE; nothing here knows
 * about X-Payment-Proof.
 */
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDecimal } from "../../src/domain/money.js";
import { decodeProof } from "../helpers/proofs.js";
import { rpcCall, SERVER_INPUT, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";

interface Exchange {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: any;
}

describe("a stock x402 client (@x402/fetch) pays POST /executions", () => {
  let t: TestSandbox;
  let exchanges: Exchange[];
  let payFetch: ReturnType<typeof wrapFetchWithPayment>;

  beforeAll(async () => {
    t = await startTestSandbox();
    // Every request the stock client sends, and what it got back.
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      const body = await request.clone().text();
      const response = await fetch(request);
      const text = await response.clone().text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      exchanges.push({
        url: request.url,
        method: request.method,
        headers: Object.fromEntries(request.headers),
        body,
        status: response.status,
        responseHeaders: Object.fromEntries(response.headers),
        responseBody: parsed,
      });
      return response;
    };
    const client = new x402Client().register("solana:*", new ExactSvmScheme(t.wallet, { rpcUrl: t.sb.rpcUrl }));
    payFetch = wrapFetchWithPayment(recording, client);
  });
  afterAll(() => t.close());

  const post = (headers: Record<string, string>, body: unknown) =>
    payFetch(`${t.sb.baseUrl}/executions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.sb.apiKey}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  /** The two requests of a pay-and-retry: the unpaid one answered 402, the paid one answered 201. */
  function expectPayAndRetry(idem: string): { challenge: any; proof: string } {
    expect(exchanges.map((e) => e.status)).toEqual([402, 201]);
    const [unpaid, paid] = exchanges as [Exchange, Exchange];
    for (const e of exchanges) {
      expect(e.method).toBe("POST");
      expect(e.url).toBe(`${t.sb.baseUrl}/executions`);
      expect(e.headers["idempotency-key"]).toBe(idem);
      expect(e.headers["x-payment-proof"]).toBeUndefined();
      expect(e.headers["x-payment"]).toBeUndefined();
    }
    expect(unpaid.headers["payment-signature"]).toBeUndefined();
    expect(paid.body).toBe(unpaid.body);
    expect(unpaid.responseBody.error.code).toBe("payment_required");
    const challenge = JSON.parse(Buffer.from(unpaid.responseHeaders["payment-required"]!, "base64").toString("utf8"));
    expect(challenge).toEqual(unpaid.responseBody.error.paymentRequired);
    const proof = paid.headers["payment-signature"];
    expect(proof).toBeDefined();
    return { challenge, proof: proof! };
  }

  it("with X-Quote-Id: the 402 challenge is paid through PAYMENT-SIGNATURE, exactly the quoted amount moves, and the execution completes", async () => {
    exchanges = [];
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const amount = parseDecimal(quote.amount)!;
    expect(amount).toBe(288_000n);
    const treasury = t.sb.keys.treasury.address;
    const payerBefore = await t.usdc(t.wallet.address);
    const treasuryBefore = await t.usdc(treasury);

    const idem = "stock-client-with-quote";
    const res = await post(
      { "idempotency-key": idem, "x-quote-id": quote.quoteId },
      { action: "servers.provision", input: SERVER_INPUT },
    );
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(201);
    expect(body).toMatchObject({ status: "pending", action: "servers.provision", quoteId: quote.quoteId });
    expect(body.executionId).toMatch(/^exe_/);

    const { challenge, proof } = expectPayAndRetry(idem);
    expect(challenge.accepts[0]).toMatchObject({
      amount: "288000",
      asset: t.sb.asset,
      payTo: treasury,
      extra: { memo: quote.quoteId },
    });
    const payload = decodeProof(proof);
    expect(payload.x402Version).toBe(2);
    expect(payload.accepted.extra.memo).toBe(quote.quoteId);
    expect(exchanges[1]!.headers["x-quote-id"]).toBe(quote.quoteId);

    const header = res.headers.get("PAYMENT-RESPONSE");
    expect(header).toBeTruthy();
    const settle = decodePaymentResponseHeader(header!);
    expect(settle).toMatchObject({ success: true, network: t.sb.network, payer: t.wallet.address });
    expect(typeof settle.transaction).toBe("string");
    const tx = await rpcCall(t.sb.rpcUrl, "getTransaction", [
      settle.transaction,
      { encoding: "base64", maxSupportedTransactionVersion: 0 },
    ]);
    expect(tx).not.toBeNull();

    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - amount);
    expect(await t.usdc(treasury)).toBe(treasuryBefore + amount);

    const done = await waitForExecution(t.call, body.executionId, (e) => e.status === "completed");
    expect(done.quoteId).toBe(quote.quoteId);
    expect(done.output).toMatchObject({ status: "running", region: "eu-west-1" });

    // The stock client retrying with the same key is a replay: no new 402, no second payment.
    exchanges = [];
    const again = await post(
      { "idempotency-key": idem, "x-quote-id": quote.quoteId },
      { action: "servers.provision", input: SERVER_INPUT },
    );
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(((await again.json()) as any).executionId).toBe(body.executionId);
    expect(exchanges.map((e) => e.status)).toEqual([201]);
    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - amount);
  });

  it("without X-Quote-Id: the sandbox opens a quote in its 402, the stock client pays it and retries", async () => {
    exchanges = [];
    const input = { region: "us-east-1", plan: "small", durationHours: 12 };
    const treasury = t.sb.keys.treasury.address;
    const payerBefore = await t.usdc(t.wallet.address);
    const treasuryBefore = await t.usdc(treasury);

    const idem = "stock-client-without-quote";
    const res = await post({ "idempotency-key": idem }, { action: "servers.provision", input });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(201);

    const { challenge, proof } = expectPayAndRetry(idem);
    for (const e of exchanges) expect(e.headers["x-quote-id"]).toBeUndefined();
    const quoteId = exchanges[0]!.responseBody.error.quoteId as string;
    expect(quoteId).toMatch(/^qt_/);
    expect(challenge.accepts[0].extra.memo).toBe(quoteId);
    expect(decodeProof(proof).accepted.extra.memo).toBe(quoteId);
    expect(body).toMatchObject({ status: "pending", action: "servers.provision", quoteId });

    const quote = await t.call("GET", `/quotes/${quoteId}`);
    expect(quote.status).toBe(200);
    const amount = parseDecimal(quote.body.amount)!;
    expect(amount).toBeGreaterThan(0n);
    expect(challenge.accepts[0].amount).toBe(amount.toString());
    expect(exchanges[0]!.responseBody.error.amount).toBe(quote.body.amount);

    const settle = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!);
    expect(settle).toMatchObject({ success: true, network: t.sb.network, payer: t.wallet.address });
    expect(
      await rpcCall(t.sb.rpcUrl, "getTransaction", [
        settle.transaction,
        { encoding: "base64", maxSupportedTransactionVersion: 0 },
      ]),
    ).not.toBeNull();

    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - amount);
    expect(await t.usdc(treasury)).toBe(treasuryBefore + amount);

    const done = await waitForExecution(t.call, body.executionId, (e) => e.status === "completed");
    expect(done.output).toMatchObject({ status: "running", region: "us-east-1" });

    exchanges = [];
    const again = await post({ "idempotency-key": idem }, { action: "servers.provision", input });
    expect(again.status).toBe(201);
    expect(((await again.json()) as any).executionId).toBe(body.executionId);
    expect(exchanges.map((e) => e.status)).toEqual([201]);
    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - amount);
  });
});
