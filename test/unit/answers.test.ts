/**
 * What the service's answers mean (src/engine/intent/answers.ts): the quote check, whether a quote
 * binds the input, the refusal to quote, the settlement a PAYMENT-RESPONSE header names. Pure tables.
 */
import { describe, expect, it } from "vitest";
import {
  checkQuote,
  quoteBindsInput,
  quoteRefusal,
  selfProvingChallenge,
  settledTransaction,
} from "../../src/engine/intent/answers.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { Quote } from "../../src/domain/wire.js";

const QUOTE: Quote = {
  quoteId: "qt_abc.1-2",
  action: "servers.provision",
  amount: "0.288",
  currency: "USDC",
  expiresAt: "2030-01-01T00:05:00Z",
  paymentRequirement: { scheme: "x402", resource: "/v1/executions", network: "solana" },
};

describe("checkQuote", () => {
  it("accepts a positive USDC price for the action asked, with its price in atomic units and its expiry", () => {
    expect(checkQuote(QUOTE, "servers.provision")).toEqual({
      amount: 288_000n,
      expiresAt: Date.parse("2030-01-01T00:05:00Z"),
    });
  });

  it.each<[string, Partial<Quote>, string, RegExp]>([
    ["a zero price", { amount: "0" }, "servers.provision", /is not a positive USDC decimal/],
    ["a price in exponent form", { amount: "1e3" }, "servers.provision", /is not a positive USDC decimal/],
    ["more decimals than USDC has", { amount: "0.0000001" }, "servers.provision", /is not a positive USDC decimal/],
    ["another currency", { currency: "USDT" }, "servers.provision", /is not a positive USDC decimal/],
    [
      "another action",
      { action: "companies.create" },
      "servers.provision",
      /quoted companies\.create for a request to servers\.provision/,
    ],
    ["an expiry that is no timestamp", { expiresAt: "soon" }, "servers.provision", /expiresAt is not a timestamp/],
    ["a quote id with a slash", { quoteId: "qt_../x" }, "servers.provision", /characters a quote id cannot have/],
    ["an empty quote id", { quoteId: "" }, "servers.provision", /characters a quote id cannot have/],
  ])("refuses %s as quote_drift, nothing signed", (_name, over, action, message) => {
    let error: unknown;
    try {
      checkQuote({ ...QUOTE, ...over }, action);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PaidActionError);
    expect((error as PaidActionError).code).toBe("quote_drift");
    expect((error as PaidActionError).message).toMatch(message);
    expect((error as PaidActionError).message).toMatch(/nothing was signed/);
  });
});

describe("quoteBindsInput", () => {
  const INPUT = { region: "eu-west-1", plan: "small", durationHours: 24, tags: ["a", { b: 1 }] };
  it.each<[string, unknown, unknown, boolean]>([
    ["the same input echoed", INPUT, INPUT, true],
    [
      "the same input, keys in another order",
      { tags: ["a", { b: 1 }], durationHours: 24, plan: "small", region: "eu-west-1" },
      INPUT,
      true,
    ],
    ["an undefined key on our side (JSON drops it)", INPUT, { ...INPUT, note: undefined }, true],
    ["no echo", undefined, INPUT, false],
    ["a null echo", null, INPUT, false],
    ["an echo that is a string", JSON.stringify(INPUT), INPUT, false],
    ["another value", { ...INPUT, durationHours: 25 }, INPUT, false],
    ["another type of the same value", { ...INPUT, durationHours: "24" }, INPUT, false],
    ["a key more", { ...INPUT, extra: true }, INPUT, false],
    ["a key fewer", { region: "eu-west-1", plan: "small", durationHours: 24 }, INPUT, false],
    ["array order differs", { ...INPUT, tags: [{ b: 1 }, "a"] }, INPUT, false],
    ["nested beyond 64 levels", deep(70), deep(70), false],
  ])("%s: %s", (_name, echoed, input, binds) => {
    const quote = (echoed === undefined ? { ...QUOTE } : { ...QUOTE, input: echoed }) as Quote;
    expect(quoteBindsInput(quote, input)).toBe(binds);
  });
});

describe("selfProvingChallenge", () => {
  const INPUT = { plan: "small" };
  const ACCEPTS = [{ scheme: "exact", network: "n", amount: "1", asset: "a", payTo: "p", maxTimeoutSeconds: 60 }];
  const withReq = (accepts: unknown) =>
    ({ ...QUOTE, input: INPUT, paymentRequirement: { ...QUOTE.paymentRequirement, accepts } }) as Quote;
  it.each<[string, Quote, boolean]>([
    ["a challenge and the input echoed", withReq(ACCEPTS), true],
    ["no challenge", withReq(undefined), false],
    ["an empty challenge", withReq([]), false],
    ["a challenge, another input echoed", { ...withReq(ACCEPTS), input: { plan: "large" } } as Quote, false],
    ["a challenge, no echo", { ...withReq(ACCEPTS), input: undefined } as Quote, false],
  ])("%s", (_name, quote, proves) => {
    expect(selfProvingChallenge(quote, INPUT)).toEqual(proves ? ACCEPTS : undefined);
  });
});

function deep(levels: number): unknown {
  let v: unknown = { leaf: true };
  for (let i = 0; i < levels; i++) v = { v };
  return v;
}

describe("quoteRefusal", () => {
  it.each<[number, string, string]>([
    [404, "not_found", "action_unknown"],
    [400, "invalid_request", "invalid_input"],
    [409, "quote_mismatch", "quote_rejected"],
    [503, "unavailable", "quote_rejected"],
  ])("HTTP %i %s is %s", (status, code, ours) => {
    expect(quoteRefusal(status, { code, message: "m" }).code).toBe(ours);
  });

  it("keeps at most 20 of the service's input issues", () => {
    const issues = Array.from({ length: 30 }, (_, i) => ({ path: `input.f${i}`, message: "bad" }));
    expect(
      (quoteRefusal(400, { code: "invalid_request", message: "m", issues }) as PaidActionError<"invalid_input">).context
        .issues,
    ).toHaveLength(20);
  });
});

describe("settledTransaction", () => {
  const SIG = "5".repeat(88);
  const header = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");
  it.each<[string, string | undefined, string | undefined]>([
    ["a successful settlement", header({ success: true, transaction: SIG, network: "solana:x" }), SIG],
    ["a failed settlement", header({ success: false, transaction: SIG, network: "solana:x" }), undefined],
    [
      "a transaction that is no signature",
      header({ success: true, transaction: "not-a-signature", network: "solana:x" }),
      undefined,
    ],
    ["no network", header({ success: true, transaction: SIG }), undefined],
    ["not base64 JSON", "%%%", undefined],
    ["an oversized header", "A".repeat(8193), undefined],
    ["no header", undefined, undefined],
  ])("%s", (_name, value, tx) => {
    expect(settledTransaction(value)).toBe(tx);
  });
});
