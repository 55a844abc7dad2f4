/**
 * paid_fetch in the engine, against the reference sandbox's own x402 resources (served by the
 * stock x402 resource server through the sandbox's facilitator, settling on its ledger),
 * reached through a proxy on 127.0.0.1 that can lie: a paid GET and a paid POST move exactly
 * the price; a retry with the intentKey pays nothing; an origin not allowed, a price over
 * the origin's cap and a payment header are refused with nothing sent or paid; a resource
 * that settles and then answers an error or another 402 is paid exactly once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, refusal, type EngineFixture } from "../helpers/engine.js";
import { startProxy, type Proxy, type ProxyRule } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

const body = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString("utf8")) as Record<string, unknown>;
const paidRequests = (p: Proxy) => p.seen.filter((r) => r.headers["payment-signature"] !== undefined).length;

describe("engine: paid_fetch against the sandbox's own x402 resources", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  let resource: Proxy | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    await resource?.close();
    f = undefined;
    resource = undefined;
  });

  /** An engine allowed to pay the resource proxy's origin (and the rules it lies by). */
  async function setUp(rules: ProxyRule[] = [], env: Record<string, string> = {}, configFile?: unknown) {
    resource = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""), rules);
    f = await engineFixture({
      t,
      env: { PAID_ACTIONS_ALLOW_ORIGINS: resource.url, ...env },
      ...(configFile ? { configFile } : {}),
      open: { reconcile: true, reconcilerIntervalMs: { min: 50, max: 200 } },
    });
    return { f, resource };
  }

  it("a paid GET returns the resource and moves exactly the price; a retry with its intentKey pays nothing", async () => {
    const { f, resource } = await setUp();
    const seller = t.sb.keys.seller.address;
    const [payerBefore, sellerBefore] = [await t.usdc(t.wallet.address), await t.usdc(seller)];
    const out = await f.pa.engine.payFetch(
      { url: `${resource.url}/x402/weather?city=Paris`, intentKey: "weather-paris-1" },
      { callId: "call_fetch1" },
    );
    expect(out.result).toMatchObject({ status: 200, payment: { amount: "0.001", payTo: seller, currency: "USDC" } });
    expect(body(out.body)).toMatchObject({ city: "Paris" });
    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - 1_000n);
    expect(await t.usdc(seller)).toBe(sellerBefore + 1_000n);
    expect(paidRequests(resource)).toBe(1);

    const row = (await f.pa.journal.intent(out.result.intentId!))!;
    expect(row).toMatchObject({ kind: "fetch", origin: resource.url, state: "executed", budgetState: "spent" });
    expect((row.input as { url: string }).url).toBe(`${resource.url}/x402/weather?city=…`);
    const payment = (await f.pa.journal.payment(row.quoteId!))!;
    expect(payment).toMatchObject({ amount: 1_000n, payee: seller });

    // The reconciler finds the transfer on chain by its memo.
    await waitFor(async () => (await f.pa.journal.intent(row.intentId))!.settlement === "verified", {
      intervalMs: 100,
      what: "the settlement to be verified on chain",
    });

    const seen = resource.seen.length;
    const again = await f.pa.engine.payFetch({
      url: `${resource.url}/x402/weather?city=Paris`,
      intentKey: "weather-paris-1",
    });
    expect(again.result.intentId).toBe(out.result.intentId);
    expect(body(again.body)).toEqual(body(out.body));
    expect(resource.seen.length).toBe(seen);
    expect(await t.usdc(t.wallet.address)).toBe(payerBefore - 1_000n);

    // The same key for another request is a conflict, not a purchase.
    const conflict = await refusal(
      f.pa.engine.payFetch({ url: `${resource.url}/x402/weather?city=Rome`, intentKey: "weather-paris-1" }),
    );
    expect(conflict.code).toBe("intent_conflict");
  });

  it("a paid POST with a JSON body", async () => {
    const { f } = await setUp();
    const before = await t.usdc(t.wallet.address);
    const out = await f.pa.engine.payFetch({
      url: `${resource!.url}/x402/summarize`,
      method: "POST",
      body: { text: "Paid resources are fetched once. Nothing is paid twice." },
    });
    expect(out.result.status).toBe(200);
    expect(body(out.body).summary).toBeTruthy();
    expect(await t.usdc(t.wallet.address)).toBe(before - 10_000n);
  });

  it("an origin not allowed, a price over the origin's cap, a payment header: refused, nothing sent or paid", async () => {
    const other = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""));
    try {
      const { f, resource } = await setUp();
      const before = await t.usdc(t.wallet.address);
      const notAllowed = await refusal(f.pa.engine.payFetch({ url: `${other.url}/x402/weather?city=Oslo` }));
      expect(notAllowed.code).toBe("origin_not_allowed");
      expect(other.seen).toHaveLength(0);

      const header = await refusal(
        f.pa.engine.payFetch({ url: `${resource.url}/x402/weather`, headers: { "X-PAYMENT": "abc" } }),
      );
      expect(header).toMatchObject({ code: "invalid_input" });
      expect(resource.seen).toHaveLength(0);
      expect(await t.usdc(t.wallet.address)).toBe(before);
    } finally {
      await other.close();
    }
  });

  it("a price over limits.perOrigin is refused after the 402, with nothing signed", async () => {
    resource = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""));
    f = await engineFixture({
      t,
      env: { PAID_ACTIONS_ALLOW_ORIGINS: resource.url },
      configFile: { limits: { perOrigin: { [resource.url]: "0.005" } } },
    });
    const before = await t.usdc(t.wallet.address);
    const e = await refusal(
      f.pa.engine.payFetch({ url: `${resource.url}/x402/summarize`, method: "POST", body: { text: "x" } }),
    );
    expect(e.code).toBe("budget_exceeded");
    expect(e.context).toMatchObject({ limit: `perOrigin[${resource.url}]` });
    expect(paidRequests(resource)).toBe(0);
    expect(await t.usdc(t.wallet.address)).toBe(before);
  });

  for (const lie of [
    { name: "an error", status: 500 },
    { name: "another 402", status: 402 },
  ]) {
    it(`a resource that settles and then answers ${lie.name} is paid exactly once, and a person is told`, async () => {
      const rules: ProxyRule[] = [
        {
          match: (r) => r.headers["payment-signature"] !== undefined,
          action: { kind: "rewrite", status: lie.status, transform: () => ({ error: "lying" }) },
        },
      ];
      const { f, resource } = await setUp(rules);
      const before = await t.usdc(t.wallet.address);
      const first = await refusal(
        f.pa.engine.payFetch({ url: `${resource.url}/x402/weather?city=Lima`, intentKey: `lie-${lie.status}-key` }),
      );
      // The chain shows the transfer landed: paid once, the resource not delivered, a person told.
      expect(first.code).toBe("execution_rejected");
      expect(first.message).toMatch(/not paid again/);
      expect(await t.usdc(t.wallet.address)).toBe(before - 1_000n);
      // Again with the same key: nothing more is sent with a payment, nothing more is paid.
      const again = await refusal(
        f.pa.engine.payFetch({ url: `${resource.url}/x402/weather?city=Lima`, intentKey: `lie-${lie.status}-key` }),
      );
      expect(again.code).toBe("execution_rejected");
      expect(paidRequests(resource)).toBe(1);
      expect(await t.usdc(t.wallet.address)).toBe(before - 1_000n);
      const row = (await f.pa.journal.intentByKey(`lie-${lie.status}-key`))!;
      expect(row).toMatchObject({ state: "attention", budgetState: "spent", settlement: "verified" });
      expect(row.response?.status).toBe(lie.status);
    });
  }

  it("above the approval threshold a person approves (seeing method, URL, amount, payee); the approvalId then pays, once", async () => {
    const { f, resource } = await setUp([], { PAID_ACTIONS_APPROVAL_ABOVE: "0.005" });
    const before = await t.usdc(t.wallet.address);
    const request = { url: `${resource.url}/x402/summarize`, method: "POST", body: { text: "Approve me. Then pay." } };
    const asked = await refusal(f.pa.engine.payFetch(request));
    expect(asked.code).toBe("approval_required");
    const approvalId = (asked.context as { approvalId: string }).approvalId;
    expect(asked.context).toMatchObject({ amount: "0.01", payee: t.sb.keys.seller.address });
    const review = (await f.pa.engine.approvalReview(approvalId))!;
    expect(JSON.stringify(review)).toContain(`${resource.url}/x402/summarize`);
    expect(JSON.stringify(review)).not.toContain("Approve me");
    expect(paidRequests(resource)).toBe(0);

    const other = await refusal(f.pa.engine.payFetch({ ...request, body: { text: "something else" }, approvalId }));
    expect(other.code).toBe("approval_invalid");
    await f.pa.engine.approve(approvalId);
    const out = await f.pa.engine.payFetch({ ...request, approvalId });
    expect(out.result).toMatchObject({ status: 200, payment: { amount: "0.01" } });
    const again = await f.pa.engine.payFetch({ ...request, approvalId });
    expect(again.result.intentId).toBe(out.result.intentId);
    expect(paidRequests(resource)).toBe(1);
    expect(await t.usdc(t.wallet.address)).toBe(before - 10_000n);
  });

  it("the transcript and the journal's views keep no header value, query value or body of the request", async () => {
    const { f, resource } = await setUp();
    const secret = "sk_live_abcdefghijklmnop1234";
    const out = await f.pa.engine.payFetch(
      {
        url: `${resource.url}/x402/weather?city=Zurich&token=${secret}`,
        headers: { authorization: `Bearer ${secret}` },
      },
      { callId: "call_fetchsecret" },
    );
    expect(out.result.status).toBe(200);
    const transcript = JSON.stringify(f.pa.transcripts.read("call_fetchsecret"));
    expect(transcript).toContain("/x402/weather?city=");
    expect(transcript).not.toContain(secret);
    const row = (await f.pa.journal.intent(out.result.intentId!))!;
    expect(JSON.stringify(row.input)).not.toContain(secret);
    expect(JSON.stringify(await f.pa.engine.purchase(row.intentId).then((p) => p?.intent.input))).not.toContain(secret);
  });

  it("an answer other than 402 is returned as is: nothing paid, nothing recorded", async () => {
    const { f, resource } = await setUp();
    const out = await f.pa.engine.payFetch({ url: `${resource.url}/health` });
    expect(out.result).toMatchObject({ status: 200, payment: null, intentId: null });
    expect((await f.pa.journal.intentsSince(0)).length).toBe(0);
  });
});
