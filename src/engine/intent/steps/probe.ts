/**
 * The probe step (a fetch's `new`): the request sent without payment, and the resource's 402
 * read as its price — the requirement this server can pay (scheme `exact`, the configured
 * network and USDC mint), the memo the transfer will carry, the payment identifier when the
 * resource declares that extension. Pays nothing. The first attempt's probe is the one the
 * call already made before recording the intent (handed in); a fresh attempt sends it again.
 */
import { formatDecimal } from "../../../domain/money.js";
import { paidError, type ErrorContext } from "../../errors.js";
import { keepOffer } from "../../evidence/seller-word.js";
import { declaresPaymentIdentifier, paymentExtensions, readPaymentRequired } from "../../x402-http/challenge.js";
import type { FetchedResponse } from "../../x402-http/http.js";
import { keptHeaders } from "../../x402-http/response.js";
import type { IntentIn } from "../../model/types.js";
import { fetchResource, keepResponse } from "../resource.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { priceAndSign } from "./price-and-sign.js";

/** How long a resource's price is used before it is asked for again, at most. */
const MAX_OFFER_MS = 300_000;

/** The JSON a 402's body holds, when it holds JSON (the v2 challenge travels in a header; some put it here). */
export function jsonOf(res: FetchedResponse): unknown {
  if (res.body.byteLength === 0 || res.body.byteLength > 65_536) return undefined;
  try {
    return JSON.parse(Buffer.from(res.body).toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

export async function probe(h: HeldIntent, intent: IntentIn<"new", "fetch">): Promise<Move> {
  h.checkCancelled("before_request");
  const { c } = h;
  const unsupported = (context: ErrorContext<"payment_unsupported">) =>
    paidError("payment_unsupported", { origin: intent.origin, ...context });
  c.rails.warm(); // the lifetime a proof would be signed with (Solana: a blockhash), fetched beside the unpaid request
  const res = h.takeProbe() ?? (await fetchResource(c, intent, { signal: h.opts.signal }));
  c.transcript(intent, "request", { paid: false, status: res.status, headers: keptHeaders(res.headers) });
  if (res.status !== 402) {
    const response = await keepResponse(c, intent, res, false);
    return refusal(intent.state, unsupported({ problem: "not_402", status: res.status }), { response });
  }
  const offer = readPaymentRequired(res.headers, jsonOf(res));
  if (!offer) return refusal(intent.state, unsupported({ problem: "no_requirements" }));
  const pick = await c.rails.pick(offer.accepts);
  if (!pick.ok) {
    // A requirement naming our wallet (or its owner) as fee payer is one we would sign whole: never signed.
    if (pick.feePayerOurs) return refusal(intent.state, unsupported({ problem: "fee_payer", offered: pick.offered }));
    return refusal(intent.state, unsupported({ problem: "no_match", offered: pick.offered, terms: pick.terms }));
  }
  const requirement = pick.requirement;
  // Solana: a seller may name the transfer's memo, and the memo is the payment's quote id. On
  // EVM nothing the seller names reaches the chain (the authorization's nonce is ours).
  const sellerMemo =
    pick.rail.kind === "solana" && typeof requirement.extra?.memo === "string" ? requirement.extra.memo : undefined;
  // The memo is how the chain tells this payment apart: one already journaled would hide it.
  // (A purchase paying with it at this moment is caught where the proof is journaled: held.ts.)
  if (sellerMemo !== undefined && (await c.journal.payment(sellerMemo)))
    return refusal(intent.state, unsupported({ problem: "memo_in_use", memo: sellerMemo.slice(0, 64) }));
  const quoteId = sellerMemo ?? c.d.newId("fq");
  const paymentId = declaresPaymentIdentifier(offer) ? `pam_${quoteId}` : undefined;
  const extensions = paymentId ? paymentExtensions(offer, paymentId) : offer.extensions;
  const now = c.now();
  const ttl = Math.min(Math.max(requirement.maxTimeoutSeconds ?? 60, 1) * 1000, MAX_OFFER_MS);
  const price = {
    quoteId,
    amount: BigInt(requirement.amount),
    payee: requirement.payTo,
    quoteExpiresAt: now + ttl,
    quotedAt: now,
    requirements: requirement,
    offer: {
      ...(offer.resource ? { resource: offer.resource } : {}),
      // The declared extensions echoed back, as the stock client does (a facilitator's discovery reads them there).
      ...(paymentId ? { paymentId } : {}),
      ...(extensions ? { extensions } : {}),
    },
  };
  // The seller's signed offer for this requirement, when its 402 carries them: checked and kept, never trusted beyond that.
  const signedOffer = await keepOffer(
    c.journal,
    intent.intentId,
    { extensions: offer.extensions, requirement, index: offer.accepts.indexOf(requirement), url: intent.request.url },
    now,
  );
  c.transcript(intent, "price", {
    amount: formatDecimal(BigInt(requirement.amount)),
    payTo: requirement.payTo,
    network: requirement.network,
    memo: sellerMemo ? "the resource's" : "ours",
    ...(signedOffer ? { sellerOffer: signedOffer.state } : {}),
  });
  const quoted: Move = { outcome: "quote_recorded", patch: price, note: null, boundaries: ["quote_recorded"] };
  // The 402's requirement is the challenge, checked above: the fast path may sign it at once.
  const priced = { ...intent, ...price, state: "quoted" as const, approvalId: null };
  return priceAndSign(h, priced, quoted, async () => ({ requirements: requirement }));
}
