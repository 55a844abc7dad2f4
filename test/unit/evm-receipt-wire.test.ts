/**
 * The EVM rail's offline checks of a receipt, without a node: a transaction signed here that
 * submits an EIP-3009 authorization signed here (as x402's facilitator sends it: the v, r, s
 * form, or the bytes form) holds against the payment it states; a changed authorization, a
 * signature by another key, another chain, another payer, payee, amount or nonce, or bytes
 * that hash to another transaction are each named. The receipt's own EIP-191 signature
 * recovers to its signer only; EIP-712 recovery answers undefined for a malformed signature.
 */
import {
  encodeFunctionData,
  getAddress,
  keccak256,
  parseAbi,
  parseSignature,
  type Hex,
  type TransactionSerializable,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { BASE_SEPOLIA, EVM_USDC } from "../../src/domain/networks.js";
import type { StatedPayment } from "../../src/engine/rails/port.js";
import { AUTHORIZATION_TYPES } from "../../src/engine/rails/evm/assets.js";
import { evmVerifier } from "../../src/engine/rails/evm/verify.js";
import { checkEvmWire, evmWireOf } from "../../src/engine/rails/evm/wire.js";

const USDC = EVM_USDC[BASE_SEPOLIA]!;
const payer = privateKeyToAccount(`0x${"11".repeat(32)}`);
const facilitator = privateKeyToAccount(`0x${"22".repeat(32)}`);
const stranger = privateKeyToAccount(`0x${"33".repeat(32)}`);
const PAYEE = getAddress(`0x${"44".repeat(20)}`);
const NONCE = `0x${"5a".repeat(32)}` as Hex;
const ABI = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
]);

interface Build {
  signer?: typeof payer;
  chainId?: number;
  form?: "vrs" | "bytes";
  /** What the calldata says, where it differs from what was signed. */
  sent?: Partial<{ from: Hex; to: Hex; value: bigint; nonce: Hex }>;
}

/** A settlement as a facilitator sends it: the payer's authorization signed, then submitted in a signed transaction. */
async function settlement(b: Build = {}): Promise<{ raw: Hex; hash: Hex }> {
  const message = {
    from: payer.address,
    to: PAYEE,
    value: 1_000n,
    validAfter: 0n,
    validBefore: 2_000_000_000n,
    nonce: NONCE,
  };
  const signature = await (b.signer ?? payer).signTypedData({
    domain: {
      name: USDC.name,
      version: USDC.version,
      chainId: USDC.chainId,
      verifyingContract: getAddress(USDC.address),
    },
    types: AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message,
  });
  const sent = { ...message, ...b.sent };
  const head = [sent.from, sent.to, sent.value, sent.validAfter, sent.validBefore, sent.nonce] as const;
  const { v, r, s } = parseSignature(signature);
  const data =
    b.form === "bytes"
      ? encodeFunctionData({ abi: ABI, functionName: "transferWithAuthorization", args: [...head, signature] })
      : encodeFunctionData({ abi: ABI, functionName: "transferWithAuthorization", args: [...head, Number(v), r, s] });
  const tx: TransactionSerializable = {
    type: "eip1559",
    chainId: b.chainId ?? USDC.chainId,
    nonce: 7,
    to: getAddress(USDC.address),
    data,
    gas: 100_000n,
    maxFeePerGas: 2n,
    maxPriorityFeePerGas: 1n,
  };
  const raw = await facilitator.signTransaction(tx);
  return { raw, hash: keccak256(raw) };
}

const stated = (hash: string, over: Partial<StatedPayment> = {}): StatedPayment => ({
  network: BASE_SEPOLIA,
  transaction: hash,
  payer: payer.address,
  source: payer.address,
  payee: PAYEE,
  asset: USDC.address,
  amount: 1_000n,
  memo: NONCE,
  ...over,
});

describe("checkEvmWire: the signed transaction and the authorization it submits", () => {
  it.each(["vrs", "bytes"] as const)(
    "a facilitator's %s call holds: the sender's and the payer's signatures",
    async (form) => {
      const { raw, hash } = await settlement({ form });
      const wire = JSON.parse(evmWireOf(raw)) as { authorization: unknown; token: string };
      expect(wire.token).toBe(getAddress(USDC.address));
      expect(wire.authorization).toMatchObject({ from: payer.address, to: PAYEE, value: "1000", nonce: NONCE });
      const check = await checkEvmWire(evmWireOf(raw), stated(hash));
      expect(check).toEqual({
        transaction: hash,
        signatures: [
          { signer: facilitator.address, valid: true },
          { signer: payer.address, valid: true },
        ],
        problems: [],
      });
    },
  );

  const cases: Array<[string, Build, Partial<StatedPayment>, RegExp]> = [
    ["the authorization signed by another key", { signer: stranger }, {}, /signed by 0x.*, not the payer/],
    [
      "the calldata's amount changed after signing",
      { sent: { value: 999n } },
      {},
      /moves 999 atomic units, not 1000|signed by 0x.*, not the payer/,
    ],
    ["another chain", { chainId: 8453 }, {}, /for chain 8453, not eip155:84532/],
    ["another payer stated", {}, { payer: stranger.address }, /is from 0x.*, not the payer/],
    ["another payee stated", {}, { payee: stranger.address }, /pays 0x.*, not the payee/],
    ["another amount stated", {}, { amount: 2_000n }, /moves 1000 atomic units, not 2000/],
    ["another nonce stated", {}, { memo: `0x${"00".repeat(32)}` }, /nonce is 0x5a.*, not 0x00/],
    ["another asset stated", {}, { asset: stranger.address }, /not the asset|not the USDC this build knows/],
  ];
  it.each(cases)("%s is named", async (_name, build, over, named) => {
    const { raw, hash } = await settlement(build);
    const check = await checkEvmWire(evmWireOf(raw), stated(hash, over));
    expect(check.problems.join("; ")).toMatch(named);
  });

  it("bytes of another transaction, an authorization that is not the calldata's, or no JSON at all", async () => {
    const { raw } = await settlement();
    const other = await settlement({ form: "bytes" });
    expect((await checkEvmWire(evmWireOf(raw), stated(other.hash))).problems.join("; ")).toMatch(
      /the wire transaction is 0x.*, not 0x/,
    );
    const wire = JSON.parse(evmWireOf(raw)) as { authorization: { value: string } };
    wire.authorization.value = "1";
    const { hash } = await settlement();
    expect((await checkEvmWire(JSON.stringify(wire), stated(hash))).problems.join("; ")).toMatch(
      /not the one in the transaction's calldata/,
    );
    expect((await checkEvmWire("not json", stated(hash))).problems).toEqual(["the wire transaction does not decode"]);
  });
});

describe("the EVM verifier's signatures", () => {
  const message = new TextEncoder().encode("paid-actions receipt v1\n{}");
  it("a receipt's EIP-191 signature verifies for its signer only, and for no other scheme", async () => {
    const signature = await payer.signMessage({ message: { raw: message } });
    expect(await evmVerifier.verifyMessage("eip191", message, payer.address, signature)).toBe(true);
    expect(await evmVerifier.verifyMessage("eip191", message, payer.address.toLowerCase(), signature)).toBe(true);
    expect(await evmVerifier.verifyMessage("eip191", message, stranger.address, signature)).toBe(false);
    expect(await evmVerifier.verifyMessage("eip191", new TextEncoder().encode("other"), payer.address, signature)).toBe(
      false,
    );
    expect(await evmVerifier.verifyMessage("ed25519", message, payer.address, signature)).toBe(false);
    expect(await evmVerifier.verifyMessage("eip191", message, payer.address, "0x1234")).toBe(false);
  });

  it("EIP-712 recovery names the signer, and nothing for a malformed signature", async () => {
    const typed = {
      domain: { name: "x402 offer", version: "1", chainId: 1 },
      types: { Offer: [{ name: "amount", type: "string" }] },
      primaryType: "Offer",
      message: { amount: "1000" },
    };
    const signature = await stranger.signTypedData(typed as Parameters<typeof stranger.signTypedData>[0]);
    expect(await evmVerifier.recoverTypedData!(typed, signature)).toBe(stranger.address);
    expect(await evmVerifier.recoverTypedData!(typed, "0xnothex")).toBeUndefined();
    expect(await evmVerifier.recoverTypedData!(typed, `0x${"00".repeat(65)}`)).toBeUndefined();
  });
});
