/**
 * The EVM rail's truth about money, read through the user's own EVM RPC: a proof's fate (its
 * authorization's nonce used, and the transfer that used it; or our newest block past its
 * validBefore with the nonce unused there), a settlement a seller or the service claims, a
 * refund's inflow, and the watch on a payment found unable to land. What each must look like
 * is the payment as journaled, whatever the configuration says now.
 */
import { getAddress } from "viem";
import { refundInflow, verifyPayment, type ExpectedPayment } from "../../chain/chain.js";
import type { JournaledProof, Rail } from "../port.js";
import { authorizationTx, chainTxOf } from "./decode.js";
import type { EvmDeps } from "./rail.js";
import { fateRuling, watchRuling, type FateFacts } from "./rules.js";
import { findUse, type UseFound } from "./search.js";

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const rpcFailure = (e: unknown) => (e as Error).message.slice(0, 200);

/** What the proof's transfer must be on chain: from the key that signed it, to the payee, the amount, in its USDC. */
export async function expected(d: EvmDeps, p: JournaledProof): Promise<ExpectedPayment | undefined> {
  if (p.nonce === undefined) return undefined;
  const wallet = getAddress(p.payer ?? (await d.key()).address);
  return {
    wallet,
    walletAta: p.source ? getAddress(p.source) : wallet,
    payeeAta: getAddress(p.payee),
    mint: getAddress(p.mint ?? d.usdc.address),
    amount: p.amount,
    memo: p.nonce,
  };
}

/** The facts of an authorization, read in the order that makes "never" sound: the head first, then the nonce at that head. */
async function factsOf(
  d: EvmDeps,
  exp: ExpectedPayment,
  p: JournaledProof,
): Promise<{ facts: FateFacts; found?: UseFound }> {
  const validBefore = p.validBefore ?? 0n;
  try {
    const chain = await d.chain();
    const head = await chain.head();
    const used = await chain.authorizationUsed(exp.wallet, exp.memo, head.number);
    if (!used) return { facts: { head, used, validBefore } };
    const found = await findUse(
      chain,
      d.usdc.address,
      { authorizer: exp.wallet, nonce: exp.memo, signedAtMs: p.signedAt },
      head,
    );
    return { facts: { head, used, validBefore, logs: found.kind }, found };
  } catch (e) {
    return { facts: { head: undefined, used: undefined, validBefore, why: rpcFailure(e) } };
  }
}

/** The port's fate, verifySettlement, refundInflow and watch, on EVM. */
export function evmTruth(d: EvmDeps): Pick<Rail, "fate" | "verifySettlement" | "refundInflow" | "watch"> {
  return {
    async fate(p) {
      const exp = await expected(d, p);
      if (!exp || p.validBefore === undefined)
        return { kind: "unknown", why: "the payment was journaled without its authorization's nonce and validity" };
      const { facts, found } = await factsOf(d, exp, p);
      const ruling = fateRuling(facts);
      if (ruling.kind === "landed" && found?.kind === "landed")
        return { kind: "landed", tx: found.tx, problems: verifyPayment(found.tx, exp) };
      return ruling.kind === "landed" ? { kind: "unknown", why: "its transfer could not be read" } : ruling;
    },

    async verifySettlement(p, claimedTx) {
      const exp = await expected(d, p);
      if (!exp || !claimedTx || !TX_HASH.test(claimedTx)) return { kind: "not_ours" };
      try {
        const chain = await d.chain();
        const receipt = await chain.receipt(claimedTx);
        if (!receipt) return { kind: "not_ours" };
        const time = (await chain.block(receipt.blockNumber)).timestamp;
        const tx = authorizationTx(receipt, time, exp.mint, { authorizer: exp.wallet, nonce: exp.memo });
        if (!tx) return { kind: "not_ours" };
        return { kind: "ours", tx, problems: verifyPayment(tx, exp) };
      } catch (e) {
        return { kind: "unknown", why: `the EVM RPC did not answer (${rpcFailure(e)})` };
      }
    },

    async refundInflow(p, payee, tx) {
      if (!TX_HASH.test(tx)) return "missing";
      const chain = await d.chain().catch(() => undefined);
      const receipt = chain ? await chain.receipt(tx).catch(() => undefined) : undefined;
      if (receipt === undefined) return undefined;
      if (receipt === null) return "missing";
      // A refund comes back to the key the payment came from, from the payee.
      const wallet = getAddress(p.source ?? p.payer ?? (await d.key()).address);
      const from = /^0x[0-9a-fA-F]{40}$/.test(payee) ? getAddress(payee) : payee;
      return refundInflow(chainTxOf(receipt, null, d.usdc.address), {
        walletAta: wallet,
        payee: from,
        mint: d.usdc.address,
      });
    },

    async watch(p) {
      const exp = await expected(d, p);
      if (!exp || p.validBefore === undefined) return { kind: "done" };
      const { facts, found } = await factsOf(d, exp, p);
      const ruling = watchRuling(facts);
      if (ruling === "landed" && found?.kind === "landed")
        return { kind: "landed", tx: found.tx, problems: verifyPayment(found.tx, exp) };
      return { kind: ruling === "done" ? "done" : "watch" };
    },
  };
}
