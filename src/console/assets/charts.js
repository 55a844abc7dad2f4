// @ts-check
// Charts in SVG, drawn from decimal strings: a spend-against-cap bar (big on the spending page,
// small on an approval), per-action bars with the per-call cap, and a column chart of days.
// Sizes come from ratios of BigInt atomic units (money.js); colours from classes in approvals-charts.css:
// ok below 80 % of a cap, warn past it, over at the cap.
import { h, s } from "./dom.js";
import { atomic, decimal, level, maxUnits, percent, ratio, remaining, sum } from "./money.js";

/** @typedef {import("./money.js").DecimalText} DecimalText */
/** @typedef {import("./wire.js").ActionSpend} ActionSpend */

/**
 * A box that draws `draw(width)` at its own pixel width (so SVG text keeps its size) and draws
 * again when that width changes.
 * @param {(width: number) => Element} draw
 * @param {string} [cls]
 */
export function fit(draw, cls) {
  const box = h("div", { class: ["fit", cls] });
  let drawn = 0;
  const redraw = () => {
    const w = Math.max(280, Math.floor(box.clientWidth));
    if (!box.clientWidth || Math.abs(w - drawn) < 8) return;
    drawn = w;
    box.replaceChildren(draw(w));
  };
  new ResizeObserver(redraw).observe(box);
  // A first drawing before layout (and for a box that is never laid out).
  box.append(draw(760));
  return box;
}

/**
 * Spend (and money reserved for payments in flight) against a cap. The scale ends at the cap,
 * or at the spend when it is above the cap (a cap lowered after the spend), so the cap line is
 * always in view. Without a cap, the bar fills by spend alone and says there is none.
 * @param {object} o
 * @param {string} o.label
 * @param {DecimalText} o.spent
 * @param {DecimalText} [o.reserved] money held for payments in flight, drawn after the spend
 * @param {DecimalText} o.cap none when null
 * @param {number} [o.width]
 * @param {boolean} [o.small]
 * @param {string} [o.title] the label for assistive technology, when not the default
 */
export function capBar({ label, spent, reserved = "0", cap, width = 640, small = false, title }) {
  const committed = sum(spent, reserved);
  const hasCap = typeof cap === "string" && atomic(cap) !== null;
  const lvl = hasCap ? level(committed, cap) : "ok";
  const H = small ? 10 : 22;
  const top = small ? 0 : 26;
  const total = small ? H : top + H + 22;
  const scale = hasCap ? maxUnits(cap, committed) : maxUnits(committed);
  const x = (/** @type {DecimalText} */ v) =>
    scale === 0n ? 0 : Math.min(width, width * ratio(atomic(v) ?? 0n, scale));
  const spentW = x(spent);
  const reservedW = Math.max(0, x(committed) - spentW);
  const svg = s("svg", {
    class: ["capbar", small ? "capbar-small" : null, `level-${lvl}`],
    viewBox: `0 0 ${width} ${total}`,
    width: small ? width : undefined,
    role: "img",
    "aria-label": title ?? `${label}: ${committed} USDC${hasCap ? ` of ${cap} USDC` : ""}`,
    "data-spent": spent,
    "data-reserved": reserved,
    "data-cap": hasCap ? cap : "",
    "data-level": lvl,
  });
  if (!small) {
    svg.append(
      s("text", { x: 0, y: 16, class: "cb-label" }, label),
      s(
        "text",
        { x: width, y: 16, class: "cb-value", "text-anchor": "end" },
        hasCap ? `${committed} of ${cap} USDC · ${percent(committed, cap)}` : `${committed} USDC · no cap set`,
      ),
    );
  }
  svg.append(
    s("rect", {
      class: ["cb-track", hasCap ? null : "cb-track-nocap"],
      x: 0.5,
      y: top + 0.5,
      width: width - 1,
      height: H - 1,
      rx: small ? 3 : 4,
    }),
  );
  if (hasCap)
    svg.append(s("rect", { class: "cb-spent", x: 0, y: top, width: spentW.toFixed(2), height: H, rx: small ? 3 : 4 }));
  if (hasCap && reservedW > 0.5)
    svg.append(
      s("rect", { class: "cb-reserved", x: spentW.toFixed(2), y: top, width: reservedW.toFixed(2), height: H }),
    );
  if (hasCap) {
    const cx = Math.max(1, x(cap) - 1);
    svg.append(
      s("line", { class: "cb-cap", x1: cx, x2: cx, y1: top - (small ? 0 : 4), y2: top + H + (small ? 0 : 4) }),
    );
    if (!small) {
      const left = remaining(cap, committed);
      svg.append(
        s("text", { x: 0, y: top + H + 17, class: "cb-note" }, `${left} USDC left before the cap`),
        s("text", { x: cx, y: top + H + 17, class: "cb-cap-label", "text-anchor": "end" }, `cap ${cap} USDC`),
      );
    }
  } else if (!small) {
    svg.append(
      s(
        "text",
        { x: 0, y: top + H + 17, class: "cb-note" },
        "No cap is set here: only the per-call and 24 h limits bound the spend.",
      ),
    );
  }
  return svg;
}

/**
 * One row per action (or per origin, for paid_fetch's purchases): its total spend (and the part
 * in the last 24 h) as bars, with the per-call cap drawn as a tick on the same scale and named.
 * @param {Array<ActionSpend & { label?: string }>} rows `label`, when given, is shown instead of the action
 * @param {number} [width]
 * @param {{ label?: string, cls?: string }} [o] what assistive technology is told, and an extra class
 */
export function actionBars(rows, width = 760, o = {}) {
  const labelW = Math.min(190, Math.round(width * 0.3));
  const barW = Math.max(40, width - labelW - 140);
  width = labelW + barW + 140;
  const rowH = 46;
  const scale = maxUnits(...rows.flatMap((r) => [r.spentTotal, r.perCallCap]));
  const x = (/** @type {DecimalText} */ v) =>
    scale === 0n ? 0 : barW * Math.min(1, ratio(atomic(v ?? "0") ?? 0n, scale));
  const svg = s("svg", {
    class: ["actionbars", o.cls],
    viewBox: `0 0 ${width} ${Math.max(1, rows.length) * rowH + 8}`,
    role: "img",
    "aria-label": o.label ?? "Spend per action",
  });
  // Monospace at 13 px: what fits before the bar, the rest cut (the whole name in the row's title).
  const fits = Math.max(6, Math.floor(labelW / 8) - 1);
  rows.forEach((r, i) => {
    const y = i * rowH + 6;
    const g = s("g", { class: "ab-row", "data-action": r.action });
    const label = r.label ?? r.action;
    g.append(
      s("title", {}, r.action),
      s("text", { x: 0, y: y + 15, class: "ab-label" }, label.length > fits ? `${label.slice(0, fits - 1)}…` : label),
      s(
        "text",
        { x: 0, y: y + 32, class: "ab-sub" },
        `${r.count} call${r.count === 1 ? "" : "s"}${atomic(r.refunded ?? "0") ? ` · ${r.refunded} refunded` : ""}`,
      ),
      s("rect", { x: labelW, y: y + 4, width: barW, height: 24, class: "ab-track", rx: 3 }),
      s("rect", { x: labelW, y: y + 4, width: x(r.spentTotal).toFixed(2), height: 24, class: "ab-total", rx: 3 }),
      s("rect", { x: labelW, y: y + 4, width: x(r.spentLast24h).toFixed(2), height: 24, class: "ab-day", rx: 3 }),
      s("text", { x: labelW + barW + 10, y: y + 15, class: "ab-value" }, `${r.spentTotal} USDC`),
      s("text", { x: labelW + barW + 10, y: y + 31, class: "ab-sub" }, `${r.spentLast24h} in 24 h`),
    );
    if (r.perCallCap) {
      const cx = labelW + x(r.perCallCap);
      g.append(
        s("line", { x1: cx, x2: cx, y1: y, y2: y + 32, class: "ab-cap" }),
        s(
          "text",
          { x: Math.min(cx, labelW + barW) - 4, y: y + 41, class: "ab-cap-label", "text-anchor": "end" },
          `per call ≤ ${r.perCallCap}`,
        ),
      );
    }
    svg.append(g);
  });
  return svg;
}

/**
 * A "nice" axis top at or above v (atomic units): 1, 2 or 5 × 10^k USDC fractions.
 * @param {bigint} v
 * @returns {bigint}
 */
function niceTop(v) {
  if (v <= 0n) return 1_000_000n;
  let step = 10n;
  for (;;) {
    for (const m of [1n, 2n, 5n]) if (m * step >= v) return m * step;
    step *= 10n;
  }
}

/**
 * Columns of spend per day (oldest left), with gridlines and the daily cap when it is in range.
 * @param {Array<{ day: string, spent: string }>} days
 * @param {DecimalText} dailyCap
 */
export function dayColumns(days, dailyCap, width = 760) {
  const H = 200;
  const left = 56;
  const bottom = 26;
  const plotW = width - left - 8;
  const top = niceTop(maxUnits(...days.map((d) => d.spent)));
  const capUnits = atomic(dailyCap ?? "");
  const showCap = capUnits !== null && capUnits <= top * 2n;
  const scale = showCap && capUnits > top ? capUnits : top;
  const y = (/** @type {bigint} */ units) => 10 + (H - bottom - 10) * (1 - ratio(units, scale));
  const svg = s("svg", {
    class: "days",
    viewBox: `0 0 ${width} ${H}`,
    role: "img",
    "aria-label": "Spend per day, last 14 days",
  });
  for (let i = 0; i <= 5; i++) {
    const v = (scale * BigInt(i)) / 5n;
    svg.append(
      s("line", { x1: left, x2: width - 8, y1: y(v), y2: y(v), class: "grid" }),
      s("text", { x: left - 6, y: y(v) + 4, class: "axis", "text-anchor": "end" }, decimal(v)),
    );
  }
  const slot = plotW / Math.max(1, days.length);
  days.forEach((d, i) => {
    const units = atomic(d.spent) ?? 0n;
    const cx = left + slot * i + slot / 2;
    const colW = Math.max(4, slot * 0.62);
    const y0 = y(0n);
    const y1 = y(units);
    const g = s("g", { class: "day", "data-day": d.day, "data-spent": d.spent });
    g.append(s("title", {}, `${d.day}: ${d.spent} USDC`));
    if (units > 0n) {
      g.append(s("rect", { x: cx - colW / 2, y: y1, width: colW, height: Math.max(1, y0 - y1), class: "col", rx: 2 }));
      g.append(s("text", { x: cx, y: y1 - 4, class: "col-value", "text-anchor": "middle" }, d.spent));
    }
    g.append(s("text", { x: cx, y: H - 8, class: "axis", "text-anchor": "middle" }, d.day.slice(5)));
    svg.append(g);
  });
  if (showCap) {
    svg.append(
      s("line", { x1: left, x2: width - 8, y1: y(capUnits), y2: y(capUnits), class: "cap-line" }),
      s("text", { x: width - 10, y: y(capUnits) - 5, class: "cap-text", "text-anchor": "end" }, `24 h cap ${dailyCap}`),
    );
  }
  return svg;
}
