// @ts-check
// One tool call's transcript as a sequence diagram in SVG: the lifelines of sequence-arrows.js
// and, for each transcript entry, its arrows (between the two it passed between, or from the
// server's lifeline to itself), labelled with the step, the time since the call started, its
// HTTP duration and status. Selecting an arrow shows that entry's (already redacted) record
// via `onSelect(index)`.
import { s } from "./dom.js";
import { arrowsOf, LIFELINES } from "./sequence-arrows.js";

/** @typedef {import("./wire.js").TranscriptEntry} TranscriptEntry */
/** @typedef {import("./sequence-arrows.js").Arrow} Arrow */

/**
 * An arrow in its row: the entry it is drawn from and that entry's index.
 * @typedef {Arrow & { index: number, entry: TranscriptEntry }} Row
 */

/**
 * Where things go.
 * @typedef {object} Layout
 * @property {number} W the diagram's width
 * @property {number} H its height
 * @property {(i: number) => number} X the x of lifeline i
 * @property {number} headH the height above the first row (the lifelines' heads)
 * @property {number} headW the width of a lifeline's head
 * @property {number} rowH the height of a row
 * @property {Row[]} rows one per arrow, top to bottom
 * @property {number} t0 when the call started (ms; NaN when unknown)
 */

/** @param {number} ms */
function fmtMs(ms) {
  if (!Number.isFinite(ms)) return "";
  return ms < 10_000 ? `+${Math.round(ms)} ms` : `+${(ms / 1000).toFixed(1)} s`;
}

/**
 * @param {unknown} text
 * @param {number} max
 */
function clip(text, max) {
  const t = String(text ?? "");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/**
 * @param {TranscriptEntry[]} entries
 * @param {number} width
 * @returns {Layout}
 */
function layout(entries, width) {
  const W = Math.max(720, Math.round(width));
  const gutter = 84;
  const colW = (W - gutter) / LIFELINES.length;
  /** The x of lifeline i. */
  const X = (/** @type {number} */ i) => gutter + colW * (i + 0.5);
  const headH = 56;
  const headW = Math.min(150, colW - 20);
  const rowH = 50;
  const rows = entries.flatMap((e, i) => arrowsOf(e).map((a) => ({ ...a, index: i, entry: e })));
  const H = headH + rows.length * rowH + 24;
  const t0 = Date.parse(entries[0]?.t ?? "");
  return { W, H, X, headH, headW, rowH, rows, t0 };
}

/** The arrowheads, one per tone. */
function markers() {
  const defs = s("defs", {});
  for (const t of ["plain", "good", "bad", "warn", "info"]) {
    defs.append(
      s(
        "marker",
        {
          id: `arrow-${t}`,
          viewBox: "0 0 10 10",
          refX: 9,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: "auto-start-reverse",
          class: `mk mk-${t}`,
        },
        s("path", { d: "M0,0 L10,5 L0,10 z" }),
      ),
    );
  }
  return defs;
}

/**
 * Draws the arrow itself and its text into `g`: a loop back to the lifeline for a step of its
 * own, else a line between the two lifelines with its label (and note) centred over it.
 * @param {SVGGElement} g
 * @param {Row} r
 * @param {number} y
 * @param {Layout} l
 */
function drawArrow(g, r, y, { X }) {
  const t = r.tone ?? "plain";
  if (r.from === r.to) {
    const x = X(r.from);
    g.append(s("path", { class: "seq-line", d: `M${x},${y - 12} h34 v16 h-34`, "marker-end": `url(#arrow-${t})` }));
    g.append(s("text", { class: "seq-label", x: x + 42, y: y - 6 }, clip(r.label, 44)));
    g.append(s("text", { class: "seq-note", x: x + 42, y: y + 10 }, clip(r.note, 52)));
  } else {
    const x1 = X(r.from);
    const x2 = X(r.to);
    const mid = (x1 + x2) / 2;
    const span = Math.abs(x2 - x1);
    // A label may run a little past its two lifelines.
    const chars = Math.max(18, Math.floor((span + 40) / 7.4));
    g.append(
      s("line", {
        class: "seq-line",
        x1,
        x2: x2 + (x2 > x1 ? -2 : 2),
        y1: y,
        y2: y,
        "marker-end": `url(#arrow-${t})`,
      }),
    );
    g.append(s("text", { class: "seq-label", x: mid, y: y - 8, "text-anchor": "middle" }, clip(r.label, chars)));
    if (r.note)
      g.append(s("text", { class: "seq-note", x: mid, y: y + 15, "text-anchor": "middle" }, clip(r.note, chars)));
  }
}

/**
 * Row k as a focusable group: its hit area, the time since the call started and the HTTP
 * duration, the arrow, a title; clicking it (or Enter, or Space) calls onSelect(its entry's index).
 * @param {Row} r
 * @param {number} k
 * @param {Layout} l
 * @param {((index: number) => void) | undefined} onSelect
 */
function arrowGroup(r, k, l, onSelect) {
  const { W, headH, rowH, t0 } = l;
  const y = headH + k * rowH + 30;
  const t = r.tone ?? "plain";
  const g = s("g", {
    class: ["arrow", `tone-${t}`],
    "data-entry": r.index,
    "data-step": r.entry.step,
    tabindex: 0,
    role: "button",
    "aria-label": `${r.entry.step}: ${r.label}`,
  });
  g.append(s("rect", { class: "row-hit", x: 0, y: y - 30, width: W, height: rowH }));
  const at = Date.parse(r.entry.t);
  g.append(
    s("text", { class: "seq-time", x: 6, y: y - 8 }, Number.isFinite(at) && Number.isFinite(t0) ? fmtMs(at - t0) : ""),
  );
  if (Number.isFinite(r.durationMs)) g.append(s("text", { class: "seq-dur", x: 6, y: y + 8 }, `${r.durationMs} ms`));
  drawArrow(g, r, y, l);
  g.append(s("title", {}, `${r.entry.step} · ${r.label}${r.note ? ` · ${r.note}` : ""}`));
  const pick = () => onSelect?.(r.index);
  g.addEventListener("click", pick);
  g.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      pick();
    }
  });
  return g;
}

/**
 * The diagram. Returns {svg, select(index)}; each arrow group carries data-entry (its index in
 * `entries`) and is focusable; clicking it (or Enter) calls onSelect(index).
 * @param {TranscriptEntry[]} entries
 * @param {((index: number) => void) | undefined} onSelect
 * @returns {{ svg: SVGSVGElement, select(index: number): void }}
 */
export function sequenceDiagram(entries, onSelect, width = 980) {
  const l = layout(entries, width);
  const { W, H, X, headH, headW } = l;
  const svg = s("svg", {
    class: "sequence",
    viewBox: `0 0 ${W} ${H}`,
    role: "group",
    "aria-label": `Sequence of ${entries.length} transcript entries`,
  });
  svg.append(markers());
  LIFELINES.forEach((name, i) => {
    svg.append(
      s("line", { class: "lifeline", x1: X(i), x2: X(i), y1: headH - 10, y2: H - 8, "data-lifeline": name }),
      s("rect", { class: "lifeline-head", x: X(i) - headW / 2, y: 8, width: headW, height: 34, rx: 6 }),
      s("text", { class: "lifeline-name", x: X(i), y: 30, "text-anchor": "middle" }, name),
    );
  });
  /** @type {SVGGElement[]} */
  const groups = [];
  l.rows.forEach((r, k) => {
    const g = arrowGroup(r, k, l, onSelect);
    groups.push(g);
    svg.append(g);
  });
  return {
    svg,
    /** @param {number} index */
    select(index) {
      for (const g of groups) g.classList.toggle("selected", Number(g.dataset.entry) === index);
    },
  };
}
