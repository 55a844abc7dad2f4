// @ts-check
// Approvals: every payment waiting for a person, with everything needed to decide (action, full
// input, amount, payee, the quote's expiry counting down, spend afterwards against the caps),
// Approve / Decline (and the PIN when one is set). The list follows the server's `approvals`
// events, so a payment an agent asks for appears without a reload; a card keeps what was typed
// in it while the list changes around it.
import {
  failure,
  getApproval,
  getApprovals,
  getSession,
  getSpending,
  latestApprovals,
  on,
  postDecision,
} from "../api.js";
import { capBar } from "../charts.js";
import {
  clock,
  countdown,
  fill,
  h,
  jsonView,
  loading,
  mono,
  notice,
  pageHead,
  statusBadge,
  timeEl,
  when,
} from "../dom.js";
import { level, minus, percent, remaining, usdc } from "../money.js";

/** @typedef {import("../wire.js").Approval} Approval */
/** @typedef {import("../wire.js").Session} Session */

/**
 * An approval's card, which redraws its spend forecast from a newer review of the same approval.
 * @typedef {HTMLElement & { update(next: Approval): void }} Card
 */

/**
 * Updates every countdown on the page once a second; returns the stop.
 * @param {HTMLElement} root
 */
function ticker(root) {
  const tick = () => {
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("[data-expires]"))) {
      const expires = el.dataset.expires ?? "";
      const left = countdown(expires);
      const card = /** @type {HTMLElement | null} */ (el.closest(".approval"));
      if (left === null) {
        el.textContent = "expired";
        el.classList.add("expired");
        if (card && card.dataset.decided !== "1") card.classList.add("is-expired");
        for (const b of /** @type {Iterable<HTMLButtonElement>} */ (card?.querySelectorAll("button.decide") ?? []))
          b.disabled = true;
      } else {
        el.textContent = `expires in ${left}`;
        el.classList.toggle("soon", Date.parse(expires) - Date.now() < 60_000);
      }
    }
  };
  tick();
  const t = setInterval(tick, 1000);
  return () => clearInterval(t);
}

/**
 * Spend once this is paid: what was spent before (solid) and this payment (light), against each cap.
 * @param {Approval["after"]} after
 * @param {string} amount
 */
function spendAfter(after, amount) {
  /**
   * @param {string} label
   * @param {string} total
   * @param {string | null} cap
   */
  const row = (label, total, cap) => {
    const before = minus(total, amount);
    const lvl = cap ? level(total, cap) : "ok";
    return h(
      "div",
      { class: ["after-row", `level-${lvl}`] },
      h("span", { class: "after-label" }, label),
      capBar({
        label,
        spent: before,
        reserved: amount,
        cap,
        small: true,
        width: 200,
        title: `${label}: ${total} USDC once paid${cap ? ` of ${cap} USDC` : ""}`,
      }),
      h(
        "span",
        { class: "after-value" },
        cap
          ? [h("strong", {}, `${total} of ${cap} USDC`), ` · ${percent(total, cap)} · ${remaining(cap, total)} left`]
          : [h("strong", {}, `${total} USDC`), " · no cap"],
      ),
    );
  };
  return h(
    "div",
    { class: "after" },
    h("h3", {}, `Spend once this ${amount} USDC is paid`),
    row("Last 24 h", after.spentLast24h, after.maxPerDay),
    row("Total", after.spentTotal, after.maxTotal),
    h(
      "p",
      { class: "after-legend" },
      h("span", { class: "key key-spent" }),
      " solid: spent before ",
      h("span", { class: "key key-this" }),
      " light: this payment ",
      h("span", { class: "key key-cap" }),
      " cap",
    ),
  );
}

/** @type {Record<string, string>} */
const OUTCOME = {
  approved: "Approved. The agent's next call with this approval pays, once.",
  used: "Approved and used: the payment went through.",
  declined: "Declined. Nothing is paid for it.",
};

/**
 * @param {Approval} r
 * @returns {{ status: string, text: string } | null}
 */
function outcomeOf(r) {
  if (r.status === "pending")
    return r.expired
      ? {
          status: "expired",
          text: "The quote expired before anyone decided. Nothing is paid; the agent must ask again.",
        }
      : null;
  return { status: r.status, text: OUTCOME[r.status] ?? r.status };
}

/**
 * One approval as a card. `onDecided(review)` is told when this page decided it.
 * @param {Approval} r
 * @param {Session} session
 * @param {{ onDecided?: (decided: Approval) => void, detailLink?: boolean }} [options]
 * @returns {Card}
 */
function approvalCard(r, session, { onDecided, detailLink = true } = {}) {
  const card = h("article", {
    class: "approval card",
    "data-approval": r.approvalId,
    "aria-labelledby": `t-${r.approvalId}`,
  });
  const message = h("div", { class: "decide-message", "aria-live": "polite" });
  const pin = session.pinRequired
    ? h("input", {
        type: "password",
        class: "pin",
        name: "pin",
        inputmode: "numeric",
        autocomplete: "off",
        placeholder: "Approval PIN",
        "aria-label": "Approval PIN",
      })
    : null;
  const afterBox = h("div", {}, spendAfter(r.after, r.amount));
  const approveBtn = h(
    "button",
    { type: "button", class: "decide approve", "data-decide": "approve" },
    `Approve ${r.amount} USDC`,
  );
  const declineBtn = h("button", { type: "button", class: "decide decline", "data-decide": "decline" }, "Decline");
  const actions = h(
    "div",
    { class: "decide-row" },
    pin ? h("label", { class: "pin-label" }, "PIN ", pin) : null,
    approveBtn,
    declineBtn,
  );

  /** @param {"approve" | "decline"} kind */
  async function decide(kind) {
    if (pin && !pin.value) {
      fill(message, notice("error", "Type the approval PIN first."));
      pin.focus();
      return;
    }
    approveBtn.disabled = declineBtn.disabled = true;
    fill(message, h("span", { class: "muted" }, kind === "approve" ? "Approving…" : "Declining…"));
    try {
      const res = await postDecision(r.approvalId, kind, pin ? { pin: pin.value } : {});
      /** @type {Approval} */
      const decided = res.approval ?? { ...r, status: kind === "approve" ? "approved" : "declined" };
      showOutcome(decided);
      onDecided?.(decided);
    } catch (caught) {
      const e = failure(caught);
      fill(message, notice("error", e.message));
      const final = e.code === "approval_invalid" || e.code === "not_found";
      approveBtn.disabled = declineBtn.disabled = final;
      if (e.code === "pin_invalid" && pin) {
        pin.value = "";
        pin.focus();
      }
    }
  }
  approveBtn.addEventListener("click", () => decide("approve"));
  declineBtn.addEventListener("click", () => decide("decline"));
  pin?.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") decide("approve");
  });

  /** @param {Approval} d */
  function showOutcome(d) {
    const o = outcomeOf(d);
    if (!o) return;
    card.dataset.decided = "1";
    card.dataset.status = o.status;
    card.classList.add("is-decided", `is-${o.status}`);
    actions.remove();
    fill(
      message,
      notice(
        o.status === "declined" || o.status === "expired" ? "neutral" : "good",
        statusBadge(o.status),
        " ",
        o.text,
        d.decidedAt ? ` (${when(d.decidedAt)})` : "",
      ),
      d.status === "used" || d.status === "approved"
        ? h(
            "p",
            { class: "muted" },
            h("a", { href: `/executions/${encodeURIComponent(r.intentId)}` }, "Follow the execution →"),
          )
        : null,
    );
    // Decided: the quote's clock and the spend forecast no longer matter.
    card.querySelector(".expiry")?.remove();
  }

  card.append(
    h(
      "header",
      { class: "approval-head" },
      h(
        "div",
        {},
        h("h2", { id: `t-${r.approvalId}` }, r.action),
        h(
          "p",
          { class: "muted" },
          "Asked ",
          timeEl(r.createdAt),
          " · ",
          detailLink
            ? h("a", { href: `/approvals/${encodeURIComponent(r.approvalId)}` }, r.approvalId)
            : mono(r.approvalId),
        ),
      ),
      h(
        "div",
        { class: "amount" },
        h("span", { class: "amount-value" }, r.amount),
        h("span", { class: "amount-cur" }, " USDC"),
      ),
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Pays"),
      h("dd", {}, r.payee ? mono(r.payee) : h("span", { class: "warn-text" }, "no payee named by the quote")),
      h("dt", {}, "Quote"),
      h(
        "dd",
        {},
        mono(r.quoteId),
        h(
          "span",
          { class: "expiry" },
          " ",
          h(
            "span",
            { class: "countdown", "data-expires": r.expiresAt, title: `Expires ${when(r.expiresAt)}` },
            countdown(r.expiresAt) ? `expires in ${countdown(r.expiresAt)}` : "expired",
          ),
          h("span", { class: "muted" }, ` (at ${clock(r.expiresAt)})`),
        ),
      ),
      h("dt", {}, "Intent"),
      h("dd", {}, mono(r.intentId)),
    ),
    afterBox,
    h(
      "details",
      { class: "input", open: true },
      h("summary", {}, "What the agent asks to buy (the full input)"),
      jsonView(r.input),
    ),
    actions,
    message,
  );
  showOutcome(r);
  return Object.assign(card, {
    update: (/** @type {Approval} */ next) => fill(afterBox, spendAfter(next.after, next.amount)),
  });
}

async function threshold() {
  try {
    const sp = await getSpending();
    return sp?.limits?.approvalAbove ?? null;
  } catch {
    return null;
  }
}

/**
 * /approvals: the live list.
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const session = await getSession();
  const list = h("div", { class: "approvals", "aria-live": "polite" });
  const empty = h(
    "div",
    { class: "empty card" },
    h("h2", {}, "Nothing is waiting for you"),
    h(
      "p",
      {},
      "When an agent asks to pay above the approval threshold, the payment appears here at once, with everything you need to decide.",
    ),
  );
  const decidedList = h("div", { class: "decided-list" });
  const decidedBox = h("section", { class: "decided", hidden: true }, h("h2", {}, "Decided here"), decidedList);
  const sub = h(
    "p",
    { class: "sub" },
    "Payments an agent wants to make that need your approval. Nothing is paid until you approve.",
  );
  main.append(h("div", { class: "page-head" }, h("div", {}, h("h1", {}, "Approvals"), sub)), list, decidedBox);
  threshold().then((t) => {
    if (t) sub.append(` Payments above ${usdc(t)} ask you first.`);
  });

  /** @type {Map<string, Card>} */
  const cards = new Map();
  /** @type {Set<string>} */
  const decidedHere = new Set();
  const onDecided = (/** @type {Approval} */ d) => {
    decidedHere.add(d.approvalId);
  };
  /** @param {Approval[]} items */
  function render(items) {
    const ids = new Set(items.map((r) => r.approvalId));
    for (const [id, card] of cards) {
      if (ids.has(id)) continue;
      cards.delete(id);
      card.remove();
      if (decidedHere.has(id) || card.dataset.decided === "1") {
        decidedBox.hidden = false;
        card.classList.add("compact");
        decidedList.prepend(card);
      }
    }
    for (const r of items) {
      const existing = cards.get(r.approvalId);
      if (existing) existing.update(r);
      else {
        const card = approvalCard(r, session, { onDecided });
        cards.set(r.approvalId, card);
        list.append(card);
      }
    }
    // Oldest first, as the server sends them.
    for (const r of items) {
      const card = cards.get(r.approvalId);
      if (card) list.append(card);
    }
    if (cards.size === 0) list.append(empty);
    else empty.remove();
  }

  // Listen first: an event that comes while the list loads is newer than the list.
  let heard = false;
  const off = on("approvals", (data) => {
    if (!heard) fill(list);
    heard = true;
    render(data.items ?? []);
  });
  const first = latestApprovals();
  if (first) {
    heard = true;
    render(first.items ?? []);
  } else {
    list.append(loading("Loading what waits for you…"));
    const res = await getApprovals().catch((e) => {
      off();
      throw e;
    });
    if (!heard) {
      heard = true;
      fill(list);
      render(res.items ?? []);
    }
  }
  const stop = ticker(main);
  return () => {
    off();
    stop();
  };
}

/**
 * /approvals/<id>: one approval (the MCP server links people here), its outcome once decided.
 * @param {HTMLElement} main
 * @param {string} id
 */
export async function mountOne(main, id) {
  const session = await getSession();
  main.append(pageHead("Approval", h("a", { href: "/approvals" }, "← every approval waiting")));
  const box = h("div", {}, loading("Loading the approval…"));
  main.append(box);
  /** @type {Card | undefined} */
  let card;
  async function load() {
    let res;
    try {
      res = await getApproval(id);
    } catch (caught) {
      const e = failure(caught);
      fill(box, notice("error", e.code === "not_found" ? `There is no approval ${id} in this journal.` : e.message));
      return;
    }
    const r = res.approval;
    card = approvalCard(r, session, { detailLink: false });
    fill(box, card);
  }
  await load();
  // Decided elsewhere (the terminal, another tab): the pending set changes; show the outcome.
  const off = on("approvals", (data) => {
    const still = (data.items ?? []).find((r) => r.approvalId === id);
    if (still) card?.update?.(still);
    else if (card && card.dataset.decided !== "1") load();
  });
  const stop = ticker(main);
  return () => {
    off();
    stop();
  };
}
