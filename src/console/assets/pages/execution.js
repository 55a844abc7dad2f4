// @ts-check
// One execution (/executions/<id>): its timeline (quote, approval, reservation, payment with its
// transaction, execution states, refund), its record, its output and the transcripts of the
// calls that drove it. Follows the server's `executions` events for the ids it names. Its
// timeline and transcript links also draw a paid_fetch purchase's page (purchase.js).
import { failure, getExecution, on } from "../api.js";
import { clock, fill, h, jsonView, loading, mono, notice, pageHead, statusBadge, when } from "../dom.js";
import { usdc } from "../money.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").Execution} Execution */
/** @typedef {import("../wire.js").ExecutionDetail} ExecutionDetail */
/** @typedef {import("../wire.js").TimelineEntry} TimelineEntry */

/** @type {Record<string, string>} */
const STEP_LABEL = {
  quote: "Quote",
  approval: "Approval",
  reservation: "Budget",
  payment: "Payment",
  settlement: "Settlement",
  execution: "Execution",
  refund: "Refund",
  error: "Problem",
  request: "Request",
  price: "Price",
  answer: "Answer",
};

/**
 * A purchase's steps, oldest first, each with its time and the time since the first.
 * @param {TimelineEntry[] | undefined} entries
 */
export function timeline(entries) {
  if (!entries?.length) return h("p", { class: "muted" }, "No steps recorded.");
  const t0 = Date.parse(entries[0]?.at ?? "");
  return h(
    "ol",
    { class: "timeline" },
    entries.map((e) =>
      h(
        "li",
        { class: ["tl-item", `tl-${e.step}`], "data-step": e.step },
        h("span", { class: "tl-dot", "aria-hidden": "true" }),
        h(
          "div",
          { class: "tl-body" },
          h(
            "div",
            { class: "tl-top" },
            h("span", { class: "tl-step" }, STEP_LABEL[e.step] ?? e.step),
            h("strong", { class: "tl-title" }, e.title),
            e.status ? statusBadge(e.status) : null,
          ),
          e.detail ? h("p", { class: "tl-detail" }, e.detail) : null,
          e.transaction ? h("p", { class: "tl-tx" }, "Transaction ", mono(e.transaction)) : null,
          h(
            "time",
            { class: "tl-time", datetime: e.at, title: when(e.at) },
            `${clock(e.at)}${Number.isFinite(t0) && Date.parse(e.at) > t0 ? ` · +${fmtMs(Date.parse(e.at) - t0)}` : ""}`,
          ),
        ),
      ),
    ),
  );
}

/** @param {number} ms */
function fmtMs(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * An execution's error as text: an object's code and message (else its JSON), or the value.
 * @param {unknown} error
 */
function errorText(error) {
  if (typeof error !== "object" || !error) return String(error);
  const e = /** @type {Record<string, unknown>} */ (error);
  return `${e.code ?? ""} ${e.message ?? JSON.stringify(error)}`;
}

/** @param {Execution} x */
function facts(x) {
  /** @type {Array<[string, Child]>} */
  const pairs = [
    ["Amount", x.amount ? usdc(x.amount) : "not priced"],
    ["Pays", x.payee ? mono(x.payee) : "—"],
    ["Payment transaction", x.paymentTransaction ? mono(x.paymentTransaction) : "—"],
    [
      "Settlement",
      x.settlement === "verified"
        ? "seen on chain, exactly as priced"
        : x.settlement === "claimed"
          ? "the service says settled; not yet seen on chain"
          : x.settlement === "mismatch"
            ? "the chain disagrees with the service"
            : "none",
    ],
    ["Execution", mono(x.executionId ?? "none yet")],
    ["Intent", mono(x.intentId)],
    ["Quote", mono(x.quoteId ?? "—")],
    ["Journal state", x.state],
    ["Started", when(x.createdAt)],
    ["Last change", when(x.updatedAt)],
  ];
  if (x.refundCredited) pairs.splice(4, 0, ["Refund credited", usdc(x.refundCredited)]);
  return h(
    "dl",
    { class: "facts facts-wide" },
    pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

/**
 * The transcripts' card: the tool calls that drove the purchase, each a link to its transcript.
 * @param {string[]} transcripts
 */
export function transcriptLinks(transcripts) {
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "Transcripts"),
    transcripts.length
      ? [
          h(
            "p",
            { class: "muted" },
            transcripts.length > 1
              ? "The tool calls that drove this purchase, first to last:"
              : "The tool call that drove this purchase:",
          ),
          h(
            "ol",
            { class: "links" },
            transcripts.map((c) => h("li", {}, h("a", { href: `/transcripts/${encodeURIComponent(c)}` }, mono(c)))),
          ),
        ]
      : h("p", { class: "muted" }, "No transcript names this purchase."),
  );
}

/**
 * What the service returned, or why there is nothing yet.
 * @param {Execution} x
 */
function output(x) {
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "Output"),
    x.output !== undefined
      ? jsonView(x.output)
      : h(
          "p",
          { class: "muted" },
          x.status === "completed" ? "The service returned no output." : "No output yet: the service has not finished.",
        ),
  );
}

/**
 * Draws one execution as read: its head and problems, the timeline beside the record and the
 * transcripts, then the output, the refund claimed and the provider's details.
 * @param {HTMLElement} box
 * @param {ExecutionDetail} res
 */
function drawExecution(box, res) {
  const x = res.execution;
  fill(
    box,
    pageHead(
      h("span", {}, x.action, " ", statusBadge(x.status)),
      h(
        "span",
        {},
        receiptLink(x.executionId ?? x.intentId, x.paymentTransaction !== null),
        " ",
        h("a", { href: "/executions" }, "← all executions"),
      ),
    ),
    x.attention ? notice("error", h("strong", {}, "Needs a human: "), x.attention) : null,
    x.error ? notice("error", h("strong", {}, "Error: "), errorText(x.error)) : null,
    h(
      "div",
      { class: "two-col" },
      h("section", { class: "card" }, h("h2", {}, "Timeline"), timeline(res.timeline)),
      h(
        "div",
        { class: "stack" },
        h("section", { class: "card" }, h("h2", {}, "Record"), facts(x)),
        transcriptLinks(res.transcripts ?? []),
      ),
    ),
    output(x),
    x.refund ? h("section", { class: "card" }, h("h2", {}, "Refund (the service's claim)"), jsonView(x.refund)) : null,
    x.providerMeta
      ? h("details", { class: "card" }, h("summary", {}, "Provider details"), jsonView(x.providerMeta))
      : null,
  );
}

/**
 * The link to a purchase's receipt, once a transaction is known to have paid for it (a receipt
 * can be made as soon as a proof was signed; before a transaction, it says less).
 * @param {string} id
 * @param {boolean} paid
 */
export function receiptLink(id, paid) {
  return h(
    "a",
    { href: `/receipts/${encodeURIComponent(id)}`, "data-receipt": id },
    paid ? "Receipt" : "Receipt (so far)",
  );
}

/**
 * /executions/<executionId or intentId>
 * @param {HTMLElement} main
 * @param {string} id
 */
export async function mountOne(main, id) {
  const box = h("div", {}, loading("Loading the execution…"));
  main.append(box);
  let ids = new Set([id]);
  async function load() {
    let res;
    try {
      res = await getExecution(id);
    } catch (caught) {
      const e = failure(caught);
      fill(
        box,
        pageHead("Execution"),
        notice("error", e.code === "not_found" ? `There is no execution ${id} in this journal.` : e.message),
      );
      return;
    }
    const x = res.execution;
    ids = new Set(/** @type {string[]} */ ([id, x.intentId, x.executionId].filter(Boolean)));
    drawExecution(box, res);
  }
  await load();
  // Reload when this execution changed (the event names execution or intent ids).
  return on("executions", (data) => {
    const changed = Array.isArray(data?.changed) ? data.changed : null;
    if (!changed || changed.some((c) => ids.has(c))) load();
  });
}
