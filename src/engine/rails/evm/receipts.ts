/**
 * The EVM rail's part in a receipt (rails/port.ts evidence, signReceipt): what an EVM RPC
 * shows of a payment's transaction — its block (number, hash, time), how final it is there
 * (the node's `finalized` / `safe` tags and the confirmations above it), the authorization's
 * AuthorizationUsed and Transfer logs (payer, payee, amount, nonce), and the signed
 * transaction itself with the authorization in its calldata (wire.ts) — and the receipt's own
 * signature: EIP-191 personal_sign by the agent's EVM key, the authorization's signer.
 */
import { getAddress } from "viem";
import { verifyPayment, type ExpectedPayment } from "../../chain/chain.js";
import type { ChainEvidence, EvidenceReading, Rail } from "../port.js";
import { authorizationTx } from "./decode.js";
import type { EvmDeps } from "./rail.js";
import type { EvmChain } from "./rpc.js";
import { expected } from "./truth.js";
import { evmWireOf } from "./wire.js";

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const rpcFailure = (e: unknown) => (e as Error).message.slice(0, 200);

/** How final block `n` is on this node: its newest tag covering it, and the confirmations above it. */
async function finalityOf(chain: EvmChain, n: bigint): Promise<string> {
  const head = (await chain.head()).number;
  const confirmations = head >= n ? head - n + 1n : 0n;
  const tagged = async (tag: "safe" | "finalized") => chain.tagged(tag).catch(() => null);
  const finalized = await tagged("finalized");
  const safe = finalized !== null && n <= finalized ? finalized : await tagged("safe");
  const tag = finalized !== null && n <= finalized ? "finalized" : safe !== null && n <= safe ? "safe" : "latest";
  return `${tag}, ${confirmations} confirmation${confirmations === 1n ? "" : "s"}`;
}

/**
 * What `chain` shows of transaction `tx` as the payment `exp`: its use of the payer's
 * authorization (the nonce's AuthorizationUsed log and the Transfer after it), and the
 * transaction's signed bytes. Never throws: an RPC failure is unknown.
 */
export async function readEvidence(chain: EvmChain, exp: ExpectedPayment, tx: string): Promise<EvidenceReading> {
  if (!TX_HASH.test(tx)) return { kind: "missing" };
  try {
    const receipt = await chain.receipt(tx);
    if (!receipt) return { kind: "missing" };
    const raw = await chain.rawTransaction(tx);
    if (!raw) return { kind: "unknown", why: `the EVM RPC has the receipt of ${tx} but not the transaction` };
    const time = (await chain.block(receipt.blockNumber)).timestamp;
    const used = authorizationTx(receipt, time, exp.mint, { authorizer: exp.wallet, nonce: exp.memo });
    const evidence: ChainEvidence = {
      transaction: receipt.tx,
      slot: receipt.blockNumber,
      blockHash: receipt.blockHash ?? null,
      blockTime: Number(time),
      finality: await finalityOf(chain, receipt.blockNumber),
      failed: receipt.failed,
      transfer: used?.transfers.find((x) => x.source === exp.walletAta) ?? null,
      memos: used?.memos ?? [],
      wire: evmWireOf(raw),
      problems: used
        ? verifyPayment(used, exp)
        : [`it holds no use of ${exp.wallet}'s authorization ${exp.memo} (no AuthorizationUsed log)`],
    };
    return { kind: "found", evidence };
  } catch (e) {
    return { kind: "unknown", why: `the EVM RPC did not answer (${rpcFailure(e)})` };
  }
}

/** The port's evidence and signReceipt, on EVM. */
export function evmReceipts(d: EvmDeps): Pick<Rail, "evidence" | "signReceipt"> {
  return {
    async evidence(p, tx) {
      let exp, chain;
      try {
        exp = await expected(d, p);
        chain = await d.chain();
      } catch (e) {
        return { kind: "unknown", why: `the EVM key or RPC is not configured (${rpcFailure(e)})` };
      }
      if (!exp) return { kind: "unknown", why: "the payment was journaled without its authorization's nonce" };
      return readEvidence(chain, exp, tx);
    },

    async signReceipt(payer, message) {
      const account = await d.key();
      // Only the key that signed the authorization — the chain's AuthorizationUsed names it — may speak for the payment.
      if (!/^0x[0-9a-fA-F]{40}$/.test(payer) || getAddress(payer) !== account.address)
        return { problem: "key_changed" };
      const value = await account.signMessage({ message: { raw: message } });
      return { scheme: "eip191", signer: account.address, value };
    },
  };
}
