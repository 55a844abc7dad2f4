// @ts-check
// Executions: what was bought, filterable by status and action (the filters live in the URL so
// a view can be shared), newest first, each row leading to one execution (execution.js). The
// list follows the server's `executions` events.
import { failure, getExecutions, on } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, statusBadge, timeEl } from "../dom.js";

/** @typedef {import("../wire.js").Execution} Execution */

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
 * The filters, as the URL's query set them, with the datalist that learns the actions seen.
 * @param {URLSearchParams} params
 */
function filterForm(params) {
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
  /** The query the filters ask for (empty when they ask for nothing). */
  const filters = () => {
    const q = new URLSearchParams();
    if (status.value) q.set("status", status.value);
    if (action.value.trim()) q.set("action", action.value.trim());
    return q;
  };
  return { form, status, actions, filters };
}

/** The table of executions, its body empty. */
function executionsTable() {
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
  return { table, body };
}

/**
 * What a load of the list reads and draws into.
 * @typedef {object} ListView
 * @property {HTMLElement} body the table's body
 * @property {HTMLElement} info where a failure to load is told
 * @property {HTMLElement} more the "Show older" button, shown while there are older ones
 * @property {HTMLElement} actions the datalist of the actions seen
 * @property {() => URLSearchParams} filters the query the filters ask for
 */

/**
 * What loads the executions the filters ask for into the table: `load()` draws the first page
 * again (as many rows as are shown, up to 100), `load(true)` appends the next one. The answer
 * of the newest load wins.
 * @param {ListView} view
 */
function loader({ body, info, more, actions, filters }) {
  /** @type {Set<string>} */
  const known = new Set();
  /** @type {string | null} */
  let cursor = null;
  let shown = 20;
  let loads = 0;
  return async function load(append = false) {
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
  };
}

/**
 * What needs a person, above the list: every purchase with an attention note — a paid one the
 * service has created no execution for is listed nowhere else. Empty (and hidden) when none does.
 * @param {HTMLElement} box
 */
async function loadAttention(box) {
  let items;
  try {
    items = (await getExecutions(new URLSearchParams({ attention: "true" }))).items ?? [];
  } catch {
    return; // the list below tells a failure to load
  }
  box.hidden = items.length === 0;
  fill(
    box,
    h("h2", {}, "Needs a person"),
    h(
      "ul",
      { class: "attention-list" },
      items.map((x) =>
        h(
          "li",
          { "data-intent": x.intentId },
          h("a", { href: linkOf(x), class: "strong" }, x.action),
          " ",
          statusBadge(x.status),
          x.amount ? ` ${x.amount} USDC ` : " ",
          h("span", {}, x.attention ?? ""),
        ),
      ),
    ),
  );
}

/**
 * /executions?status=&action=
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const { form, status, actions, filters } = filterForm(new URLSearchParams(location.search));
  const { table, body } = executionsTable();
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Show older");
  const info = h("div", {});
  const attention = h("section", { class: "card attention", hidden: true });
  main.append(
    pageHead("Executions", "Every purchase that reached the service, newest first."),
    attention,
    form,
    info,
    h("div", { class: "table-wrap card" }, table),
    h("p", {}, more),
  );
  const load = loader({ body, info, more, actions, filters });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = filters().toString();
    history.replaceState(null, "", `/executions${q ? `?${q}` : ""}`);
    load();
  });
  status.addEventListener("change", () => form.requestSubmit());
  more.addEventListener("click", () => load(true));
  fill(body, h("tr", {}, h("td", { colspan: 6 }, loading("Loading…"))));
  await Promise.all([load(), loadAttention(attention)]);
  return on("executions", () => {
    load();
    loadAttention(attention);
  });
}
