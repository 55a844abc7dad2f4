/**
 * Reading an x402 v2 seller (src/engine/x402-http/challenge.ts) as tables: a 402's
 * requirements from the PAYMENT-REQUIRED header or a JSON body (as @x402/core encodes them),
 * the one requirement this server pays, the payment-identifier extension in
 * @x402/extensions' shape, and the settlement a PAYMENT-RESPONSE reports. Pure.
 */
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../src/domain/networks.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import {
  declaresPaymentIdentifier,
  paymentExtensions,
  pickRequirement,
  readPaymentRequired,
  readPaymentResponse,
  describeAccept,
  type PaymentRequired402,
} from "../../src/engine/x402-http/challenge.js";

const MINT = USDC_MINT[SOLANA_DEVNET]!;
const PAY_TO = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
const FEE_PAYER = "2wmVCSfPxGPjrnMMn7rchp4uaeoTqN39mXFC2zhPdri9";
const SIGNATURE = "5".repeat(88);
const WALLET = "Wa11et1111111111111111111111111111111111111";
const OWNER = "Awner111111111111111111111111111111111111111";
const want = { network: SOLANA_DEVNET, mint: MINT, ours: { wallet: WALLET, owner: OWNER } };

const accept = (over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network: SOLANA_DEVNET,
  amount: "10000",
  asset: MINT,
  payTo: PAY_TO,
  maxTimeoutSeconds: 60,
  extra: { feePayer: FEE_PAYER },
  ...over,
});

const required = (over: Record<string, unknown> = {}) => ({
  x402Version: 2,
  resource: { url: "https://api.example.com/weather", description: "Weather", mimeType: "application/json" },
  accepts: [accept()],
  ...over,
});

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");

describe("readPaymentRequired", () => {
  it("reads the PAYMENT-REQUIRED header as @x402/core encodes it", () => {
    const header = encodePaymentRequiredHeader(required({ extensions: { bazaar: { info: {} } } }) as never);
    expect(readPaymentRequired({ "payment-required": header }, undefined)).toEqual({
      x402Version: 2,
      resource: { url: "https://api.example.com/weather", description: "Weather", mimeType: "application/json" },
      accepts: [accept()],
      extensions: { bazaar: { info: {} } },
    });
  });

  it("finds the header in any case, and prefers it to the body", () => {
    const body = required({ accepts: [accept({ amount: "1" })] });
    const pr = readPaymentRequired({ "Payment-Required": b64(required()) }, body);
    expect(pr?.accepts[0]?.amount).toBe("10000");
  });

  it("falls back to a JSON body, parsed or as text, when the header is absent or unreadable", () => {
    expect(readPaymentRequired({}, required({ error: "payment required" }))).toMatchObject({
      x402Version: 2,
      error: "payment required",
    });
    expect(readPaymentRequired({}, JSON.stringify(required()))?.accepts).toHaveLength(1);
    expect(readPaymentRequired({ "payment-required": "%%%" }, required())?.accepts).toHaveLength(1);
  });

  it("keeps the well-formed requirements and drops the others", () => {
    const pr = readPaymentRequired(
      { "payment-required": b64(required({ accepts: [{ scheme: "exact" }, accept()] })) },
      {},
    );
    expect(pr?.accepts).toEqual([accept()]);
  });

  it.each<[string, Record<string, string>, unknown]>([
    ["nothing", {}, undefined],
    ["a v1 body", {}, { x402Version: 1, accepts: [accept()] }],
    ["a body without accepts", {}, { x402Version: 2 }],
    ["accepts not an array", {}, { x402Version: 2, accepts: {} }],
    ["a header that is not base64", { "payment-required": "not base64!" }, undefined],
    ["a header that is not JSON", { "payment-required": Buffer.from("nope").toString("base64") }, undefined],
    ["a header past 64 KiB", { "payment-required": b64({ ...required(), pad: "x".repeat(70_000) }) }, undefined],
    ["a text body that is not JSON", {}, "Payment Required"],
    ["an array body", {}, [required()]],
  ])("is undefined for %s", (_what, headers, body) => {
    expect(readPaymentRequired(headers, body)).toBeUndefined();
  });

  it("keeps only strings in resource, bounded", () => {
    const pr = readPaymentRequired({}, required({ resource: { url: "https://a.example/", description: 5 } }));
    expect(pr?.resource).toEqual({ url: "https://a.example/" });
  });
});

describe("pickRequirement", () => {
  const pr = (...accepts: PaymentRequirements[]): PaymentRequired402 => ({ x402Version: 2, accepts });

  it("takes the first requirement this server can pay", () => {
    const first = accept({ amount: "5" });
    expect(pickRequirement(pr(accept({ scheme: "upto" }), first, accept()), want)).toEqual({
      ok: true,
      requirement: first,
    });
  });

  it.each<[string, Partial<PaymentRequirements>]>([
    ["another scheme", { scheme: "upto" }],
    ["another network", { network: SOLANA_MAINNET }],
    ["another asset", { asset: USDC_MINT[SOLANA_MAINNET]! }],
    ["an EVM network", { network: "eip155:8453", asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" }],
    ["a zero amount", { amount: "0" }],
    ["a negative amount", { amount: "-1" }],
    ["a decimal amount", { amount: "0.01" }],
    ["an amount with a leading zero", { amount: "010" }],
    ["an amount past u64", { amount: "18446744073709551616" }],
    ["a payee that is not base58", { payTo: "0x0000000000000000000000000000000000000000" }],
    ["a payee too short", { payTo: "abc" }],
    ["a zero timeout", { maxTimeoutSeconds: 0 }],
    ["a negative timeout", { maxTimeoutSeconds: -5 }],
    ["no fee payer", { extra: {} }],
    ["a fee payer that is not an address", { extra: { feePayer: 42 } }],
  ])("refuses %s, and says what was offered", (_what, over) => {
    const r = pickRequirement(pr(accept(over)), want);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.offered).toHaveLength(1);
  });

  it.each([
    ["our wallet", WALLET],
    ["the owner whose account pays (delegate mode)", OWNER],
  ])("never takes a requirement naming %s as fee payer, and says that is why", (_who, feePayer) => {
    const ours = accept({ extra: { feePayer } });
    expect(pickRequirement(pr(ours), want)).toEqual({ ok: false, offered: [describeAccept(ours)], feePayerOurs: true });
    // Another requirement the server can pay is taken instead.
    expect(pickRequirement(pr(ours, accept()), want)).toEqual({ ok: true, requirement: accept() });
    // Without an owner (own-account mode) only the wallet is ours.
    const own = { ...want, ours: { wallet: WALLET } };
    expect(pickRequirement(pr(ours), own).ok).toBe(feePayer !== WALLET);
  });

  it("says the fee payer was the reason only when it was", () => {
    const r = pickRequirement(pr(accept({ scheme: "upto", extra: { feePayer: WALLET } })), want);
    expect(r).toEqual({ ok: false, offered: [expect.any(String)] });
  });

  it("accepts the largest u64 amount", () => {
    expect(pickRequirement(pr(accept({ amount: "18446744073709551615" })), want).ok).toBe(true);
  });

  it("describes each offer for a person, cut and printable", () => {
    const r = pickRequirement(
      pr(accept({ network: SOLANA_MAINNET }), accept({ scheme: "exact\u001b[31m", amount: "9".repeat(100) })),
      want,
    );
    if (r.ok) throw new Error("expected a refusal");
    expect(r.offered[0]).toBe(`exact on ${SOLANA_MAINNET} in ${MINT}: 10000`);
    expect(r.offered[1]).not.toContain("\u001b");
    expect(r.offered[1]!.length).toBeLessThan(200);
    expect(pickRequirement(pr(), want)).toEqual({ ok: false, offered: [] });
  });
});

describe("the payment-identifier extension", () => {
  const declared = {
    info: { required: false },
    schema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
  };
  const withExtensions = (extensions?: Record<string, unknown>): PaymentRequired402 => ({
    x402Version: 2,
    accepts: [accept()],
    ...(extensions ? { extensions } : {}),
  });
  const ID = "pay_0123456789abcdef0123";

  it("is declared when the seller's extension has info.required as a boolean", () => {
    expect(declaresPaymentIdentifier(withExtensions({ "payment-identifier": declared }))).toBe(true);
    expect(declaresPaymentIdentifier(withExtensions({ "payment-identifier": { info: { required: true } } }))).toBe(
      true,
    );
    expect(declaresPaymentIdentifier(withExtensions({ "payment-identifier": { info: {} } }))).toBe(false);
    expect(declaresPaymentIdentifier(withExtensions({ bazaar: {} }))).toBe(false);
    expect(declaresPaymentIdentifier(withExtensions())).toBe(false);
  });

  it("sends the declared extension back with info.id, the other extensions echoed, the seller's left untouched", () => {
    const extensions = { "payment-identifier": declared, bazaar: { info: { x: 1 } } };
    const pr = withExtensions(extensions);
    expect(paymentExtensions(pr, ID)).toEqual({
      "payment-identifier": { ...declared, info: { required: false, id: ID } },
      bazaar: { info: { x: 1 } },
    });
    expect(declared.info).toEqual({ required: false });
  });

  it("echoes the extensions unchanged when payment-identifier is not declared, and is undefined without any", () => {
    expect(paymentExtensions(withExtensions({ bazaar: { info: {} } }), ID)).toEqual({ bazaar: { info: {} } });
    expect(paymentExtensions(withExtensions(), ID)).toBeUndefined();
  });

  it.each(["short", "x".repeat(129), "pay_0123456789abcdef!"])(
    "refuses the id %s (a bug, not a seller's doing)",
    (id) => {
      expect(() => paymentExtensions(withExtensions({ "payment-identifier": declared }), id)).toThrow(TypeError);
    },
  );
});

describe("readPaymentResponse", () => {
  it("reads a settlement as @x402/core encodes it", () => {
    const header = encodePaymentResponseHeader({
      success: true,
      transaction: SIGNATURE,
      network: SOLANA_DEVNET,
      payer: PAY_TO,
      extensionResponses: { secret: "dropped by the encoder" },
    } as never);
    expect(readPaymentResponse(header)).toEqual({
      success: true,
      transaction: SIGNATURE,
      network: SOLANA_DEVNET,
      payer: PAY_TO,
    });
  });

  it("reads a failed settlement with its reason", () => {
    expect(readPaymentResponse(b64({ success: false, errorReason: "settlement_pending", transaction: "" }))).toEqual({
      success: false,
      errorReason: "settlement_pending",
    });
  });

  it("leaves out fields that do not look like what they name", () => {
    expect(
      readPaymentResponse(b64({ success: true, transaction: "0xdeadbeef", payer: "me", network: "n".repeat(200) })),
    ).toEqual({ success: true });
    const r = readPaymentResponse(b64({ success: false, errorReason: `bad\u0000${"y".repeat(500)}` }));
    expect(r?.errorReason).not.toContain("\u0000");
    expect(r!.errorReason!.length).toBeLessThanOrEqual(201);
  });

  it.each([
    ["no header", undefined],
    ["an empty header", ""],
    ["not base64", "{}!"],
    ["not JSON", Buffer.from("x").toString("base64")],
    ["no success", b64({ transaction: SIGNATURE })],
    ["success as a string", b64({ success: "true", transaction: SIGNATURE })],
    ["a header past 16 KiB", b64({ success: true, pad: "x".repeat(20_000) })],
  ])("is undefined for %s", (_what, header) => {
    expect(readPaymentResponse(header)).toBeUndefined();
  });
});
