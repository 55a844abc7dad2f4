// @ts-check
// Approvals: every payment waiting for a person, each as a card with everything needed to decide
// (approval-card.js). The list follows the server's `approvals` events, so a payment an agent
// asks for appears without a reload; a card keeps what was typed in it while the list changes
// around it, and moves to "Decided here" once it leaves the pending set. An approval's own page
// shows one card and its outcome once decided, here or elsewhere.
import { failure, getApproval, getApprovals, getSession, getSpending, latestApprovals, on } from "../api.js";
import { countdown, fill, h, loading, notice, pageHead } from "../dom.js";
import { usdc } from "../money.js";
import { approvalCard } from "./approval-card.js";

/** @typedef {import("../wire.js").Approval} Approval */
/** @typedef {import("../wire.js").Session} Session */
/** @typedef {import("./approval-card.js").Card} Card */

/**
 * The list page's parts.
 * @typedef {object} ListParts
 * @property {HTMLElement} list the pending cards
 * @property {HTMLElement} empty what shows when none is pending
 * @property {HTMLElement} decidedList the cards decided on this page
 * @property {HTMLElement} decidedBox the "Decided here" section around them, hidden until one is
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

async function threshold() {
  try {
    const sp = await getSpending();
    return sp?.limits?.approvalAbove ?? null;
  } catch {
    return null;
  }
}

/**
 * Draws the list page's head and its (empty) parts into `main`.
 * @param {HTMLElement} main
 * @returns {ListParts}
 */
function listPage(main) {
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
  return { list, empty, decidedList, decidedBox };
}

/**
 * Keeps one card per pending approval: returns what draws a newer pending set. A card that
 * leaves the set goes; one decided (here, or shown decided) moves to "Decided here".
 * @param {ListParts} parts
 * @param {Session} session
 * @returns {(items: Approval[]) => void}
 */
function cardKeeper({ list, empty, decidedList, decidedBox }, session) {
  /** @type {Map<string, Card>} */
  const cards = new Map();
  /** @type {Set<string>} */
  const decidedHere = new Set();
  const onDecided = (/** @type {Approval} */ d) => {
    decidedHere.add(d.approvalId);
  };
  return (items) => {
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
  };
}

/**
 * Draws the pending set into `list` now and on every `approvals` event; returns the unsubscribe.
 * @param {HTMLElement} list
 * @param {(items: Approval[]) => void} render
 */
async function followApprovals(list, render) {
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
  return off;
}

/**
 * /approvals: the live list.
 * @param {HTMLElement} main
 */
export async function mountList(main) {
  const session = await getSession();
  const parts = listPage(main);
  const off = await followApprovals(parts.list, cardKeeper(parts, session));
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
