/**
 * Which way to pay (src/engine/rails/choose.ts, and the rails of one engine over it:
 * src/engine/rails/load.ts): for a challenge with several `accepts`, the first of our
 * networks, in our order of preference, that it offers, and there its first entry we can
 * pay; a service's challenge checked by the rail of the first of our networks it offers
 * `exact` on; a journaled payment followed by the rail of its network.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../src/domain/networks.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { BASE_MAINNET, BASE_SEPOLIA } from "../../src/engine/config/networks.js";
import { challengeNetwork, chooseRequirement } from "../../src/engine/rails/choose.js";
import { createRails } from "../../src/engine/rails/load.js";
import { ok } from "./config.fixtures.js";

const PAYEE = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
const FEE_PAYER = "FeePayer1111111111111111111111111111111111";

/** An entry of a challenge: `exact` on `network` unless said otherwise; `id` tells entries apart. */
const entry = (id: string, network: string, o: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network,
  amount: "10000",
  asset: USDC_MINT[network] ?? "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: PAYEE,
  maxTimeoutSeconds: 60,
  extra: { feePayer: FEE_PAYER, id },
  ...o,
});
const idOf = (r: PaymentRequirements | undefined) => (r === undefined ? undefined : String(r.extra.id));
const any = () => true;

describe("chooseRequirement: our networks' order, then the seller's among entries on one network", () => {
  // [name, accepts, our networks, payable, the entry chosen]
  it.each<[string, PaymentRequirements[], string[], (r: PaymentRequirements) => boolean, string | undefined]>([
    ["one entry on our one network", [entry("a", SOLANA_DEVNET)], [SOLANA_DEVNET], any, "a"],
    ["nothing offered", [], [SOLANA_DEVNET], any, undefined],
    [
      "only other networks offered",
      [entry("a", SOLANA_MAINNET), entry("b", BASE_MAINNET)],
      [SOLANA_DEVNET],
      any,
      undefined,
    ],
    [
      "the seller lists another network first: ours is chosen",
      [entry("a", BASE_MAINNET), entry("b", SOLANA_DEVNET)],
      [SOLANA_DEVNET],
      any,
      "b",
    ],
    [
      "two of ours offered: our preference decides, not the seller's order",
      [entry("a", SOLANA_DEVNET), entry("b", BASE_SEPOLIA)],
      [BASE_SEPOLIA, SOLANA_DEVNET],
      any,
      "b",
    ],
    [
      "our first network not offered: the next one",
      [entry("a", SOLANA_DEVNET)],
      [BASE_SEPOLIA, SOLANA_DEVNET],
      any,
      "a",
    ],
    [
      "two entries on one network: the seller's first",
      [entry("a", SOLANA_DEVNET), entry("b", SOLANA_DEVNET)],
      [SOLANA_DEVNET],
      any,
      "a",
    ],
    [
      "the first entry on a network is one we cannot pay: its next entry there",
      [entry("a", SOLANA_DEVNET, { scheme: "upto" }), entry("b", SOLANA_DEVNET)],
      [SOLANA_DEVNET],
      (r) => r.scheme === "exact",
      "b",
    ],
    [
      "nothing payable on our first network: our next network",
      [entry("a", BASE_SEPOLIA, { scheme: "upto" }), entry("b", SOLANA_DEVNET)],
      [BASE_SEPOLIA, SOLANA_DEVNET],
      (r) => r.scheme === "exact",
      "b",
    ],
    [
      "nothing payable anywhere",
      [entry("a", SOLANA_DEVNET, { scheme: "upto" })],
      [SOLANA_DEVNET],
      (r) => r.scheme === "exact",
      undefined,
    ],
    ["we pay on no network", [entry("a", SOLANA_DEVNET)], [], any, undefined],
  ])("%s", (_name, accepts, networks, payable, chosen) => {
    expect(idOf(chooseRequirement(accepts, networks, payable))).toBe(chosen);
  });
});

describe("challengeNetwork: whose rail checks a service's challenge", () => {
  it.each<[string, PaymentRequirements[], string[], string | undefined]>([
    ["exact on our network", [entry("a", SOLANA_DEVNET)], [SOLANA_DEVNET], SOLANA_DEVNET],
    [
      "exact on our second network only",
      [entry("a", SOLANA_MAINNET), entry("b", SOLANA_DEVNET)],
      [BASE_SEPOLIA, SOLANA_DEVNET],
      SOLANA_DEVNET,
    ],
    // Its rail then reports what the challenge offers instead (a drift, not another network).
    [
      "nothing exact on ours: our first",
      [entry("a", SOLANA_DEVNET, { scheme: "upto" })],
      [SOLANA_DEVNET],
      SOLANA_DEVNET,
    ],
    ["an empty challenge: our first", [], [BASE_SEPOLIA, SOLANA_DEVNET], BASE_SEPOLIA],
    [
      "exact on ours in another asset: still ours (the asset is a drift)",
      [entry("a", SOLANA_DEVNET, { asset: "x" })],
      [SOLANA_DEVNET],
      SOLANA_DEVNET,
    ],
    ["we pay on no network", [entry("a", SOLANA_DEVNET)], [], undefined],
  ])("%s", (_name, accepts, networks, network) => {
    expect(challengeNetwork(accepts, networks)).toBe(network);
  });
});

/** A Solana CLI keypair file (seed, then public key) in a fresh directory, and the key's base58 address. */
function keypairFile(): { path: string; address: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
  const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  const path = join(mkdtempSync(join(tmpdir(), "pam-rails-")), "wallet.json");
  writeFileSync(path, JSON.stringify([...seed, ...pub]), { mode: 0o600 });
  return { path, address: base58(pub) };
}

function base58(bytes: Uint8Array): string {
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let n = BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
  let out = "";
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

describe("the rails of one engine", () => {
  // The embedded sandbox's configuration: solana-devnet alone, with an agent key (its RPC is not read here).
  const key = keypairFile();
  const rails = createRails(ok({ PAID_ACTIONS_WALLET: key.path }), { now: () => 0 });

  it("one rail per network paid on, the Solana rail for a Solana network; none for another", async () => {
    const rail = await rails.rail(SOLANA_DEVNET);
    expect(rail).toMatchObject({ kind: "solana", network: SOLANA_DEVNET });
    expect(await rails.rail(SOLANA_DEVNET)).toBe(rail);
    await expect(rails.rail(BASE_SEPOLIA)).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringMatching(/PAID_ACTIONS_NETWORKS: does not name base-sepolia/),
    });
  });

  it("a journaled payment is followed by its network's rail; one journaled without a network, by the Solana network's", async () => {
    expect((await rails.forPayment({ network: SOLANA_DEVNET })).network).toBe(SOLANA_DEVNET);
    expect((await rails.forPayment({})).network).toBe(SOLANA_DEVNET);
    await expect(rails.forPayment({ network: SOLANA_MAINNET })).rejects.toMatchObject({ code: "config_invalid" });
  });

  it("a seller's 402: the entry our rail can pay, or what it offered and what we pay", async () => {
    const payable = entry("b", SOLANA_DEVNET);
    const picked = await rails.pick([
      entry("a", SOLANA_DEVNET, { asset: "OtherMint111111111111111111111111111111111" }),
      payable,
    ]);
    expect(picked.ok && idOf(picked.requirement)).toBe("b");
    expect(picked.ok && picked.rail.network).toBe(SOLANA_DEVNET);
    const none = await rails.pick([entry("a", BASE_SEPOLIA), entry("b", SOLANA_DEVNET, { extra: {} })]);
    expect(none).toEqual({
      ok: false,
      offered: [
        `exact on ${BASE_SEPOLIA} in ${entry("a", BASE_SEPOLIA).asset}: 10000`,
        `exact on ${SOLANA_DEVNET} in ${USDC_MINT[SOLANA_DEVNET]}: 10000`,
      ],
      terms: `exact on ${SOLANA_DEVNET} in USDC ${USDC_MINT[SOLANA_DEVNET]}`,
    });
  });

  it("a seller's 402 naming our own key as fee payer is never picked, and says so", async () => {
    const ours = entry("a", SOLANA_DEVNET, { extra: { feePayer: key.address, id: "a" } });
    expect(await rails.pick([ours])).toEqual({
      ok: false,
      offered: [`exact on ${SOLANA_DEVNET} in ${USDC_MINT[SOLANA_DEVNET]}: 10000`],
      terms: `exact on ${SOLANA_DEVNET} in USDC ${USDC_MINT[SOLANA_DEVNET]}`,
      feePayerOurs: true,
    });
    const picked = await rails.pick([ours, entry("b", SOLANA_DEVNET)]);
    expect(picked.ok && idOf(picked.requirement)).toBe("b");
  });

  it("a service's challenge is checked by the rail of the network it offers exact on", async () => {
    expect((await rails.forChallenge([entry("a", SOLANA_DEVNET)])).network).toBe(SOLANA_DEVNET);
    expect((await rails.forChallenge([entry("a", BASE_MAINNET)])).network).toBe(SOLANA_DEVNET);
  });
});
