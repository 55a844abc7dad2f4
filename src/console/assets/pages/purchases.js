// @ts-check
// Purchases: the x402 resources an agent bought with paid_fetch, newest first, filterable by
// origin (the filter lives in the URL so a view can be shared): origin, method, the URL with
// its query values redacted, amount, payee, the answer's status code, the journal's state, the
// transaction and what the chain says of it. Each row leads to one purchase (purchase.js). The
// list follows the server's `purchases` events.
import { failure, getPurchases, on } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, statusBadge, timeEl } from "../dom.js";

/** @typedef {import("../wire.js").Purchase} Purchase */

const COLUMNS = ["When", "Origin", "Request", "USDC", "Pays", "Answer", "State", "Transaction", "Settlement"];

/** @param {string | null} id */
export function short(id) {
  return id && id.length > 18 ? `${id.slice(0, 10)}…${id.slice(-6)}` : (id ?? "—");
}

/** @param {Purchase} p */
export const purchaseLink = (p) => `/purchases/${encodeURIComponent(p.intentId)}`;

/**
 * What the chain says of a purchase's payment, in a few words.
 * @param {Purchase["settlement"]} s
 */
export function settlementText(s) {
  return s === "verified"
    ? "verified on chain"
    : s === "claimed"
      ? "claimed, not yet seen"
      : s === "mismatch"
        ? "the chain disagrees"
        : "none";
}

/**
 * The URL shown without its origin, which has its own column (the whole one in the title).
 * @param {Purchase} p
 */
function pathOf(p) {
  if (!p.url) return "—";
  return p.origin && p.url.startsWith(p.origin) ? p.url.slice(p.origin.length) || "/" : p.url;
}

/** @param {Purchase} p */
function row(p) {
  return h(
    "tr",
    { "data-purchase": p.intentId, "data-state": p.state },
    h("td", {}, timeEl(p.createdAt)),
    h("td", {}, mono(p.origin)),
    h(
      "td",
      { class: "request-cell" },
      h("a", { href: purchaseLink(p), class: "strong", title: p.url ?? "" }, `${p.method ?? "?"} `, mono(pathOf(p))),
    ),
    h("td", { class: "num" }, p.amount ?? "—"),
    h("td", {}, p.payTo ? h("span", { title: p.payTo }, mono(short(p.payTo))) : h("span", { class: "muted" }, "—")),
    h("td", {}, p.status === null ? h("span", { class: "muted" }, "—") : mono(String(p.status))),
    h(
      "td",
      {},
      statusBadge(p.state),
      p.attention ? h("span", { class: "pill pill-bad", title: p.attention }, "needs a look") : null,
    ),
    h(
      "td",
      {},
      p.transaction
        ? h("span", { title: p.transaction }, mono(short(p.transaction)))
        : h("span", { class: "muted" }, "—"),
    ),
    h("td", {}, settlementText(p.settlement)),
  );
}

/** The origin filter, as the URL's query set it. */
function filterForm() {
  const origin = h("input", {
    name: "origin",
    type: "search",
    placeholder: "Origin, e.g. https://api.example.com",
    value: new URLSearchParams(location.search).get("origin") ?? "",
    list: "origins",
    "aria-label": "Origin",
  });
  const origins = h("datalist", { id: "origins" });
  const form = h(
    "form",
    { class: "filters", role: "search" },
    h("label", {}, "Origin ", origin),
    origins,
    h("button", { type: "submit" }, "Filter"),
  );
  const filters = () => {
    const q = new URLSearchParams();
    if (origin.value.trim()) q.set("origin", origin.value.trim());
    return q;
  };
  return { form, origins, filters };
}

/**
 * What loads the purchases the filter asks for: `load()` draws the first page again (as many
 * rows as are shown, up to 100), `load(true)` appends the next one. The newest load wins.
 * @param {{ body: HTMLElement, info: HTMLElement, more: HTMLElement, origins: HTMLElement, filters: () => URLSearchParams }} view
 */
function loader({ body, info, more, origins, filters }) {
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
      res = await getPurchases(q);
    } catch (e) {
      if (turn === loads) fill(info, notice("error", failure(e).message));
      return;
    }
    if (turn !== loads) return;
    fill(info);
    if (!append) fill(body);
    for (const p of res.items ?? []) {
      body.append(row(p));
      if (p.origin && !known.has(p.origin)) {
        known.add(p.origin);
        origins.append(h("option", { value: p.origin }));
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
            { colspan: COLUMNS.length, class: "empty-cell" },
            filters().toString()
              ? "No purchase from this origin."
              : "No x402 resource has been bought with paid_fetch yet.",
          ),
        ),
      );
  };
}

/**
 * /purchases?origin=
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const { form, origins, filters } = filterForm();
  const body = h("tbody", {});
  const table = h(
    "table",
    { class: "table purchases-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        COLUMNS.map((t) => h("th", { scope: "col", class: t === "USDC" ? "num" : null }, t)),
      ),
    ),
    body,
  );
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Show older");
  const info = h("div", {});
  main.append(
    pageHead(
      "Purchases",
      "The x402 resources the agent bought with paid_fetch, newest first. URLs show no query values; requests' headers and bodies are never shown.",
    ),
    form,
    info,
    h("div", { class: "table-wrap card" }, table),
    h("p", {}, more),
  );
  const load = loader({ body, info, more, origins, filters });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = filters().toString();
    history.replaceState(null, "", `/purchases${q ? `?${q}` : ""}`);
    load();
  });
  more.addEventListener("click", () => load(true));
  fill(body, h("tr", {}, h("td", { colspan: COLUMNS.length }, loading("Loading…"))));
  await load();
  return on("purchases", () => load());
}
