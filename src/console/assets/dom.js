// @ts-check
// DOM helpers: elements built with createElement (never innerHTML, so journal text can never
// become markup), SVG elements, times, and a pretty JSON view. No inline styles: the console's
// CSP (style-src 'self') blocks style attributes, so looks come from classes in the stylesheets index.html links.

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An attribute's value. null, undefined and false leave it out and true sets it empty; `class`
 * may be a list (its empty entries dropped), `dataset` an object, `on<event>` a listener.
 * @typedef {string | number | boolean | null | undefined | ReadonlyArray<string | null | undefined | false>
 *   | Record<string, string> | EventListener} AttrValue
 */

/** @typedef {Record<string, AttrValue>} Attrs */

/**
 * One thing h() and s() append: a node, or text made of anything else; null, undefined and
 * false are left out.
 * @typedef {Node | string | number | bigint | boolean | null | undefined} Leaf
 */

/**
 * What h() and s() append: leaves, in lists. append() flattens lists of any depth; the type
 * names three, as a JSDoc type cannot refer to itself.
 * @typedef {Leaf | readonly (Leaf | readonly (Leaf | readonly Leaf[])[])[]} Child
 */

/**
 * @param {HTMLElement | SVGElement} el
 * @param {Attrs | null | undefined} attrs
 */
function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : String(v));
    else if (k === "text") el.textContent = String(v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style") throw new Error("inline styles are blocked by the console's CSP; use a class");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

/**
 * @param {Element} el
 * @param {ReadonlyArray<Child>} children
 */
function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * An HTML element: h("a", {href, class}, "text", child…).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} attrs
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/**
 * An SVG element.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} attrs
 * @param {...Child} children
 * @returns {SVGElementTagNameMap[K]}
 */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/**
 * @template {Element} E
 * @param {E} el
 * @returns {E}
 */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/**
 * Replaces an element's children.
 * @template {Element} E
 * @param {E} el
 * @param {...Child} children
 * @returns {E}
 */
export function fill(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// ---- Times -------------------------------------------------------------------------------

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

/**
 * @param {string} iso
 * @returns {string}
 */
export function when(iso) {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? dateTime.format(t) : "—";
}

/**
 * @param {string} iso
 * @returns {string}
 */
export function clock(iso) {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? timeOnly.format(t) : "—";
}

/**
 * "12 s ago", "3 min ago", "2 h ago", else the date.
 * @param {string} iso
 * @returns {string}
 */
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return "—";
  const s = Math.round((now - t) / 1000);
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return when(iso);
}

/**
 * A time element that shows "3 min ago" and the exact time on hover.
 * @param {string} iso
 * @param {string} [cls]
 */
export function timeEl(iso, cls) {
  return h("time", { datetime: iso, title: when(iso), class: ["rel", cls] }, ago(iso));
}

/**
 * "4:32" left until an ISO time, or null once it has passed.
 * @param {string} iso
 * @returns {string | null}
 */
export function countdown(iso, now = Date.now()) {
  const left = Math.floor((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(left) || left <= 0) return null;
  const hh = Math.floor(left / 3600);
  const mm = Math.floor((left % 3600) / 60);
  const ss = String(left % 60).padStart(2, "0");
  return hh > 0 ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

// ---- Identifiers and JSON ------------------------------------------------------------------

/**
 * A long id or address in monospace, whole (people copy these), breaking anywhere.
 * @param {string | null | undefined} text
 * @param {string} [cls]
 */
export function mono(text, cls) {
  return h("code", { class: ["mono", cls] }, text ?? "—");
}

/**
 * Pretty JSON with keys, strings, numbers and literals coloured by class.
 * @param {unknown} value
 * @param {string} [cls]
 */
export function jsonView(value, cls) {
  const text = value === undefined ? "(none)" : JSON.stringify(value, null, 2);
  const pre = h("pre", { class: ["json", cls] });
  const token = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
  let last = 0;
  for (let m = token.exec(text); m; m = token.exec(text)) {
    if (m.index > last) pre.append(text.slice(last, m.index));
    if (m[1] && m[2]) pre.append(h("span", { class: "j-key" }, m[1]), m[2]);
    else if (m[1]) pre.append(h("span", { class: "j-str" }, m[1]));
    else if (m[3]) pre.append(h("span", { class: "j-num" }, m[3]));
    else pre.append(h("span", { class: "j-lit" }, m[4]));
    last = token.lastIndex;
  }
  if (last < text.length) pre.append(text.slice(last));
  return pre;
}

/**
 * What each status means for the money, as the pill's colour; any other status is "info".
 * @type {Readonly<Record<string, "good" | "neutral" | "bad" | "warn" | "info">>}
 */
const TONES = {
  completed: "good",
  approved: "good",
  used: "good",
  verified: "good",
  refunded: "neutral",
  declined: "neutral",
  expired: "neutral",
  failed: "bad",
  refused: "bad",
  attention: "bad",
  mismatch: "bad",
  awaiting_approval: "warn",
  pending: "info",
  landed: "good",
  on_chain: "good",
  absent: "bad",
  not_landed: "neutral",
  never: "neutral",
  spent: "neutral",
  released: "neutral",
};

/**
 * A status pill coloured by what the status means for the money.
 * @param {string} status
 */
export function statusBadge(status) {
  const tone = TONES[status] ?? "info";
  return h(
    "span",
    { class: ["pill", `pill-${tone}`], "data-status": status },
    String(status ?? "—").replace(/_/g, " "),
  );
}

/**
 * A page heading with an optional line under it.
 * @param {Child} title
 * @param {Child} [sub]
 * @param {...Child} extra
 */
export function pageHead(title, sub, ...extra) {
  return h(
    "div",
    { class: "page-head" },
    h("div", {}, h("h1", {}, title), sub ? h("p", { class: "sub" }, sub) : null),
    ...extra,
  );
}

/**
 * @param {"error" | "neutral" | "good"} kind
 * @param {...Child} children
 */
export function notice(kind, ...children) {
  return h("div", { class: ["notice", `notice-${kind}`], role: kind === "error" ? "alert" : "status" }, ...children);
}

/** @param {string} what */
export function loading(what) {
  return h("p", { class: "loading" }, what);
}
