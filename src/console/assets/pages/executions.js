// @ts-check
// Executions: what was bought, filterable by status and action (the filters live in the URL so
// a view can be shared), each row leading to one execution: its timeline (quote, approval,
// reservation, payment with its transaction, execution states, refund), its output and the
// transcripts of the calls that drove it. Both follow the server's `executions` events.
import { failure, getExecution, getExecutions, on } from "../api.js";
import { clock, fill, h, jsonView, loading, mono, notice, pageHead, statusBadge, timeEl, when } from "../dom.js";
import { usdc } from "../money.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").Execution} Execution */
/** @typedef {import("../wire.js").TimelineEntry} TimelineEntry */

const STATUSES = ["pending", "processing", "completed", "failed", "refunded"];

/** @param {string | null} id */
function short(id) {
  return id && id.length > 18 ? `${id.slice(0, 10)}…${id.slice(-6)}` : (id ?? "—");
}

/** @param {Execution} x */
function linkOf(x) {
  return `/executions/${encodeURIComponent(x.executionId ?? x.intentId)}`;
}

/** @param {Execution} x */
function row(x) {
  return h(
    "tr",
    { "data-execution": x.executionId ?? "", "data-intent": x.intentId, "data-status": x.status },
    h("td", {}, timeEl(x.createdAt)),
    h("td", {}, h("a", { href: linkOf(x), class: "strong" }, x.action)),
    h("td", { class: "num" }, x.amount ? `${x.amount}` : "—"),
    h(
      "td",
      {},
      statusBadge(x.status),
      x.attention ? h("span", { class: "pill pill-bad", title: x.attention }, "needs a look") : null,
    ),
    h("td", {}, h("a", { href: linkOf(x) }, mono(short(x.executionId ?? x.intentId)))),
    h(
      "td",
      {},
      x.paymentTransaction
        ? h("span", { title: x.paymentTransaction }, mono(short(x.paymentTransaction)))
        : h("span", { class: "muted" }, "—"),
    ),
  );
}

/**
 * /executions?status=&action=
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const params = new URLSearchParams(location.search);
  const status = h(
    "select",
    { name: "status", "aria-label": "Status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((st) => h("option", { value: st, selected: params.get("status") === st }, st)),
  );
  const action = h("input", {
    name: "action",
    type: "search",
    placeholder: "Action, e.g. servers.provision",
    value: params.get("action") ?? "",
    list: "actions",
    "aria-label": "Action",
  });
  const actions = h("datalist", { id: "actions" });
  const form = h(
    "form",
    { class: "filters", role: "search" },
    h("label", {}, "Status ", status),
    h("label", {}, "Action ", action),
    actions,
    h("button", { type: "submit" }, "Filter"),
  );
  const body = h("tbody", {});
  const table = h(
    "table",
    { class: "table executions-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["When", "Action", "USDC", "Status", "Execution", "Payment transaction"].map((t) =>
          h("th", { scope: "col", class: t === "USDC" ? "num" : null }, t),
        ),
      ),
    ),
    body,
  );
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Show older");
  const info = h("div", {});
  main.append(
    pageHead("Executions", "Every purchase that reached the service, newest first."),
    form,
    info,
    h("div", { class: "table-wrap card" }, table),
    h("p", {}, more),
  );

  const filters = () => {
    const q = new URLSearchParams();
    if (status.value) q.set("status", status.value);
    if (action.value.trim()) q.set("action", action.value.trim());
    return q;
  };
  /** @type {Set<string>} */
  const known = new Set();
  /** @type {string | null} */
  let cursor = null;
  let shown = 20;
  let loads = 0;
  async function load(append = false) {
    const turn = ++loads;
    const q = filters();
    q.set("limit", String(append ? 20 : Math.max(20, Math.min(100, shown))));
    if (append && cursor) q.set("cursor", cursor);
    let res;
    try {
      res = await getExecutions(q);
    } catch (e) {
      if (turn === loads) fill(info, notice("error", failure(e).message));
      return;
    }
    // A newer load (a filter change, a live update) has started: its answer wins.
    if (turn !== loads) return;
    fill(info);
    if (!append) fill(body);
    for (const x of res.items ?? []) {
      body.append(row(x));
      if (!known.has(x.action)) {
        known.add(x.action);
        actions.append(h("option", { value: x.action }));
      }
    }
    shown = body.children.length;
    cursor = res.nextCursor ?? null;
    more.hidden = !cursor;
    if (body.children.length === 0)
      body.append(
        h(
          "tr",
          {},
          h(
            "td",
            { colspan: 6, class: "empty-cell" },
            filters().toString() ? "No execution matches these filters." : "Nothing has been bought yet.",
          ),
        ),
      );
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = filters().toString();
    history.replaceState(null, "", `/executions${q ? `?${q}` : ""}`);
    load();
  });
  status.addEventListener("change", () => form.requestSubmit());
  more.addEventListener("click", () => load(true));
  fill(body, h("tr", {}, h("td", { colspan: 6 }, loading("Loading…"))));
  await load();
  return on("executions", () => load());
}

// ---- One execution ----------------------------------------------------------------------------

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
};

/** @param {TimelineEntry[] | undefined} entries */
function timeline(entries) {
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
    const transcripts = res.transcripts ?? [];
    fill(
      box,
      pageHead(
        h("span", {}, x.action, " ", statusBadge(x.status)),
        h("a", { href: "/executions" }, "← all executions"),
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
          h(
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
                    transcripts.map((c) =>
                      h("li", {}, h("a", { href: `/transcripts/${encodeURIComponent(c)}` }, mono(c))),
                    ),
                  ),
                ]
              : h("p", { class: "muted" }, "No transcript names this execution."),
          ),
        ),
      ),
      h(
        "section",
        { class: "card" },
        h("h2", {}, "Output"),
        x.output !== undefined
          ? jsonView(x.output)
          : h(
              "p",
              { class: "muted" },
              x.status === "completed"
                ? "The service returned no output."
                : "No output yet: the service has not finished.",
            ),
      ),
      x.refund
        ? h("section", { class: "card" }, h("h2", {}, "Refund (the service's claim)"), jsonView(x.refund))
        : null,
      x.providerMeta
        ? h("details", { class: "card" }, h("summary", {}, "Provider details"), jsonView(x.providerMeta))
        : null,
    );
  }
  await load();
  // Reload when this execution changed (the event names execution or intent ids).
  return on("executions", (data) => {
    const changed = Array.isArray(data?.changed) ? data.changed : null;
    if (!changed || changed.some((c) => ids.has(c))) load();
  });
}
