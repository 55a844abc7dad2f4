// @ts-check
// One approval as a card: what the agent asks to buy (action, full input, amount, payee, the
// quote's expiry; for an x402 resource, the method and the URL without query values instead of
// an input), the spend it would leave against each cap, Approve / Decline (and the PIN
// when one is set), and the outcome once it is decided. The approvals list and an approval's
// own page (approvals.js) both show approvals as these cards.
import { failure, postDecision } from "../api.js";
import { approvalAssertion } from "../webauthn.js";
import { capBar } from "../charts.js";
import { clock, countdown, fill, h, jsonView, mono, notice, statusBadge, timeEl, when } from "../dom.js";
import { level, minus, percent, remaining } from "../money.js";

/** @typedef {import("../wire.js").Approval} Approval */
/** @typedef {import("../wire.js").Session} Session */

/**
 * An approval's card, which redraws its spend forecast from a newer review of the same approval.
 * @typedef {HTMLElement & { update(next: Approval): void }} Card
 */

/**
 * The parts of a card that a decision changes: the card itself, its row of buttons (gone once
 * decided) and its message line.
 * @typedef {{ card: HTMLElement, actions: HTMLElement, message: HTMLElement }} Decidable
 */

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
  approved: "Approved. The agent will use it when it calls again (it pays once).",
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
  // Just decided here: the answer says whether a call was waiting for it.
  if (r.next && (r.status === "approved" || r.status === "declined"))
    return { status: r.status, text: `${r.status === "approved" ? "Approved." : "Declined."} ${r.next}` };
  return { status: r.status, text: OUTCOME[r.status] ?? r.status };
}

// ---- Deciding -------------------------------------------------------------------------------

/**
 * What a decision reads and changes: the PIN field (when the session asks for one), the
 * message line and the two buttons.
 * @typedef {object} DecisionForm
 * @property {HTMLInputElement | null} pin
 * @property {HTMLElement} message
 * @property {HTMLButtonElement} approveBtn
 * @property {HTMLButtonElement} declineBtn
 * @property {boolean} passkey whether approving needs the person's passkey
 */

/**
 * Marks the card decided and says how (nothing while `d` is still pending and unexpired).
 * @param {Decidable} parts
 * @param {Approval} r the approval the card was drawn from
 * @param {Approval} d the approval as decided
 */
function showOutcome({ card, actions, message }, r, d) {
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
          r.fetch
            ? h("a", { href: `/purchases/${encodeURIComponent(r.intentId)}` }, "Follow the purchase →")
            : h("a", { href: `/executions/${encodeURIComponent(r.intentId)}` }, "Follow the execution →"),
        )
      : null,
  );
  // Decided: the quote's clock and the spend forecast no longer matter.
  card.querySelector(".expiry")?.remove();
}

/**
 * Sends one decision; `decided(approval)` is told the outcome, the message line any failure.
 * @param {Approval} r
 * @param {"approve" | "decline"} kind
 * @param {DecisionForm} form
 * @param {(decided: Approval) => void} decided
 */
async function submitDecision(r, kind, { pin, message, approveBtn, declineBtn, passkey }, decided) {
  if (pin && !pin.value) {
    fill(message, notice("error", "Type the approval PIN first."));
    pin.focus();
    return;
  }
  approveBtn.disabled = declineBtn.disabled = true;
  fill(message, h("span", { class: "muted" }, kind === "approve" ? "Approving…" : "Declining…"));
  try {
    // With a passkey registered, approving is the passkey signing this payment's terms.
    let assertion;
    if (kind === "approve" && passkey) {
      fill(message, h("span", { class: "muted" }, "Confirm with your passkey…"));
      assertion = await approvalAssertion(r.approvalId);
      if (!assertion) return; // this page is moving to the console's localhost address
    }
    const res = await postDecision(r.approvalId, kind, {
      ...(pin ? { pin: pin.value } : {}),
      ...(assertion ? { assertion } : {}),
    });
    /** @type {Approval} */
    const outcome = res.approval ?? { ...r, status: kind === "approve" ? "approved" : "declined" };
    decided(res.next ? { ...outcome, next: res.next } : outcome);
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

/**
 * The row of Approve / Decline, with the PIN field when the session asks for one.
 * @param {Approval} r
 * @param {Session} session
 * @param {HTMLElement} message
 * @param {(decided: Approval) => void} decided
 */
function decisionRow(r, session, message, decided) {
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
  const approveBtn = h(
    "button",
    { type: "button", class: "decide approve", "data-decide": "approve" },
    session.passkeys > 0 ? `Approve ${r.amount} USDC with your passkey` : `Approve ${r.amount} USDC`,
  );
  const declineBtn = h("button", { type: "button", class: "decide decline", "data-decide": "decline" }, "Decline");
  const form = { pin, message, approveBtn, declineBtn, passkey: session.passkeys > 0 };
  /** @param {"approve" | "decline"} kind */
  const decide = (kind) => submitDecision(r, kind, form, decided);
  approveBtn.addEventListener("click", () => decide("approve"));
  declineBtn.addEventListener("click", () => decide("decline"));
  pin?.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") decide("approve");
  });
  return h(
    "div",
    { class: "decide-row" },
    pin ? h("label", { class: "pin-label" }, "PIN ", pin) : null,
    approveBtn,
    declineBtn,
  );
}

// ---- What the card shows ----------------------------------------------------------------------

/**
 * The action asked for, when, the approval's id (a link to its own page, or not) and the amount.
 * @param {Approval} r
 * @param {boolean} detailLink
 */
function cardHead(r, detailLink) {
  return h(
    "header",
    { class: "approval-head" },
    h(
      "div",
      {},
      h("h2", { id: `t-${r.approvalId}` }, r.fetch ? `${r.fetch.method} ${r.fetch.origin}` : r.action),
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
  );
}

/**
 * Who is paid, the quote with its expiry counting down, and the intent.
 * @param {Approval} r
 */
function cardFacts(r) {
  return h(
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
  );
}

/**
 * What the agent asks to buy: an action's full input, or what an x402 resource's request is —
 * its method, its URL (query values redacted), the names of the headers it sends and the size
 * of its body (their values are secrets the console never has).
 * @param {Approval} r
 */
function whatIsBought(r) {
  if (!r.fetch)
    return h(
      "details",
      { class: "input", open: true },
      h("summary", {}, "What the agent asks to buy (the full input)"),
      jsonView(r.input),
    );
  const input = /** @type {{ headers?: unknown, bodyBytes?: unknown }} */ (r.input ?? {});
  const headers = Array.isArray(input.headers) ? input.headers.map(String) : [];
  return h(
    "section",
    { class: "input fetch-request" },
    h("h3", {}, "What the agent asks to buy: an x402 resource (paid_fetch)"),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Request"),
      h("dd", {}, r.fetch.method, " ", mono(r.fetch.url)),
      h("dt", {}, "Origin"),
      h("dd", {}, mono(r.fetch.origin)),
      h("dt", {}, "Headers sent"),
      h("dd", {}, headers.length ? `${headers.join(", ")} (values not shown)` : "none of its own"),
      h("dt", {}, "Body"),
      h("dd", {}, typeof input.bodyBytes === "number" && input.bodyBytes > 0 ? `${input.bodyBytes} bytes` : "none"),
    ),
  );
}

/**
 * One approval as a card. `onDecided(review)` is told when this page decided it.
 * @param {Approval} r
 * @param {Session} session
 * @param {{ onDecided?: (decided: Approval) => void, detailLink?: boolean }} [options]
 * @returns {Card}
 */
export function approvalCard(r, session, { onDecided, detailLink = true } = {}) {
  const card = h("article", {
    class: "approval card",
    "data-approval": r.approvalId,
    "aria-labelledby": `t-${r.approvalId}`,
  });
  const message = h("div", { class: "decide-message", "aria-live": "polite" });
  const afterBox = h("div", {}, spendAfter(r.after, r.amount));
  const actions = decisionRow(r, session, message, (decided) => {
    showOutcome({ card, actions, message }, r, decided);
    onDecided?.(decided);
  });
  card.append(cardHead(r, detailLink), cardFacts(r), afterBox, whatIsBought(r), actions, message);
  showOutcome({ card, actions, message }, r, r);
  return Object.assign(card, {
    update: (/** @type {Approval} */ next) => fill(afterBox, spendAfter(next.after, next.amount)),
  });
}
