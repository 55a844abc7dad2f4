// @ts-check
// One x402 purchase (/purchases/<intentId>): its timeline — the request without payment and its
// 402, the price, the approval and reservation, the proof signed, the paid request, the answer,
// the settlement on chain — beside its record and the transcripts of the calls that drove it.
// The request itself is a secret: the page shows its method and its URL without query values,
// never its headers' values or its body. Follows the server's `purchases` events for this id.
import { failure, getPurchase, on } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, statusBadge, when } from "../dom.js";
import { usdc } from "../money.js";
import { receiptLink, timeline, transcriptLinks } from "./execution.js";
import { settlementText } from "./purchases.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").Purchase} Purchase */
/** @typedef {import("../wire.js").PurchaseDetail} PurchaseDetail */

/** @param {Purchase} p */
function facts(p) {
  /** @type {Array<[string, Child]>} */
  const pairs = [
    ["Request", [p.method ?? "?", " ", mono(p.url)]],
    ["Origin", mono(p.origin)],
    ["Amount", p.amount ? usdc(p.amount) : "not priced"],
    ["Pays", p.payTo ? mono(p.payTo) : "—"],
    ["Network", p.network ? mono(p.network) : "—"],
    ["Transaction", p.transaction ? mono(p.transaction) : "—"],
    ["Settlement", settlementText(p.settlement)],
    [
      "Answer",
      p.status === null
        ? "none kept yet"
        : `HTTP ${p.status}${p.contentType ? ` · ${p.contentType}` : ""}${p.bodyBytes !== null ? ` · ${p.bodyBytes} bytes` : ""}`,
    ],
    ["Intent", mono(p.intentId)],
    ["Intent key", mono(p.intentKey)],
    ["Journal state", p.state],
    ["Started", when(p.createdAt)],
    ["Last change", when(p.updatedAt)],
  ];
  return h(
    "dl",
    { class: "facts facts-wide" },
    pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

/**
 * Where the answer's body is: the journal keeps it, an agent reads it as a resource.
 * @param {Purchase} p
 */
function answerCard(p) {
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "The answer"),
    p.status === null
      ? h("p", { class: "muted" }, "The resource has not answered the paid request yet.")
      : h(
          "p",
          { class: "muted" },
          "The journal keeps the whole body; an agent reads it as ",
          mono(`paid-actions://purchases/${p.intentId}/body`),
          ".",
        ),
  );
}

/**
 * @param {HTMLElement} box
 * @param {PurchaseDetail} res
 */
function draw(box, res) {
  const p = res.purchase;
  fill(
    box,
    pageHead(
      h("span", {}, `${p.method ?? "?"} ${p.origin ?? ""} `, statusBadge(p.state)),
      h(
        "span",
        {},
        receiptLink(p.intentId, p.transaction !== null),
        " ",
        h("a", { href: "/purchases" }, "← all purchases"),
      ),
    ),
    p.attention ? notice("error", h("strong", {}, "Needs a human: "), p.attention) : null,
    p.error ? notice("error", h("strong", {}, "Stopped: "), `${p.error.code ?? ""} ${p.error.message ?? ""}`) : null,
    h(
      "div",
      { class: "two-col" },
      h("section", { class: "card" }, h("h2", {}, "Timeline"), timeline(res.timeline)),
      h(
        "div",
        { class: "stack" },
        h("section", { class: "card" }, h("h2", {}, "Record"), facts(p)),
        transcriptLinks(res.transcripts ?? []),
      ),
    ),
    answerCard(p),
  );
}

/**
 * /purchases/<intentId>
 * @param {HTMLElement} main
 * @param {string} id
 */
export async function mountOne(main, id) {
  const box = h("div", {}, loading("Loading the purchase…"));
  main.append(box);
  async function load() {
    try {
      draw(box, await getPurchase(id));
    } catch (caught) {
      const e = failure(caught);
      fill(
        box,
        pageHead("Purchase"),
        notice("error", e.code === "not_found" ? `There is no purchase ${id} in this journal.` : e.message),
      );
    }
  }
  await load();
  return on("purchases", (data) => {
    if (!Array.isArray(data?.changed) || data.changed.includes(id)) load();
  });
}
