/**
 * The Solana rail's truth about money, read through the user's own RPC: a proof's fate
 * (a transfer carrying its memo in the paying token account's history, or a blockhash past
 * its last valid height with no such transfer), a settlement the service or a seller claims,
 * a refund's inflow, and the watch on a payment found unable to land. What each must look
 * like is the payment as journaled (expected()), whatever the configuration says now.
 */
import { associatedTokenAddress } from "../../../domain/token.js";
import { carriesMemo, refundInflow, verifyPayment, type ChainTx, type ExpectedPayment } from "../../chain/chain.js";
import type { ClaimReading, JournaledProof, Rail, SettlementClaim } from "../port.js";
import { proofFate, type ProofLife } from "./chain.js";
import { findByMemoResuming } from "./memo-resume.js";
import type { SolanaDeps } from "./rail.js";
import { watchRuling } from "./rules.js";

const rpcFailure = (e: unknown) => (e as Error).message.slice(0, 200);

/**
 * What the proof's transfer must be on chain: signed by the key that signed it, out of the
 * token account it was journaled with (the owner's, in delegate mode) — as journaled,
 * whatever the configuration says now; a proof journaled without them is the configured key's.
 */
export async function expected(d: SolanaDeps, p: JournaledProof): Promise<ExpectedPayment> {
  const mint = p.mint ?? d.o.mint;
  let wallet: string;
  let walletAta: string;
  if (p.payer) {
    wallet = p.payer;
    // Journaled before sources were (schema 4): a payment out of its payer's own account.
    walletAta = p.source ?? (await associatedTokenAddress(p.payer, mint));
  } else {
    const key = await d.payer();
    wallet = key.address;
    walletAta = p.source ?? key.source;
  }
  const payeeAta = await associatedTokenAddress(p.payee, mint);
  return { wallet, walletAta, payeeAta, mint, amount: p.amount, memo: p.quoteId };
}

const proofLife = (exp: ExpectedPayment, p: JournaledProof): ProofLife => ({
  walletAta: exp.walletAta,
  memo: exp.memo,
  blockhash: p.blockhash,
  lastValidHeight: p.lastValidHeight,
  signedAt: p.signedAt,
});

/** What the transaction a claim named says of the proof: the one check, read alone or in a batch. */
function claimReading(tx: ChainTx | null, exp: ExpectedPayment): ClaimReading {
  if (!tx || !carriesMemo(tx, exp.memo)) return { kind: "not_ours" };
  return { kind: "ours", tx, problems: verifyPayment(tx, exp) };
}

/** The port's fate, verifySettlement(s), refundInflow and watch, on Solana. */
export function solanaTruth(
  d: SolanaDeps,
): Pick<Rail, "fate" | "verifySettlement" | "verifySettlements" | "refundInflow" | "watch"> {
  const verifySettlement = async (p: JournaledProof, claimedTx: string | null): Promise<ClaimReading> => {
    const exp = await expected(d, p);
    const rpc = await d.chain();
    let tx: ChainTx | null = null;
    try {
      if (claimedTx) tx = await rpc.transaction(claimedTx);
    } catch (e) {
      return { kind: "unknown", why: `the Solana RPC did not answer (${rpcFailure(e)})` };
    }
    return claimReading(tx, exp);
  };
  return {
    async fate(p) {
      const exp = await expected(d, p);
      let fate: Awaited<ReturnType<typeof proofFate>>;
      try {
        fate = await proofFate(await d.chain(), proofLife(exp, p), undefined, d.scans);
      } catch (e) {
        fate = { kind: "unknown", why: `the Solana RPC could not be used (${rpcFailure(e)})` };
      }
      const learned = fate.vouched !== undefined ? { learned: { lastValidHeight: fate.vouched } } : {};
      if (fate.kind === "landed")
        return { kind: "landed", tx: fate.tx, problems: verifyPayment(fate.tx, exp), ...learned };
      if (fate.kind === "unknown") return { kind: "unknown", why: fate.why, ...learned };
      const why = `our Solana RPC's finalized block height is past the last one its blockhash is valid for, and the wallet's history holds no transfer for quote ${p.quoteId}`;
      return { kind: "never", why, ...learned };
    },

    verifySettlement,

    async verifySettlements(claims: readonly SettlementClaim[]) {
      const exps = await Promise.all(claims.map((c) => expected(d, c.proof)));
      const rpc = await d.chain();
      const named = claims.flatMap((c) => (c.claimedTx ? [c.claimedTx] : []));
      if (!rpc.transactions) return Promise.all(claims.map((c) => verifySettlement(c.proof, c.claimedTx)));
      // A node that refuses batches throws here: the caller reads them alone, at its own pace.
      const read = await rpc.transactions(named);
      let next = 0;
      return Promise.all(
        claims.map((c, i): ClaimReading | Promise<ClaimReading> => {
          const tx = c.claimedTx ? read[next++] : null;
          // A read the batch answered with an error (a node that limits batches, say) is asked alone.
          if (tx instanceof Error || tx === undefined) return verifySettlement(c.proof, c.claimedTx);
          return claimReading(tx, exps[i]!);
        }),
      );
    },

    async refundInflow(p, payee, signature) {
      const tx = await (await d.chain()).transaction(signature).catch(() => undefined);
      if (tx === undefined) return undefined;
      if (tx === null) return "missing";
      // A refund comes back to the account the payment came from.
      const exp = await expected(d, p);
      return refundInflow(tx, { walletAta: exp.walletAta, payee, mint: exp.mint });
    },

    async watch(p) {
      const rpc = await d.chain();
      const exp = await expected(d, p);
      // The height first, then the history: a transfer landing between the two reads is seen.
      const finalizedHeight = await rpc.finalizedHeight().catch(() => undefined);
      // A history too long for one pass is read on over passes; the height judged is then the
      // one read before the first of them (memo-resume.ts).
      const { search, finalizedHeight: heightBefore } = await findByMemoResuming(rpc, d.scans, {
        scope: "watch",
        walletAta: exp.walletAta,
        memo: p.quoteId,
        sinceMs: p.signedAt,
        lastValidHeight: p.lastValidHeight,
        finalizedHeight,
      });
      const ruling = watchRuling({
        lastValidHeight: p.lastValidHeight,
        finalizedHeight: heightBefore,
        memo: search.kind,
        signedAt: p.signedAt,
        now: d.o.now(),
      });
      if (ruling === "landed" && search.kind === "found")
        return { kind: "landed", tx: search.tx, problems: verifyPayment(search.tx, exp) };
      return { kind: ruling === "done" ? "done" : "watch" };
    },
  };
}
