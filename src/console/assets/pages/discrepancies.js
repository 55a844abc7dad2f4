// @ts-check
// The audit's discrepancies in plain words: for each kind the reconciliation can report
// (engine/audit/report.ts DiscrepancyKind), a title, what it means and what to do, and one card per
// discrepancy with the facts it names (quote, purchase, transaction, both amounts, when).
import { h, mono, when } from "../dom.js";
import { usdc } from "../money.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").Discrepancy} Discrepancy */

/**
 * Each kind of discrepancy (engine/audit/report.ts DiscrepancyKind) in plain words; a kind this page
 * does not know shows by its name.
 * @type {Record<string, { title: string, means: string, todo: string }>}
 */
const KINDS = {
  unknown_outflow: {
    title: "Money left the wallet that no payment explains",
    means:
      "USDC went out of the wallet's token account in a transaction that carries no quote this journal signed. Something other than this program spent from the wallet: another program using the same key, a person, or a stolen key.",
    todo: "Look the transaction up in an explorer. If you do not recognise it, move the remaining funds to a new wallet and replace the key file (PAID_ACTIONS_WALLET).",
  },
  amount_mismatch: {
    title: "A payment moved a different amount than recorded",
    means:
      "The payment for this quote is on chain, but it moved another amount than the journal says was signed. The spend counted against your limits is wrong by the difference.",
    todo: "Compare the two amounts below with the quote. Ask the service about the difference; keep the transaction id as evidence.",
  },
  payee_mismatch: {
    title: "A payment went to someone else",
    means: "The payment for this quote landed in an account that does not belong to the payee the journal recorded.",
    todo: "Treat it as money sent to the wrong party: contact the service with the transaction id, and check that the service's address has not changed.",
  },
  duplicate_payment: {
    title: "One quote was paid twice",
    means:
      "More than one transfer on chain carries the same quote, so the service was paid more than once for one purchase.",
    todo: "Ask the service for a refund of the extra payment, quoting both transactions.",
  },
  landed_but_never: {
    title: "A payment believed lost did land",
    means:
      "The journal decided this payment could never land (and released its budget), yet the chain shows it paid. Your limits undercount the spend by its amount.",
    todo: "Check whether the service delivered the purchase; if not, ask it for a refund or for the execution the payment bought.",
  },
  orphan_payment: {
    title: "A payment belongs to no purchase",
    means: "A transfer on chain matches a payment record that no intent in the journal owns.",
    todo: "The journal may have been edited or partly restored. Keep the transaction id, and compare with a backup of the journal.",
  },
  claimed_but_absent: {
    title: "A payment the journal counts is not on chain",
    means:
      "The journal counts this payment as settled (the service said so), but the wallet's history does not show it. Either the service's claim was wrong, or the chain read is incomplete.",
    todo: "Run the audit again in a few minutes. If it stays absent, the service may have executed without being paid, or reported a transaction that is not yours: contact it.",
  },
  unverified_refund: {
    title: "A refund was credited that the chain does not show",
    means:
      "Your limits were given back money for a refund that the chain does not show arriving in the wallet in full.",
    todo: "Check the refund transaction in an explorer; ask the service to complete the refund.",
  },
};

/**
 * One discrepancy as a card: what was found, the facts it names, what it means and what to do.
 * @param {Discrepancy} d
 */
export function explained(d) {
  const k = KINDS[d.kind] ?? { title: d.kind, means: "", todo: "" };
  /** @type {Array<[string, Child] | null>} */
  const all = [
    d.quoteId ? ["Quote", mono(d.quoteId)] : null,
    d.intentId
      ? ["Purchase", h("a", { href: `/executions/${encodeURIComponent(d.intentId)}` }, mono(d.intentId))]
      : null,
    d.transaction ? ["Transaction", mono(d.transaction)] : null,
    d.journalAmount ? ["Journal says", usdc(d.journalAmount)] : null,
    d.chainAmount ? ["Chain shows", usdc(d.chainAmount)] : null,
    d.at ? ["When", when(d.at)] : null,
  ];
  const facts = all.filter((f) => f !== null);
  return h(
    "article",
    { class: "card discrepancy", "data-kind": d.kind },
    h("h3", {}, k.title),
    h("p", { class: "what" }, d.message),
    facts.length
      ? h(
          "dl",
          { class: "facts" },
          facts.flatMap(([a, b]) => [h("dt", {}, a), h("dd", {}, b)]),
        )
      : null,
    k.means ? h("p", {}, h("strong", {}, "What it means. "), k.means) : null,
    k.todo ? h("p", {}, h("strong", {}, "What to do. "), k.todo) : null,
  );
}
