// DOM helpers: elements built with createElement (never innerHTML, so journal text can never
// become markup), SVG elements, times, and a pretty JSON view. No inline styles: the console's
// CSP (style-src 'self') blocks style attributes, so looks come from classes in style.css.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "text") el.textContent = String(v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style") throw new Error("inline styles are blocked by the console's CSP; use a class");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** An HTML element: h("a", {href, class}, "text", child…). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// ---- Times -------------------------------------------------------------------------------

const dateTime = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

export function when(iso) {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? dateTime.format(t) : "—";
}

export function clock(iso) {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? timeOnly.format(t) : "—";
}

/** "12 s ago", "3 min ago", "2 h ago", else the date. */
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

/** A time element that shows "3 min ago" and the exact time on hover. */
export function timeEl(iso, cls) {
  return h("time", { datetime: iso, title: when(iso), class: ["rel", cls] }, ago(iso));
}

/** "4:32" left until an ISO time, or null once it has passed. */
export function countdown(iso, now = Date.now()) {
  const left = Math.floor((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(left) || left <= 0) return null;
  const hh = Math.floor(left / 3600);
  const mm = Math.floor((left % 3600) / 60);
  const ss = String(left % 60).padStart(2, "0");
  return hh > 0 ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

// ---- Identifiers and JSON ------------------------------------------------------------------

/** A long id or address in monospace, whole (people copy these), breaking anywhere. */
export function mono(text, cls) {
  return h("code", { class: ["mono", cls] }, text ?? "—");
}

/** Pretty JSON with keys, strings, numbers and literals coloured by class. */
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

/** A status pill coloured by what the status means for the money. */
export function statusBadge(status) {
  const tone =
    {
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
    }[status] ?? "info";
  return h("span", { class: ["pill", `pill-${tone}`], "data-status": status }, String(status ?? "—").replace(/_/g, " "));
}

/** A page heading with an optional line under it. */
export function pageHead(title, sub, ...extra) {
  return h("div", { class: "page-head" }, h("div", {}, h("h1", {}, title), sub ? h("p", { class: "sub" }, sub) : null), ...extra);
}

export function notice(kind, ...children) {
  return h("div", { class: ["notice", `notice-${kind}`], role: kind === "error" ? "alert" : "status" }, ...children);
}

export function loading(what) {
  return h("p", { class: "loading" }, what);
}
