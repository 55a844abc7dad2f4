/**
 * The EVM rail's checks of a receipt (rails/port.ts RailVerifier), with no key, no journal
 * and no configuration: the receipt's own EIP-191 signature (the address it recovers to),
 * the signed transaction it carries and the authorization in it (wire.ts), the transfer on
 * any RPC of the network as stated (receipts.ts readEvidence: the AuthorizationUsed and
 * Transfer logs), and EIP-712 recovery for a seller's offers and receipts signed that way.
 */
import { getAddress, recoverMessageAddress, recoverTypedDataAddress, type Hex } from "viem";
import type { ExpectedPayment } from "../../chain/chain.js";
import type { RailVerifier, StatedPayment } from "../port.js";
import { EVM_ADDRESS } from "./assets.js";
import { readEvidence } from "./receipts.js";
import { createEvmChain } from "./rpc.js";
import { checkEvmWire } from "./wire.js";

/** What the stated payment's logs must show, its addresses checksummed; or why they cannot. */
function expectedOf(s: StatedPayment): ExpectedPayment | string {
  for (const [what, a] of [
    ["payer", s.payer],
    ["source", s.source],
    ["payee", s.payee],
    ["asset", s.asset],
  ] as const)
    if (!EVM_ADDRESS.test(a)) return `the ${what} ${a.slice(0, 64)} is not an EVM address`;
  if (!/^0x[0-9a-fA-F]{64}$/.test(s.memo)) return `the nonce ${s.memo.slice(0, 80)} is not an authorization's nonce`;
  return {
    wallet: getAddress(s.payer),
    walletAta: getAddress(s.source),
    payeeAta: getAddress(s.payee),
    mint: getAddress(s.asset),
    amount: s.amount,
    memo: s.memo.toLowerCase(),
  };
}

export const evmVerifier: RailVerifier = {
  kind: "evm",

  async verifyMessage(scheme, message, signer, signature) {
    if (scheme !== "eip191" || !EVM_ADDRESS.test(signer) || !/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
    try {
      const recovered = await recoverMessageAddress({ message: { raw: message }, signature: signature as Hex });
      return recovered === getAddress(signer);
    } catch {
      return false;
    }
  },

  checkWire: checkEvmWire,

  async onChain(rpcUrl, stated) {
    const exp = expectedOf(stated);
    if (typeof exp === "string") return { kind: "unknown", why: exp };
    return readEvidence(
      createEvmChain(() => rpcUrl, exp.mint),
      exp,
      stated.transaction,
    );
  },

  async recoverTypedData(typed, signature) {
    if (!/^0x[0-9a-fA-F]+$/.test(signature)) return undefined;
    try {
      return await recoverTypedDataAddress({ ...typed, signature: signature as Hex } as Parameters<
        typeof recoverTypedDataAddress
      >[0]);
    } catch {
      return undefined;
    }
  },
};
