/**
 * The quote step (from `new`): asks the service to price the intent under the tightest cap
 * that applies to it, checks the quote, and records it — or, where the fast path applies,
 * records it with its reservation and signed proof (steps/price-and-sign.ts). Pays nothing.
 */
import { formatDecimal } from "../../../domain/money.js";
import { checkQuote, quoteRefusal } from "../answers.js";
import { callCeiling } from "../../budget/policy.js";
import { serviceApi } from "../../service/api.js";
import type { IntentIn } from "../../model/types.js";
import type { HeldIntent } from "../held.js";
import { refusal, type Move } from "../moves.js";
import { checkAgainstQuote, quoteChallenge } from "../../payment/challenge.js";
import { quotedPayee } from "../../rails/choose.js";
import { fastChallenge, priceAndSign } from "./price-and-sign.js";

export async function requestQuote(h: HeldIntent, intent: IntentIn<"new", "action">): Promise<Move> {
  h.checkCancelled("before_quote");
  const { c } = h;
  const { ceiling } = callCeiling(c.config.limits, intent.action, intent.agentBudget ?? undefined);
  // The lifetime the proof will be signed with (Solana: a blockhash) is fetched while the service prices the intent.
  c.rails.warm();
  const res = await serviceApi(c.client).quote(
    { action: intent.action, input: intent.input, budget: { amount: formatDecimal(ceiling), currency: "USDC" } },
    { idempotencyKey: intent.idemKey, trace: c.trace(intent), signal: h.opts.signal },
  );
  c.transcript(intent, "quote", { status: res.status, body: res.ok ? res.body : res.error });
  if (!res.ok) return refusal(intent.state, quoteRefusal(res.status, res.error));
  const quote = res.body;
  const { amount, expiresAt } = checkQuote(quote, intent.action);
  const price = {
    quoteId: quote.quoteId,
    quote,
    amount,
    // The payee of the way we would pay (the quote lists one per network it accepts).
    payee: quotedPayee(quote.paymentRequirement.accepts, c.rails.networks) ?? null,
    quoteExpiresAt: expiresAt,
    quotedAt: c.now(),
  };
  const quoted: Move = { outcome: "quote_recorded", patch: price, note: null, boundaries: ["quote_recorded"] };
  const accepts = fastChallenge(c, quote, intent.input, price.quotedAt);
  if (!accepts) return quoted;
  const priced = { ...intent, ...price, state: "quoted" as const, approvalId: null };
  return priceAndSign(h, priced, quoted, () => checkAgainstQuote(c, priced, { ...quoteChallenge(c, quote), accepts }));
}
