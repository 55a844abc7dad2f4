// @ts-check
// Transcripts: the recent tool calls, and one call as a sequence diagram (agent -> MCP server ->
// service -> chain) beside the selected step's record. Transcripts are redacted when written:
// no API key, wallet secret or payment proof is in them, so the console shows them as they are.
import { failure, getTranscript, getTranscripts } from "../api.js";
import { clock, fill, h, jsonView, loading, mono, notice, pageHead, timeEl, when } from "../dom.js";
import { fit } from "../charts.js";
import { sequenceDiagram } from "../sequence.js";
import { arrowsOf, field } from "../sequence-arrows.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").TranscriptEntry} TranscriptEntry */

/**
 * /transcripts
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const body = h("tbody", {}, h("tr", {}, h("td", { colspan: 3 }, loading("Loading…"))));
  main.append(
    pageHead(
      "Transcripts",
      "Every tool call leaves a redacted record of each step: requests, answers, decisions, timings.",
    ),
    h(
      "div",
      { class: "table-wrap card" },
      h(
        "table",
        { class: "table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["When", "Call", "Kept on"].map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        body,
      ),
    ),
  );
  let res;
  try {
    res = await getTranscripts(100);
  } catch (e) {
    fill(body, h("tr", {}, h("td", { colspan: 3 }, notice("error", failure(e).message))));
    return undefined;
  }
  const items = res.items ?? [];
  fill(
    body,
    items.length
      ? items.map((t) =>
          h(
            "tr",
            { "data-call": t.callId },
            h("td", {}, t.at ? timeEl(t.at) : "—"),
            h(
              "td",
              {},
              t.path === null
                ? mono(t.callId)
                : h("a", { href: `/transcripts/${encodeURIComponent(t.callId)}` }, mono(t.callId)),
            ),
            h(
              "td",
              {},
              t.host ?? "",
              t.path === null ? h("span", { class: "muted" }, " (another machine keeps the file)") : null,
            ),
          ),
        )
      : h("tr", {}, h("td", { colspan: 3, class: "empty-cell" }, "No tool call has been recorded yet.")),
  );
  return undefined;
}

/**
 * The action a call was about, from whichever entry names it.
 * @param {TranscriptEntry[]} entries
 */
function actionOf(entries) {
  for (const e of entries) {
    const a = e.action ?? field(e.request?.body, "action") ?? field(e.body, "action") ?? e.tool;
    if (typeof a === "string") return a;
  }
  return undefined;
}

/** @param {TranscriptEntry[]} entries */
function summary(entries) {
  const intent = entries.find((e) => e.step === "intent");
  const first = Date.parse(entries[0]?.t ?? "");
  const last = Date.parse(entries[entries.length - 1]?.t ?? "");
  const toolError = entries.find((e) => e.step === "tool_error");
  const finalStatus = [...entries].reverse().find((e) => e.step === "status")?.to;
  const intentId = entries.find((e) => typeof e.intentId === "string")?.intentId;
  const paid = entries.find((e) => e.step === "confirm" && typeof field(e.body, "transaction") === "string");
  const outcome = toolError
    ? `refused: ${field(toolError.error, "code") ?? "error"}`
    : finalStatus
      ? `execution ${finalStatus}`
      : paid
        ? "paid"
        : "—";
  const pairs = [
    ["Action", intent?.action ?? actionOf(entries) ?? "—"],
    [
      "Call",
      intent
        ? "a new purchase"
        : entries[0]?.step === "resume"
          ? "a retry that resumed an earlier purchase"
          : (entries[0]?.step ?? "—"),
    ],
    ["Started", Number.isFinite(first) ? when(entries[0]?.t ?? "") : "—"],
    ["Lasted", Number.isFinite(first) && Number.isFinite(last) ? `${last - first} ms` : "—"],
    ["Steps", String(entries.length)],
    ["Outcome", outcome],
    ["Paid in", paid ? mono(/** @type {string} */ (field(paid.body, "transaction"))) : "—"],
  ];
  return h(
    "div",
    {},
    h(
      "dl",
      { class: "facts facts-wide" },
      pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
    ),
    intentId
      ? h("p", {}, h("a", { href: `/executions/${encodeURIComponent(intentId)}` }, "The execution this call drove →"))
      : null,
  );
}

/**
 * @param {TranscriptEntry[]} entries
 * @param {number} index
 */
function inspector(entries, index) {
  const e = entries[index];
  if (!e) return h("p", { class: "muted" }, "Select an arrow to see its step.");
  const { t, step, ...rest } = e;
  const t0 = Date.parse(entries[0]?.t ?? "");
  const arrows = arrowsOf(e);
  const answered = field(e.response, "status");
  return h(
    "div",
    { class: "inspect", "data-entry": index },
    h("h3", {}, `${index + 1}. ${step}`),
    h("p", { class: "muted" }, arrows.map((a) => a.label).join(" · ")),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "At"),
      h("dd", {}, clock(t), Number.isFinite(t0) ? ` (+${Date.parse(t) - t0} ms)` : ""),
      typeof e.durationMs === "number" ? [h("dt", {}, "Took"), h("dd", {}, `${e.durationMs} ms`)] : null,
      typeof e.status === "number" || answered
        ? [h("dt", {}, "Status"), h("dd", {}, String(e.status ?? answered))]
        : null,
    ),
    jsonView(rest, "json-inspect"),
  );
}

/**
 * /transcripts/<callId>
 * @param {HTMLElement} main
 * @param {string} callId
 */
export async function mountOne(main, callId) {
  main.append(
    pageHead("Transcript", h("span", {}, mono(callId), " · ", h("a", { href: "/transcripts" }, "all transcripts"))),
  );
  const box = h("div", {}, loading("Loading the transcript…"));
  main.append(box);
  let res;
  try {
    res = await getTranscript(callId);
  } catch (caught) {
    const e = failure(caught);
    fill(box, notice("error", e.code === "not_found" ? `No transcript ${callId} is kept here.` : e.message));
    return undefined;
  }
  const entries = Array.isArray(res.entries) ? res.entries : [];
  if (entries.length === 0) {
    fill(box, notice("neutral", "This transcript is empty."));
    return undefined;
  }
  const side = h("aside", { class: "card inspector", "aria-live": "polite" });
  /** @type {ReturnType<typeof sequenceDiagram> | undefined} */
  let diagram;
  let selected = 0;
  const select = (/** @type {number} */ i) => {
    selected = i;
    diagram?.select(i);
    fill(side, inspector(entries, i));
  };
  const drawn = fit((width) => {
    diagram = sequenceDiagram(entries, select, width);
    diagram.select(selected);
    return diagram.svg;
  }, "seq-scroll");
  fill(
    box,
    h("section", { class: "card" }, summary(entries)),
    h(
      "div",
      { class: "seq-layout" },
      h(
        "section",
        { class: "card seq-card" },
        h("h2", {}, "Sequence"),
        h("p", { class: "muted" }, "Each arrow is one recorded step; select one to see its record."),
        drawn,
      ),
      side,
    ),
  );
  select(0);
  return undefined;
}
