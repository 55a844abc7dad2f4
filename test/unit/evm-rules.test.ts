/**
 * The EVM rail's pure parts (src/engine/rails/evm/): the USDC table and the typed data
 * against @x402/evm's own, which requirement it pays, its checks of a service's challenge,
 * the validity window it signs with, the landed / never / unknown and watch rules as tables,
 * a receipt read as a ChainTx (and per authorization), the proof's layout against the
 * reference client's, and the key file refused as the Solana keypair is.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authorizationTypes, DEFAULT_ASSETS } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import { verifyTypedData, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { BASE_MAINNET, BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { checkChallengeWith, samePayee } from "../../src/engine/budget/policy.js";
import { PaidActionError } from "../../src/engine/errors.js";
import { AUTHORIZATION_TYPES, sameAddress, usdcOn } from "../../src/engine/rails/evm/assets.js";
import { authorizationTx, chainTxOf } from "../../src/engine/rails/evm/decode.js";
import { loadEvmKey } from "../../src/engine/rails/evm/key.js";
import type { EvmReceipt, TokenLog } from "../../src/engine/rails/evm/rpc.js";
import {
  evmChecks,
  fateRuling,
  unpayable,
  validityWindow,
  watchRuling,
  WATCH_MARGIN_S,
  type FateFacts,
} from "../../src/engine/rails/evm/rules.js";
import { signAuthorization } from "../../src/engine/rails/evm/sign.js";

const SEPOLIA = usdcOn(BASE_SEPOLIA);
const PAYEE = "0x1111111111111111111111111111111111111111";
const KEY = "0x2222222222222222222222222222222222222222";
const NONCE = `0x${"ab".repeat(32)}`;

/** A base-sepolia entry as a stock seller gives it ($0.01). */
const entry = (over: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: "exact",
  network: BASE_SEPOLIA,
  amount: "10000",
  asset: SEPOLIA.address,
  payTo: PAYEE,
  maxTimeoutSeconds: 300,
  extra: { name: "USDC", version: "2" },
  ...over,
});

describe("x402's default USDC and EIP-3009's typed data, as @x402/evm has them", () => {
  it.each([BASE_MAINNET, BASE_SEPOLIA])("%s: the token, its EIP-712 domain, its chain id", (network) => {
    const theirs = DEFAULT_ASSETS[network]![0]!;
    expect(EVM_USDC[network]).toEqual({
      chainId: Number(network.split(":")[1]),
      address: theirs.asset,
      name: theirs.name,
      version: theirs.version,
    });
  });

  it("TransferWithAuthorization, field for field", () => {
    expect(AUTHORIZATION_TYPES).toEqual(authorizationTypes);
  });

  it("addresses compare whatever the case of their letters; a payee too; a base58 one exactly", () => {
    expect(sameAddress(SEPOLIA.address, SEPOLIA.address.toLowerCase())).toBe(true);
    expect(sameAddress(SEPOLIA.address, PAYEE)).toBe(false);
    expect(sameAddress("0x12", "0x12")).toBe(false);
    expect(samePayee(PAYEE.toUpperCase().replace("0X", "0x"), PAYEE)).toBe(true);
    expect(
      samePayee("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", "9xqewvg816bux9epjhmat23yvvm2zwbrrpzb9pusvfin"),
    ).toBe(false);
  });
});

describe("unpayable: which requirement of a 402 the EVM rail pays", () => {
  it.each<[string, Partial<PaymentRequirements>, string | undefined]>([
    ["a stock seller's base-sepolia entry", {}, undefined],
    ["the asset in lower case", { asset: SEPOLIA.address.toLowerCase() }, undefined],
    ["eip3009 named", { extra: { name: "USDC", version: "2", assetTransferMethod: "eip3009" } }, undefined],
    ["another scheme", { scheme: "upto" }, "scheme"],
    ["another network", { network: BASE_MAINNET }, "network"],
    ["another token", { asset: PAYEE }, "asset"],
    ["a zero amount", { amount: "0" }, "amount"],
    ["an amount past u64", { amount: "18446744073709551616" }, "amount"],
    ["a decimal amount", { amount: "0.01" }, "amount"],
    ["a base58 payee", { payTo: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" }, "payTo"],
    ["no timeout", { maxTimeoutSeconds: 0 }, "maxTimeoutSeconds"],
    ["permit2", { extra: { name: "USDC", version: "2", assetTransferMethod: "permit2" } }, "extra.assetTransferMethod"],
    ["another EIP-712 name", { extra: { name: "USD Coin", version: "2" } }, "extra.name/version"],
    ["no EIP-712 domain", { extra: {} }, "extra.name/version"],
  ])("%s -> %s", (_name, over, why) => {
    expect(unpayable(entry(over), BASE_SEPOLIA, SEPOLIA)).toBe(why);
  });
});

describe("evmChecks: a service's challenge against its quote, on EVM", () => {
  const priced = { quoteId: "qt_1", amount: 10_000n, expiresAt: 2_000_000, payee: PAYEE };
  const check = (accepts: PaymentRequirements[], now = 1_000_000) =>
    checkChallengeWith(priced, accepts, evmChecks(priced, BASE_SEPOLIA, SEPOLIA), now);

  it("passes the quote's own entry (its memo the quote id, its payee in another case); chooses the entry on our network", () => {
    const own = entry({
      payTo: PAYEE.toUpperCase().replace("0X", "0x"),
      extra: { name: "USDC", version: "2", memo: "qt_1" },
    });
    expect(check([entry({ network: "solana:x", asset: "mint" }), own])).toEqual({ ok: true, requirements: own });
    expect(check([entry()])).toEqual({ ok: true, requirements: entry() });
  });

  it("names every drift", () => {
    const r = check(
      [entry({ amount: "20000", asset: PAYEE, payTo: KEY, maxTimeoutSeconds: 0, extra: { name: "X", memo: "qt_2" } })],
      3_000_000,
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.drifts.map((d) => d.field)).toEqual([
      "expiresAt",
      "amount",
      "asset",
      "payTo",
      "extra.name",
      "extra.version",
      "extra.memo",
      "maxTimeoutSeconds",
    ]);
  });

  it("no entry on our network: what was offered", () => {
    expect(check([entry({ network: BASE_MAINNET })])).toEqual({
      ok: false,
      drifts: [{ field: "scheme/network", expected: `exact on ${BASE_SEPOLIA}`, actual: `exact on ${BASE_MAINNET}` }],
    });
  });
});

describe("validityWindow: ours, whatever the requirement asks", () => {
  it.each<[string, number, number, bigint]>([
    ["a short timeout is kept", 60, 300, 1_060n],
    ["a long timeout is cut to our bound", 3_600, 300, 1_300n],
    ["a fractional timeout, floored, at least a second", 0.5, 300, 1_001n],
    ["a timeout that is no number: our bound", Number.NaN, 300, 1_300n],
    ["a smaller bound of ours", 60, 20, 1_020n],
  ])("%s", (_name, timeout, bound, validBefore) => {
    expect(validityWindow(1_000_999, timeout, bound)).toEqual({ validAfter: 0n, validBefore });
  });
});

describe("fateRuling and watchRuling: from our RPC's facts", () => {
  const head = (timestamp: bigint) => ({ number: 100n, timestamp });
  // [name, facts, fate, watch]
  it.each<[string, FateFacts, string, string]>([
    [
      "the RPC did not answer",
      { head: undefined, used: undefined, validBefore: 1_000n, why: "timeout" },
      "unknown",
      "watch",
    ],
    [
      "used, its transfer found",
      { head: head(900n), used: true, validBefore: 1_000n, logs: "landed" },
      "landed",
      "landed",
    ],
    [
      "used by a cancellation",
      { head: head(900n), used: true, validBefore: 1_000n, logs: "canceled" },
      "never",
      "done",
    ],
    [
      "used, no log of it found",
      { head: head(900n), used: true, validBefore: 1_000n, logs: "missing" },
      "unknown",
      "watch",
    ],
    [
      "unused, the newest block before validBefore",
      { head: head(999n), used: false, validBefore: 1_000n },
      "unknown",
      "watch",
    ],
    [
      "unused, the newest block at validBefore",
      { head: head(1_000n), used: false, validBefore: 1_000n },
      "never",
      "watch",
    ],
    [
      "unused, well past validBefore",
      { head: head(1_000n + WATCH_MARGIN_S), used: false, validBefore: 1_000n },
      "never",
      "done",
    ],
  ])("%s: %s / %s", (_name, facts, fate, watch) => {
    expect(fateRuling(facts).kind).toBe(fate);
    expect(watchRuling(facts)).toBe(watch);
  });

  it("says why, in a person's words", () => {
    const never = fateRuling({ head: head(1_000n), used: false, validBefore: 1_000n });
    expect(never).toMatchObject({
      kind: "never",
      why: expect.stringMatching(
        /newest block \(100, at .*\) is past the authorization's validBefore .* and its nonce is unused there/,
      ),
    });
    const unknown = fateRuling({ head: undefined, used: undefined, validBefore: 1n, why: "ECONNREFUSED" });
    expect(unknown).toEqual({ kind: "unknown", why: "our EVM RPC did not answer (ECONNREFUSED)" });
  });
});

describe("a receipt read as money", () => {
  const token = SEPOLIA.address;
  const log = (event: TokenLog["event"], logIndex: number): TokenLog => ({
    event,
    blockNumber: 7n,
    tx: "0xt",
    logIndex,
  });
  const receipt = (logs: TokenLog[], failed = false): EvmReceipt => ({
    tx: "0xt",
    blockNumber: 7n,
    index: 0,
    from: KEY,
    failed,
    logs,
  });
  const used = (authorizer: string, nonce: string, i: number) => log({ kind: "used", authorizer, nonce }, i);
  const transfer = (from: string, to: string, value: bigint, i: number) =>
    log({ kind: "transfer", from, to, value }, i);
  const other = `0x${"cd".repeat(32)}`;
  // Two authorizations settled in one transaction (a batch).
  const batch = receipt([
    used(KEY, NONCE, 0),
    transfer(KEY, PAYEE, 10n, 1),
    used(KEY, other, 2),
    transfer(KEY, PAYEE, 20n, 3),
  ]);

  it("the whole transaction: every transfer of the token, its nonces, each address's net change", () => {
    expect(chainTxOf(batch, 1_700_000_000n, token)).toEqual({
      signature: "0xt",
      slot: 7n,
      blockTime: 1_700_000_000,
      failed: false,
      feePayer: KEY,
      transfers: [
        { source: KEY, destination: PAYEE, authority: KEY, mint: token, amount: 10n },
        { source: KEY, destination: PAYEE, authority: KEY, mint: token, amount: 20n },
      ],
      memos: [NONCE, other],
      balanceChanges: [
        { account: KEY, owner: KEY, mint: token, delta: -30n },
        { account: PAYEE, owner: PAYEE, mint: token, delta: 30n },
      ],
    });
  });

  it("one authorization's part of it: its own transfer only", () => {
    expect(authorizationTx(batch, null, token, { authorizer: KEY, nonce: other })).toMatchObject({
      transfers: [{ source: KEY, destination: PAYEE, amount: 20n }],
      memos: [other],
      balanceChanges: [
        { account: KEY, delta: -20n },
        { account: PAYEE, delta: 20n },
      ],
    });
    expect(authorizationTx(batch, null, token, { authorizer: PAYEE, nonce: NONCE })).toBeUndefined();
    expect(
      authorizationTx(receipt([used(KEY, NONCE, 0), transfer(KEY, PAYEE, 10n, 1)], true), null, token, {
        authorizer: KEY,
        nonce: NONCE,
      }),
    ).toMatchObject({
      failed: true,
      transfers: [],
      balanceChanges: [],
    });
  });
});

describe("the proof: the reference client's layout, our lifetime and nonce", () => {
  it("signs TransferWithAuthorization over USDC's domain; the payload is the one @x402/evm's client sends, but for what is ours", async () => {
    const key = privateKeyToAccount(generatePrivateKey());
    const requirement = entry();
    const v = { validAfter: 0n, validBefore: 1_900_000_000n, nonce: NONCE };
    const resource = { url: "https://seller.example/paid" };
    const ours = JSON.parse(
      Buffer.from(await signAuthorization(key, requirement, SEPOLIA, v, { resource }), "base64").toString("utf8"),
    );
    const reference = await new ExactEvmScheme(key).createPaymentPayload(2, requirement as unknown as X402Requirements);
    expect(Object.keys(ours.payload)).toEqual(Object.keys(reference.payload));
    const theirs = (reference.payload as { authorization: Record<string, string> }).authorization;
    expect(Object.keys(ours.payload.authorization)).toEqual(Object.keys(theirs));
    expect(ours).toEqual({
      x402Version: 2,
      resource,
      accepted: requirement,
      payload: {
        authorization: {
          ...theirs,
          validBefore: "1900000000",
          nonce: NONCE,
        },
        signature: expect.stringMatching(/^0x[0-9a-f]{130}$/),
      },
    });
    expect(
      await verifyTypedData({
        address: key.address,
        domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: SEPOLIA.address as Hex },
        types: authorizationTypes,
        primaryType: "TransferWithAuthorization",
        message: {
          from: key.address,
          to: PAYEE,
          value: 10_000n,
          validAfter: 0n,
          validBefore: 1_900_000_000n,
          nonce: NONCE as Hex,
        },
        signature: ours.payload.signature,
      }),
    ).toBe(true);
  });
});

describe("the EVM key file", () => {
  const dir = mkdtempSync(join(tmpdir(), "pam-evm-key-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const secret = generatePrivateKey();
  const file = (name: string, text: string, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, mode);
    return path;
  };
  const refused = (path: string) => {
    try {
      loadEvmKey(path);
    } catch (e) {
      expect(e).toBeInstanceOf(PaidActionError);
      return e as PaidActionError;
    }
    throw new Error("expected a refusal");
  };

  it("a 0600 file of 0x and 64 hex digits is the key", () => {
    expect(loadEvmKey(file("ok.key", `${secret}\n`, 0o600)).address).toBe(privateKeyToAccount(secret).address);
  });

  it.each<[string, () => string, string, RegExp]>([
    ["readable by others", () => file("open.key", secret, 0o644), "permissions", /mode 644\); run: chmod 600/],
    ["readable by its group", () => file("group.key", secret, 0o640), "permissions", /readable by group or others/],
    [
      "not a key",
      () => file("bad.key", `${secret.slice(0, 40)}\n`, 0o600),
      "malformed",
      /does not hold an EVM private key/,
    ],
    ["absent", () => join(dir, "none.key"), "missing", /does not exist/],
  ])("%s: wallet_invalid, naming the file, never its content", (_name, make, reason, message) => {
    const path = make();
    const e = refused(path);
    expect(e.code).toBe("wallet_invalid");
    expect(e.context).toMatchObject({ walletPath: path, reason });
    expect(e.message).toMatch(message);
    expect(JSON.stringify({ m: e.message, c: e.context })).not.toContain(secret.slice(2, 20));
  });
});
