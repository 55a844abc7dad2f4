// @ts-check
// Spending: how close the agent is to each limit, at a glance. The rolling 24 h and the total
// as bars against their caps (amber past 80 %, red at the cap), money reserved for payments in
// flight drawn apart, spend per action beside its per-call cap and, beside it, per origin for the
// x402 resources bought with paid_fetch, per network paid on (the caps count every network's
// USDC together), the last 14 days as columns, and the refunds credited back. Follows the
// `executions`, `purchases` and `approvals` events.
import { failure, getSpending, on } from "../api.js";
import { actionBars, capBar, dayColumns, fit } from "../charts.js";
import { fill, h, loading, notice, pageHead } from "../dom.js";
import { atomic, level, minus, usdc } from "../money.js";

/** @typedef {import("../wire.js").Limits} Limits */
/** @typedef {import("../wire.js").Spending} Spending */

/**
 * @param {string} label
 * @param {string} value
 * @param {string | null} note
 * @param {string | null} [tone] a level past "ok", which colours it
 */
function stat(label, value, note, tone) {
  return h(
    "div",
    { class: ["stat", tone ? `stat-${tone}` : null] },
    h("div", { class: "stat-label" }, label),
    h("div", { class: "stat-value" }, value),
    note ? h("div", { class: "stat-note" }, note) : null,
  );
}

/**
 * @param {Limits} limits
 * @param {string[] | undefined} allowOrigins
 */
function limitsList(limits, allowOrigins) {
  const per = Object.entries(limits.perAction ?? {});
  const items = [
    ["Per call", usdc(limits.maxPerCall)],
    ["Per rolling 24 h", usdc(limits.maxPerDay)],
    ["In total", limits.maxTotal ? usdc(limits.maxTotal) : "no cap"],
    ["A person approves above", usdc(limits.approvalAbove)],
    [
      "Actions allowed",
      Array.isArray(limits.allowActions) && limits.allowActions.length && !limits.allowActions.includes("*")
        ? limits.allowActions.join(", ")
        : "every action of the service",
    ],
    ...per.map(([a, v]) => [`Per call, ${a}`, usdc(v)]),
    [
      "Origins paid_fetch may pay",
      !allowOrigins?.length ? "none" : allowOrigins.map((o) => (o === "*" ? "any public origin" : o)).join(", "),
    ],
  ];
  return h(
    "dl",
    { class: "facts" },
    items.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

/**
 * The four figures at a glance: spent in 24 h and in total (coloured past "ok" against their
 * caps), reserved now, and the refunds credited.
 * @param {Spending} sp
 */
function stats(sp) {
  const limits = sp.limits;
  const committed24 = sp.committedLast24h ?? sp.spentLast24h;
  const reserved = sp.reserved ?? "0";
  const reservedUnits = atomic(reserved) ?? 0n;
  const dayLevel = limits ? level(committed24, limits.maxPerDay) : "ok";
  const totalLevel = limits?.maxTotal ? level(sp.spentTotal, limits.maxTotal) : "ok";
  return h(
    "div",
    { class: "stats" },
    stat(
      "Spent in the last 24 h",
      usdc(sp.spentLast24h),
      limits ? `${usdc(sp.remainingToday)} left today` : null,
      dayLevel !== "ok" ? dayLevel : null,
    ),
    stat("Reserved now", usdc(reserved), reservedUnits > 0n ? "held for payments in flight" : "nothing in flight"),
    stat(
      "Spent in total",
      usdc(sp.spentTotal),
      sp.remainingTotal ? `${usdc(sp.remainingTotal)} left in total` : "no total cap",
      totalLevel !== "ok" ? totalLevel : null,
    ),
    stat("Refunds credited", usdc(sp.refundsCredited), "seen on chain, counted back to the caps"),
  );
}

/**
 * The rolling 24 h and the total as bars against their caps.
 * @param {Spending} sp
 */
function capsCard(sp) {
  const limits = sp.limits;
  return h(
    "section",
    { class: "card caps" },
    h("h2", {}, "Against the caps"),
    h(
      "p",
      { class: "muted" },
      "Solid: paid. Lighter: reserved for payments in flight. The black line is the cap; the bar turns amber past 80 % of it and red at it.",
    ),
    fit(
      (width) =>
        capBar({
          label: "Rolling 24 hours",
          spent: sp.spentLast24h,
          reserved: reservedOf(sp),
          cap: limits?.maxPerDay ?? null,
          width,
        }),
      "cap-day",
    ),
    fit((width) => capBar({ label: "Total", spent: sp.spentTotal, cap: limits?.maxTotal ?? null, width }), "cap-total"),
  );
}

/**
 * Spend per action, the most spent in total first, beside its per-call cap.
 * @param {Spending} sp
 */
function perAction(sp) {
  const byAction = (sp.byAction ?? []).slice().sort((a, b) => {
    const d = (atomic(b.spentTotal) ?? 0n) - (atomic(a.spentTotal) ?? 0n);
    return d > 0n ? 1 : d < 0n ? -1 : a.action.localeCompare(b.action);
  });
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "Per action"),
    byAction.length
      ? [
          h("p", { class: "muted" }, "Dark: the last 24 h; light: in total. The dashed tick is the per-call cap."),
          fit((width) => actionBars(byAction, width)),
        ]
      : h("p", { class: "muted" }, "Nothing bought yet."),
  );
}

/**
 * Spend per origin (paid_fetch's purchases), the most spent in total first, beside its per-call cap.
 * @param {Spending} sp
 */
function perOrigin(sp) {
  const rows = (sp.byOrigin ?? [])
    .map((o) => ({ ...o, action: o.origin, label: o.origin.replace(/^https:\/\//, ""), refunded: "0" }))
    .sort((a, b) => {
      const d = (atomic(b.spentTotal) ?? 0n) - (atomic(a.spentTotal) ?? 0n);
      return d > 0n ? 1 : d < 0n ? -1 : a.origin.localeCompare(b.origin);
    });
  return h(
    "section",
    { class: "card per-origin" },
    h("h2", {}, "Per origin (paid_fetch)"),
    rows.length
      ? [
          h("p", { class: "muted" }, "Dark: the last 24 h; light: in total. The dashed tick is the per-call cap."),
          fit((width) => actionBars(rows, width, { label: "Spend per origin", cls: "originbars" })),
        ]
      : h("p", { class: "muted" }, "No x402 resource bought yet."),
  );
}

/**
 * Spend per network paid on: the caps are in USDC whatever the chain, this says where it went.
 * @param {Spending} sp
 */
function perNetwork(sp) {
  const rows = sp.byNetwork ?? [];
  return h(
    "section",
    { class: "card per-network" },
    h("h2", {}, "Per network"),
    rows.length
      ? h(
          "dl",
          { class: "facts" },
          rows.flatMap((n) => [
            h("dt", { title: n.network }, n.name),
            h(
              "dd",
              {},
              `${usdc(n.spentLast24h)} in the last 24 h, ${usdc(n.spentTotal)} in total (${n.count} purchase${n.count === 1 ? "" : "s"})`,
            ),
          ]),
        )
      : h("p", { class: "muted" }, "Nothing paid yet."),
  );
}

/**
 * @param {HTMLElement} box
 * @param {Spending} sp
 */
function render(box, sp) {
  const limits = sp.limits;
  fill(
    box,
    sp.configIssues?.length
      ? notice(
          "error",
          "The configuration has problems, so no payment can be made: ",
          sp.configIssues.map((i) => `${i.key}: ${i.message}`).join("; "),
        )
      : null,
    !limits ? notice("neutral", "No limits are configured here: the console shows what the journal spent.") : null,
    stats(sp),
    capsCard(sp),
    h("div", { class: "two-col" }, perAction(sp), perOrigin(sp)),
    perNetwork(sp),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Limits"),
      limits ? limitsList(limits, sp.allowOrigins) : h("p", { class: "muted" }, "None configured."),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "The last 14 days"),
      Array.isArray(sp.days) && sp.days.length
        ? fit((width) => dayColumns(sp.days, limits?.maxPerDay ?? null, width))
        : h("p", { class: "muted" }, "No daily figures."),
    ),
  );
}

/**
 * The part of the 24 h reservation, as a decimal: committed minus spent.
 * @param {Spending} sp
 */
function reservedOf(sp) {
  return minus(sp.committedLast24h, sp.spentLast24h);
}

/** @param {HTMLElement} main */
export async function mount(main) {
  const box = h("div", { class: "spending" }, loading("Loading the spending…"));
  main.append(pageHead("Spending", "What the agent spent against the limits you set."), box);
  async function load() {
    try {
      render(box, await getSpending());
    } catch (e) {
      fill(box, notice("error", failure(e).message));
    }
  }
  await load();
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(load, 250);
  };
  const offs = [on("executions", soon), on("purchases", soon), on("approvals", soon)];
  return () => {
    clearTimeout(timer);
    offs.forEach((off) => off());
  };
}
