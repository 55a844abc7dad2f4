/**
 * The probe step (a fetch's `new`): the request sent without payment, and the resource's 402
 * read as its price — the requirement this server can pay (scheme `exact`, the configured
 * network and USDC mint), the memo the transfer will carry, the payment identifier when the
 * resource declares that extension. Pays nothing. The first attempt's probe is the one the
 * call already made before recording the intent (handed in); a fresh attempt sends it again.
 */
import { formatDecimal } from "../../../domain/money.js";
import { PaidActionError } from "../../errors.js";
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
  h.checkCancelled("before the request");
  const { c } = h;
  const unsupported = (message: string, context: { offered?: string[] } = {}) =>
    new PaidActionError("payment_unsupported", message, { origin: intent.origin, ...context });
  c.rails.warm(); // the lifetime a proof would be signed with (Solana: a blockhash), fetched beside the unpaid request
  const res = h.takeProbe() ?? (await fetchResource(c, intent, { signal: h.opts.signal }));
  c.transcript(intent, "request", { paid: false, status: res.status, headers: keptHeaders(res.headers) });
  if (res.status !== 402) {
    const response = await keepResponse(c, intent, res, false);
    const message = `the resource answered HTTP ${res.status} without asking for payment this time; nothing was paid`;
    return refusal(intent.state, unsupported(message), { response });
  }
  const offer = readPaymentRequired(res.headers, jsonOf(res));
  if (!offer)
    return refusal(
      intent.state,
      unsupported(
        "the resource answered 402 without x402 v2 payment requirements (a PAYMENT-REQUIRED header); nothing was paid",
      ),
    );
  const pick = await c.rails.pick(offer.accepts);
  if (!pick.ok) {
    const offered = `it offered: ${pick.offered.join("; ").slice(0, 400) || "nothing"}`;
    const message = `the resource asks for no payment this server can make (scheme ${pick.terms}); ${offered}; nothing was paid`;
    return refusal(intent.state, unsupported(message, { offered: pick.offered }));
  }
  const requirement = pick.requirement;
  // Solana: a seller may name the transfer's memo, and the memo is the payment's quote id. On
  // EVM nothing the seller names reaches the chain (the authorization's nonce is ours).
  const sellerMemo =
    pick.rail.kind === "solana" && typeof requirement.extra?.memo === "string" ? requirement.extra.memo : undefined;
  // The memo is how the chain tells this payment apart: one already journaled would hide it.
  if (sellerMemo !== undefined && (await c.journal.payment(sellerMemo)))
    return refusal(
      intent.state,
      unsupported(
        `the resource asks for a transfer memo (${sellerMemo.slice(0, 64)}) that another payment of this wallet already carries; nothing was paid`,
      ),
    );
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
  c.transcript(intent, "price", {
    amount: formatDecimal(BigInt(requirement.amount)),
    payTo: requirement.payTo,
    network: requirement.network,
    memo: sellerMemo ? "the resource's" : "ours",
  });
  const quoted: Move = { outcome: "quote_recorded", patch: price, note: null, boundaries: ["quote_recorded"] };
  // The 402's requirement is the challenge, checked above: the fast path may sign it at once.
  const priced = { ...intent, ...price, state: "quoted" as const, approvalId: null };
  return priceAndSign(h, priced, quoted, async () => requirement);
}
