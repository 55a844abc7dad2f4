// @ts-check
// One purchase's receipt (/receipts/<executionId or intentId>), made now as `paid-actions-mcp
// receipt` makes it, readable: what was bought, the approval, the payment, the chain's facts,
// the outcome and the seller's word — each saying whether something other than the agent key
// vouches for it ("checked": a passkey, the transaction's own signatures and bytes, the chain as
// our RPC showed it, the seller's signature) or not ("not checked": the journal's word, signed
// by the agent key) — then every check `receipt verify` makes, and the file to download.
import { failure, getReceiptChecked, receiptFileUrl } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, when } from "../dom.js";
import { usdc } from "../money.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").Receipt} Receipt */
/** @typedef {import("../wire.js").ReceiptChecked} ReceiptChecked */
/** @typedef {import("../wire.js").ReceiptSellerPart} ReceiptSellerPart */
/** @typedef {ReceiptChecked["verdict"]["checks"][number]} Check */

/**
 * Whether a section is vouched for beyond the agent key's signature, and by what.
 * @typedef {{ checked: boolean, why: string }} Vouch
 */

/**
 * The verdict's checks by name.
 * @param {Check[]} checks
 * @param {string} name
 */
const holds = (checks, name) => checks.some((c) => c.check === name && c.holds);
/** @param {Check[]} checks @param {string} prefix */
const failed = (checks, prefix) =>
  checks.some((c) => !c.holds && (c.check === prefix || c.check.startsWith(`${prefix}.`)));

/**
 * @param {Vouch} v
 * @param {string} section
 */
function badge(v, section) {
  return h(
    "span",
    {
      class: ["pill", v.checked ? "pill-good" : "pill-neutral"],
      "data-checked": v.checked ? "checked" : "not checked",
      "data-section": section,
      title: v.why,
    },
    v.checked ? "checked" : "not checked",
  );
}

/**
 * One section: its title and vouch, its facts, and why it is (not) checked.
 * @param {string} section
 * @param {string} title
 * @param {Vouch} v
 * @param {Array<[string, Child] | null>} pairs the facts shown; null for one the receipt does not have
 */
function card(section, title, v, pairs) {
  return h(
    "section",
    { class: "card receipt-section", "data-section": section },
    h("h2", {}, title, " ", badge(v, section)),
    h("p", { class: "muted" }, v.why),
    h(
      "dl",
      { class: "facts facts-wide" },
      pairs.flatMap((pair) => (pair ? [h("dt", {}, pair[0]), h("dd", {}, pair[1])] : [])),
    ),
  );
}

/** @param {Receipt} r @param {Check[]} checks @returns {Vouch} */
function boughtVouch(r, checks) {
  return r.approval?.evidence && holds(checks, "approval")
    ? { checked: true, why: "The person's passkey signed this input's digest with the terms." }
    : { checked: false, why: "What the journal says was bought, signed by the agent key only." };
}

/** @param {Receipt} r @param {Check[]} checks @returns {Vouch} */
function approvalVouch(r, checks) {
  if (!r.approval) return { checked: false, why: "No approval was needed: the payment was within the threshold." };
  if (r.approval.evidence && holds(checks, "approval"))
    return { checked: true, why: "The passkey's assertion verifies over the digest of exactly these terms." };
  return { checked: false, why: "A person's approval as the journal keeps it: no passkey evidence to check." };
}

/** @param {Receipt} r @param {Check[]} checks @returns {Vouch} */
function paymentVouch(r, checks) {
  if (!r.chain) return { checked: false, why: `The transaction was not read: ${r.chainUnread ?? "not said"}.` };
  return holds(checks, "transaction") && holds(checks, "requirement")
    ? { checked: true, why: "The transaction the receipt carries is signed by the payer and moves exactly this." }
    : { checked: false, why: "The transaction it carries does not show this payment: see the checks below." };
}

/** @param {Receipt} r @param {Check[]} checks @returns {Vouch} */
function chainVouch(r, checks) {
  if (!r.chain) return { checked: false, why: `Not read: ${r.chainUnread ?? "not said"}.` };
  return failed(checks, "payment")
    ? { checked: false, why: "Read from your RPC, but it does not match the payment stated." }
    : {
        checked: true,
        why: "Read from your RPC when this receipt was made, just now; receipt verify --rpc reads it again from any RPC.",
      };
}

/** @param {Receipt} r @returns {Vouch} */
function outcomeVouch(r) {
  const seen = r.outcome.refunds.filter((x) => x.seenOnChain !== null);
  return seen.length > 0
    ? { checked: true, why: "The refund was seen coming back on chain; the execution's status is the service's word." }
    : {
        checked: false,
        why: "The service's (or the seller's) answer as the journal keeps it, signed by the agent key.",
      };
}

/** @param {ReceiptSellerPart | null} p */
const partText = (p) =>
  p === null
    ? "none given"
    : `${p.state}${p.signer ? ` by ${p.signer}` : ""}${p.withheld ? ` (withheld: ${p.withheld})` : ""}${p.problems.length > 0 ? ` — ${p.problems.join("; ")}` : ""}`;

/** @param {Receipt} r @returns {Vouch} */
function sellerVouch(r) {
  if (!r.seller) return { checked: false, why: "The seller gave no signed offer or receipt." };
  const both = r.seller.offer?.state === "verified" && r.seller.receipt?.state === "verified";
  return both
    ? { checked: true, why: "The seller signed its offer and its receipt, and both match what was paid." }
    : { checked: false, why: "The seller's word is not verified in full: see each part." };
}

/** @typedef {(r: Receipt, checks: Check[]) => HTMLElement} Section */

/** @type {Section} */
const boughtCard = (r, checks) =>
  card("bought", "What was bought", boughtVouch(r, checks), [
    ["Kind", r.bought.kind === "action" ? "an action" : "an x402 resource"],
    r.bought.action ? ["Action", mono(r.bought.action)] : null,
    r.bought.request ? ["Request", [r.bought.request.method, " ", mono(r.bought.request.url)]] : null,
    ["Input digest", mono(r.bought.inputDigest)],
    ["Execution", mono(r.bought.executionId)],
    ["Quote", [usdc(r.quote.amount), " · ", mono(r.quote.quoteId)]],
  ]);

/** @type {Section} */
const approvalCard = (r, checks) =>
  card("approval", "Approval", approvalVouch(r, checks), [
    r.approval ? ["Status", r.approval.status] : null,
    r.approval ? ["Through", r.approval.channel] : null,
    r.approval ? ["Decided", r.approval.decidedAt ? when(r.approval.decidedAt) : "—"] : null,
    r.approval ? ["Approval", mono(r.approval.approvalId)] : null,
  ]);

/** @type {Section} */
const paymentCard = (r, checks) =>
  card("payment", "Payment", paymentVouch(r, checks), [
    ["Amount", usdc(r.payment.amount)],
    ["From (payer)", mono(r.payment.payer)],
    ["To (payee)", mono(r.payment.payee)],
    ["Network", mono(r.payment.network)],
    ["Asset", mono(r.payment.asset)],
    ["Transaction", mono(r.payment.transaction)],
    ["Memo or nonce", mono(r.payment.memo)],
    ["Signed", when(r.payment.signedAt)],
  ]);

/** @type {Section} */
function chainCard(r, checks) {
  const c = r.chain;
  const t = c?.transfer;
  return card("chain", "On chain", chainVouch(r, checks), [
    c ? ["Slot or block", mono(c.slot)] : null,
    c?.blockHash ? ["Block hash", mono(c.blockHash)] : null,
    c ? ["Finality", c.finality ?? "not said"] : null,
    c ? ["Failed", c.failed ? "yes" : "no"] : null,
    c
      ? ["Transfer", t ? [t.amount, " atomic units from ", mono(t.source), " to ", mono(t.destination)] : "none found"]
      : null,
    c ? ["Read", when(c.readAt)] : null,
  ]);
}

/** @type {Section} */
function outcomeCard(r) {
  const o = r.outcome;
  const refunds = o.refunds.map(
    (x) => `${x.state}: claimed ${x.claimed ?? "—"}, seen on chain ${x.seenOnChain ?? "—"}`,
  );
  return card("outcome", "Outcome", outcomeVouch(r), [
    ["State", o.state],
    ["Status", o.status ?? "—"],
    ["Settlement", o.settlement],
    o.answer ? ["Answer", `HTTP ${o.answer.status} · ${o.answer.size} bytes`] : null,
    ["Output digest", mono(o.outputDigest)],
    ["Refunds", refunds.length === 0 ? "none" : refunds.join("; ")],
    o.attention ? ["Needs a human", o.attention] : null,
  ]);
}

/** @type {Section} */
const sellerCard = (r) =>
  card("seller", "The seller's word", sellerVouch(r), [
    ["Offer", partText(r.seller?.offer ?? null)],
    ["Receipt", partText(r.seller?.receipt ?? null)],
  ]);

/** @type {Section} */
const checksCard = (_r, checks) =>
  h(
    "section",
    { class: "card" },
    h("h2", {}, "Every check"),
    h(
      "ul",
      { class: "receipt-checks" },
      checks.map((c) =>
        h(
          "li",
          { "data-check": c.check, "data-holds": String(c.holds) },
          h("strong", {}, c.holds ? "ok " : "FAIL "),
          `${c.check}: ${c.detail}`,
        ),
      ),
    ),
  );

/**
 * The page's head: who signed it, the download, and whether every check holds.
 * @param {ReceiptChecked} res
 * @returns {Child[]}
 */
function head({ receipt: r, verdict }) {
  const failing = verdict.checks.filter((c) => !c.holds).map((c) => c.check);
  return [
    pageHead(
      h("span", {}, "Receipt of ", mono(r.id)),
      `Made ${when(r.madeAt)}, signed (${r.signature.scheme}) by the payer ${r.signature.signer}.`,
      h(
        "a",
        { href: receiptFileUrl(r.id), download: `receipt-${r.id}.json`, class: "button", "data-download": "receipt" },
        "Download the receipt (JSON)",
      ),
    ),
    verdict.holds
      ? notice(
          "good",
          "Every check holds. Anyone can check it again: ",
          mono(`paid-actions-mcp receipt verify receipt-${r.id}.json --rpc URL`),
        )
      : notice("error", "A check does not hold: ", failing.join(", ")),
  ];
}

/**
 * @param {HTMLElement} box
 * @param {ReceiptChecked} res
 */
function draw(box, res) {
  const sections = [boughtCard, approvalCard, paymentCard, chainCard, outcomeCard, sellerCard, checksCard];
  fill(box, ...head(res), ...sections.map((section) => section(res.receipt, res.verdict.checks)));
}

/**
 * /receipts/<executionId or intentId>
 * @param {HTMLElement} main
 * @param {string} id
 */
export async function mountOne(main, id) {
  const box = h("div", {}, loading("Making the receipt (reading the chain, signing it)…"));
  main.append(box);
  try {
    draw(box, await getReceiptChecked(id));
  } catch (caught) {
    const e = failure(caught);
    fill(
      box,
      pageHead("Receipt"),
      notice("error", e.code === "not_found" ? `There is no purchase ${id} in this journal.` : e.message),
    );
  }
  return undefined;
}
