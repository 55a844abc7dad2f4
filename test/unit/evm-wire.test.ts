/**
 * What the rest of the engine reads of EVM payments, as pure functions: the payee of the way
 * we pay a quote (by our networks' order), a settlement named by an EVM transaction hash
 * (PAYMENT-RESPONSE, the v1 service's header), a discovery list payable on any network paid
 * on, the spend by network as a person reads it, and the rails of an engine paying on both.
 */
import { describe, expect, it } from "vitest";
import { BASE_SEPOLIA, EVM_USDC, SOLANA_DEVNET, USDC_MINT } from "../../src/domain/networks.js";
import { settledTransaction } from "../../src/engine/intent/answers.js";
import { quotedPayee } from "../../src/engine/rails/choose.js";
import { networkShares } from "../../src/engine/read/spending-view.js";
import { readPaymentResponse } from "../../src/engine/x402-http/challenge.js";
import { describeDiscovery } from "../../src/engine/x402-http/discovery.js";
import type { Config } from "../../src/engine/config/config.js";
import { createRails } from "../../src/engine/rails/load.js";
import { ok } from "./config.fixtures.js";

const EVM_PAYEE = "0x1111111111111111111111111111111111111111";
const SOL_PAYEE = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
const TX = `0x${"ab".repeat(32)}`;
const header = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64");

describe("quotedPayee: the payee of the way we would pay", () => {
  const accepts = [
    { scheme: "exact", network: SOLANA_DEVNET, payTo: SOL_PAYEE },
    { scheme: "exact", network: BASE_SEPOLIA, payTo: EVM_PAYEE },
  ];
  it.each<[string, string[], string | undefined]>([
    ["Solana first", [SOLANA_DEVNET, BASE_SEPOLIA], SOL_PAYEE],
    ["EVM first", [BASE_SEPOLIA, SOLANA_DEVNET], EVM_PAYEE],
    ["EVM alone", [BASE_SEPOLIA], EVM_PAYEE],
    ["none of ours: the first entry's", ["eip155:8453"], SOL_PAYEE],
    ["no networks (an engine that pays nothing): the first entry's", [], SOL_PAYEE],
  ])("%s", (_name, networks, payee) => {
    expect(quotedPayee(accepts, networks)).toBe(payee);
  });
  it("another scheme on our network does not count; no accepts, no payee", () => {
    expect(quotedPayee([{ ...accepts[1]!, scheme: "upto" }, accepts[0]!], [BASE_SEPOLIA, SOLANA_DEVNET])).toBe(
      SOL_PAYEE,
    );
    expect(quotedPayee(undefined, [BASE_SEPOLIA])).toBeUndefined();
  });
});

describe("a settlement named by an EVM transaction", () => {
  it("PAYMENT-RESPONSE: an EVM hash and payer are kept; anything else that looks like neither is left out", () => {
    expect(
      readPaymentResponse(header({ success: true, transaction: TX, network: BASE_SEPOLIA, payer: EVM_PAYEE })),
    ).toEqual({ success: true, transaction: TX, network: BASE_SEPOLIA, payer: EVM_PAYEE });
    expect(readPaymentResponse(header({ success: true, transaction: "0xabc", payer: "0x12" }))).toEqual({
      success: true,
    });
  });
  it("the v1 service's header: an EVM hash is a transaction", () => {
    expect(settledTransaction(header({ success: true, transaction: TX, network: BASE_SEPOLIA }))).toBe(TX);
    expect(
      settledTransaction(header({ success: true, transaction: `${TX}00`, network: BASE_SEPOLIA })),
    ).toBeUndefined();
  });
});

describe("search_paid_resources: payable on any network paid on", () => {
  const usdcEvm = EVM_USDC[BASE_SEPOLIA]!.address;
  const listing = {
    items: [
      {
        resource: "https://evm.example/paid",
        accepts: [
          { scheme: "exact", network: BASE_SEPOLIA, amount: "10000", asset: usdcEvm.toLowerCase(), payTo: EVM_PAYEE },
        ],
      },
      {
        resource: "https://both.example/paid",
        accepts: [
          {
            scheme: "exact",
            network: SOLANA_DEVNET,
            amount: "20000",
            asset: USDC_MINT[SOLANA_DEVNET],
            payTo: SOL_PAYEE,
          },
          { scheme: "exact", network: BASE_SEPOLIA, amount: "30000", asset: usdcEvm, payTo: EVM_PAYEE },
        ],
      },
    ],
  };
  const want = (networks: string[]) => ({
    pays: networks.map((network) => ({ network, asset: network === BASE_SEPOLIA ? usdcEvm : USDC_MINT[network]! })),
    allowed: () => true,
  });
  it("each resource priced on the first of our networks it offers", () => {
    const evmFirst = describeDiscovery(listing, want([BASE_SEPOLIA, SOLANA_DEVNET]));
    expect(evmFirst.map((d) => [d.url, d.payable, d.price, d.payTo])).toEqual([
      ["https://evm.example/paid", true, "0.01", EVM_PAYEE],
      ["https://both.example/paid", true, "0.03", EVM_PAYEE],
    ]);
    const solanaOnly = describeDiscovery(listing, want([SOLANA_DEVNET]));
    expect(solanaOnly.map((d) => [d.payable, d.price])).toEqual([
      [false, null],
      [true, "0.02"],
    ]);
  });
});

describe("the spend by network, as a person reads it", () => {
  it("names each network; a share journaled without one is the Solana network's", () => {
    const config = { network: SOLANA_DEVNET } as Config;
    const share = (network: string | null, day: bigint) => ({
      network,
      day,
      reservedDay: 0n,
      total: day,
      refunded: 0n,
      count: 1,
    });
    expect(
      networkShares([share(BASE_SEPOLIA, 10_000n), share(SOLANA_DEVNET, 20_000n), share(null, 5_000n)], config),
    ).toEqual([
      {
        network: BASE_SEPOLIA,
        name: "base-sepolia",
        spentLast24h: "0.01",
        spentTotal: "0.01",
        refunded: "0.00",
        count: 1,
      },
      {
        network: SOLANA_DEVNET,
        name: "solana-devnet",
        spentLast24h: "0.025",
        spentTotal: "0.025",
        refunded: "0.00",
        count: 2,
      },
    ]);
  });
});

describe("the rails of an engine paying on Base Sepolia first, then Solana devnet", () => {
  // The embedded sandbox's configuration with its EVM chain first (no key or RPC is read here).
  const rails = createRails(ok({ PAID_ACTIONS_NETWORKS: "base-sepolia,solana-devnet" }), { now: () => 0 });
  const evmEntry = {
    scheme: "exact",
    network: BASE_SEPOLIA,
    amount: "10000",
    asset: EVM_USDC[BASE_SEPOLIA]!.address,
    payTo: EVM_PAYEE,
    maxTimeoutSeconds: 60,
    extra: { name: "USDC", version: "2" },
  };
  const solEntry = {
    scheme: "exact",
    network: SOLANA_DEVNET,
    amount: "10000",
    asset: USDC_MINT[SOLANA_DEVNET]!,
    payTo: SOL_PAYEE,
    maxTimeoutSeconds: 60,
    extra: { feePayer: SOL_PAYEE },
  };

  it("the EVM rail for the EVM network, loaded once", async () => {
    const rail = await rails.rail(BASE_SEPOLIA);
    expect(rail).toMatchObject({
      kind: "evm",
      network: BASE_SEPOLIA,
      terms: `exact on ${BASE_SEPOLIA} in USDC ${EVM_USDC[BASE_SEPOLIA]!.address}`,
    });
    expect(await rails.rail(BASE_SEPOLIA)).toBe(rail);
    expect((await rails.forPayment({ network: BASE_SEPOLIA })).kind).toBe("evm");
  });

  it("a seller offering both is paid on ours first, whatever its order, without reading the other rail's key; a service's challenge checked by that rail", async () => {
    const picked = await rails.pick([solEntry, evmEntry]);
    expect(picked.ok && picked.requirement.network).toBe(BASE_SEPOLIA);
    expect(picked.ok && picked.rail.kind).toBe("evm");
    // Only the Solana entry left: its rail vets it with its key, and this configuration names none.
    await expect(rails.pick([solEntry])).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringContaining("PAID_ACTIONS_WALLET"),
    });
    expect((await rails.forChallenge([solEntry, evmEntry])).kind).toBe("evm");
    const none = await rails.pick([{ ...evmEntry, extra: {} }]);
    expect(none).toMatchObject({
      ok: false,
      terms: `exact on ${BASE_SEPOLIA} in USDC ${EVM_USDC[BASE_SEPOLIA]!.address} or exact on ${SOLANA_DEVNET} in USDC ${USDC_MINT[SOLANA_DEVNET]}`,
    });
  });

  it("the EVM rail's lifetime is ours: validBefore bounded, a fresh 32-byte nonce each time", async () => {
    const rail = await rails.rail(BASE_SEPOLIA);
    const a = await rail.lifetime({ ...evmEntry, maxTimeoutSeconds: 86_400 });
    const b = await rail.lifetime({ ...evmEntry, maxTimeoutSeconds: 86_400 });
    expect(a).toMatchObject({ rail: "evm", validAfter: 0n, validBefore: 300n });
    expect(a.rail === "evm" && a.nonce).toMatch(/^0x[0-9a-f]{64}$/);
    expect(a.rail === "evm" && b.rail === "evm" && a.nonce !== b.nonce).toBe(true);
  });
});
