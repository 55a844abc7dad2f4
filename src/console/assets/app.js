// @ts-check
// The console's shell: routes on location.pathname (history.pushState for in-app links), keeps
// the nav, the pending-approvals count, the freeze banner and the live indicator current, and
// mounts one page at a time. Each page module exports `mount(main, params, ctx)` returning an optional cleanup.
import { ApiError, connectEvents, getFreeze, getSession, on, onState } from "./api.js";
import { ago, clear, fill, h, mono, notice, pageHead, timeEl, when } from "./dom.js";
import * as approvals from "./pages/approvals.js";
import * as audit from "./pages/audit.js";
import * as execution from "./pages/execution.js";
import * as passkeys from "./pages/passkeys.js";
import * as executions from "./pages/executions.js";
import * as purchase from "./pages/purchase.js";
import * as purchases from "./pages/purchases.js";
import * as receipt from "./pages/receipt.js";
import * as spending from "./pages/spending.js";
import * as transcripts from "./pages/transcripts.js";

/** @typedef {import("./wire.js").Freeze} Freeze */

/**
 * A page drawing into its view, with the route's captured path segments (decoded); it
 * answers what to call when the person leaves it, if anything.
 * @typedef {(view: HTMLElement, params: string[]) => Promise<(() => unknown) | undefined>} Mount
 */

/**
 * Pattern, nav key (data-nav), page. A pattern with a group always captures it, so `[id = ""]`
 * only tells the checker so.
 * @type {Array<[RegExp, string, Mount]>}
 */
const ROUTES = [
  [/^\/approvals\/?$/, "approvals", (m) => approvals.mountList(m)],
  [/^\/approvals\/([^/]+)\/?$/, "approvals", (m, [id = ""]) => approvals.mountOne(m, id)],
  [/^\/executions\/?$/, "executions", (m) => executions.mountList(m)],
  [/^\/executions\/([^/]+)\/?$/, "executions", (m, [id = ""]) => execution.mountOne(m, id)],
  [/^\/purchases\/?$/, "purchases", (m) => purchases.mountList(m)],
  [/^\/purchases\/([^/]+)\/?$/, "purchases", (m, [id = ""]) => purchase.mountOne(m, id)],
  [/^\/receipts\/([^/]+)\/?$/, "purchases", (m, [id = ""]) => receipt.mountOne(m, id)],
  [/^\/spending\/?$/, "spending", (m) => spending.mount(m)],
  [/^\/transcripts\/?$/, "transcripts", (m) => transcripts.mountList(m)],
  [/^\/transcripts\/([^/]+)\/?$/, "transcripts", (m, [id = ""]) => transcripts.mountOne(m, id)],
  [/^\/audit\/?$/, "audit", (m) => audit.mount(m)],
  [/^\/passkeys\/?$/, "passkeys", (m) => passkeys.mount(m)],
];

/**
 * An element index.html always has.
 * @param {string} id
 */
const part = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const main = part("main");
/** @type {(() => unknown) | undefined} */
let cleanup;
let routed = 0;

/**
 * The first route whose pattern matches the path, with its match.
 * @param {string} path
 */
function match(path) {
  for (const [re, key, mount] of ROUTES) {
    const m = re.exec(path);
    if (m) return { m, key, mount };
  }
  return undefined;
}

/** @param {HTMLElement} m */
function notFound(m) {
  fill(
    m,
    pageHead("Not found", "The console has no page at this address."),
    h("p", {}, h("a", { href: "/approvals" }, "Go to the approvals")),
  );
}

async function route() {
  const path = location.pathname === "/" ? "/approvals" : location.pathname;
  if (location.pathname === "/") history.replaceState(null, "", "/approvals" + location.search);
  if (typeof cleanup === "function") cleanup();
  cleanup = undefined;
  // Each route draws into its own view: a page still loading when the person moves on
  // writes into a detached view, never into the next page.
  const view = document.createElement("div");
  fill(main, view);
  const turn = ++routed;
  const hit = match(path);
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.getAttribute("data-nav") === hit?.key) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!hit) return notFound(view);
  const { m, mount } = hit;
  try {
    const done = await mount(
      view,
      m.slice(1).map((p) => decodeURIComponent(p)),
    );
    if (turn === routed) cleanup = done;
    else if (typeof done === "function") done();
  } catch (e) {
    if (turn === routed) showError(e, view);
  }
}

/**
 * @param {unknown} e
 * @param {HTMLElement} [where]
 */
function showError(e, where = main) {
  if (e instanceof ApiError && e.status === 401) {
    fill(
      where,
      pageHead("Signed out"),
      notice(
        "error",
        "This browser has no console session. Open the console with ",
        h("code", {}, "paid-actions-mcp console"),
        ": it opens a fresh, one-time sign-in link.",
      ),
    );
    return;
  }
  fill(where, notice("error", e instanceof Error ? e.message : String(e)));
}

/**
 * Navigates inside the app without a reload.
 * @param {string} href
 */
export function navigate(href) {
  history.pushState(null, "", href);
  route();
  main.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

document.addEventListener("click", (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  // The console's links are HTML ones (its SVG has none).
  const a = /** @type {HTMLAnchorElement | null} */ (
    ev.target instanceof Element ? ev.target.closest("a[href]") : null
  );
  if (!a || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/api/") || url.pathname.startsWith("/assets/")) return;
  ev.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});

window.addEventListener("popstate", () => route());

// ---- Chrome: the pending count, the live indicator, the footer ------------------------------

const count = part("pending-count");
on("approvals", (data) => {
  const n = Array.isArray(data?.items) ? data.items.length : 0;
  count.textContent = String(n);
  count.hidden = n === 0;
  document.title = n > 0 ? `(${n}) paid-actions console` : "paid-actions console";
});

// A freeze holds for every server on the journal, so it shows on every page, live.
const banner = part("freeze-banner");
/** @param {Freeze | null} freeze */
function showFreeze(freeze) {
  if (!freeze) {
    banner.hidden = true;
    clear(banner);
    return;
  }
  fill(
    banner,
    h(
      "div",
      { class: "freeze-inner" },
      h("strong", {}, "Payments are frozen. "),
      "Since ",
      h("span", { class: "freeze-since" }, when(freeze.since)),
      " (",
      timeEl(freeze.since),
      "), by ",
      mono(freeze.by),
      freeze.reason ? [". Reason: ", h("q", { class: "freeze-reason" }, freeze.reason)] : ". No reason was given",
      ". No server on this journal signs a new payment until a person runs ",
      h("code", {}, "paid-actions-mcp unfreeze"),
      " at a terminal; purchases whose payment already left are still followed.",
    ),
  );
  banner.hidden = false;
}
let freezeLive = false;
on("freeze", (data) => {
  freezeLive = true;
  showFreeze(data?.freeze ?? null);
});

const live = part("live");
/** @type {Record<string, string>} */
const LIVE_TEXT = { live: "live", reconnecting: "reconnecting…", closed: "disconnected", connecting: "connecting…" };
onState((state) => {
  live.dataset.state = state;
  live.textContent = LIVE_TEXT[state] ?? state;
});

// "3 min ago" stays true while a page stays open.
setInterval(() => {
  for (const t of document.querySelectorAll("time.rel[datetime]"))
    t.textContent = ago(t.getAttribute("datetime") ?? "");
}, 10_000);

async function footer() {
  try {
    const s = await getSession();
    fill(
      part("footer"),
      h("span", {}, "Journal ", mono(s.journal)),
      s.service
        ? h("span", {}, "Service ", mono(typeof s.service === "string" ? s.service : JSON.stringify(s.service)))
        : null,
      s.version ? h("span", {}, `paid-actions-mcp ${s.version}`) : null,
    );
    return true;
  } catch (e) {
    showError(e);
    return false;
  }
}

if (await footer()) {
  // Before the event stream says it (and should the stream not come up at all).
  getFreeze().then(
    (d) => freezeLive || showFreeze(d.freeze),
    () => undefined,
  );
  connectEvents();
  route();
}
