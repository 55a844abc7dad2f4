// @ts-check
// Audit: the journal-vs-chain reconciliation of `paid-actions-mcp audit`. Whether the two agree,
// over which window and which token account, and each discrepancy with what it means and what to
// do about it, in plain words. The chain is the truth about money; the journal is what this
// program believes.
import { failure, getAudit } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, statusBadge, when } from "../dom.js";
import { usdc } from "../money.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").AuditReport} AuditReport */
/** @typedef {import("../wire.js").Discrepancy} Discrepancy */

/**
 * Each kind of discrepancy (engine/audit.ts DiscrepancyKind) in plain words; a kind this page
 * does not know shows by its name.
 * @type {Record<string, { title: string, means: string, todo: string }>}
 */
const KINDS = {
  unknown_outflow: {
    title: "Money left the wallet that no payment explains",
    means:
      "USDC went out of the wallet's token account in a transaction that carries no quote this journal signed. Something other than this program spent from the wallet: another program using the same key, a person, or a stolen key.",
    todo: "Look the transaction up in an explorer. If you do not recognise it, move the remaining funds to a new wallet and replace the key file (PAID_ACTIONS_WALLET).",
  },
  amount_mismatch: {
    title: "A payment moved a different amount than recorded",
    means:
      "The payment for this quote is on chain, but it moved another amount than the journal says was signed. The spend counted against your limits is wrong by the difference.",
    todo: "Compare the two amounts below with the quote. Ask the service about the difference; keep the transaction id as evidence.",
  },
  payee_mismatch: {
    title: "A payment went to someone else",
    means: "The payment for this quote landed in an account that does not belong to the payee the journal recorded.",
    todo: "Treat it as money sent to the wrong party: contact the service with the transaction id, and check that the service's address has not changed.",
  },
  duplicate_payment: {
    title: "One quote was paid twice",
    means:
      "More than one transfer on chain carries the same quote, so the service was paid more than once for one purchase.",
    todo: "Ask the service for a refund of the extra payment, quoting both transactions.",
  },
  landed_but_never: {
    title: "A payment believed lost did land",
    means:
      "The journal decided this payment could never land (and released its budget), yet the chain shows it paid. Your limits undercount the spend by its amount.",
    todo: "Check whether the service delivered the purchase; if not, ask it for a refund or for the execution the payment bought.",
  },
  orphan_payment: {
    title: "A payment belongs to no purchase",
    means: "A transfer on chain matches a payment record that no intent in the journal owns.",
    todo: "The journal may have been edited or partly restored. Keep the transaction id, and compare with a backup of the journal.",
  },
  claimed_but_absent: {
    title: "A payment the journal counts is not on chain",
    means:
      "The journal counts this payment as settled (the service said so), but the wallet's history does not show it. Either the service's claim was wrong, or the chain read is incomplete.",
    todo: "Run the audit again in a few minutes. If it stays absent, the service may have executed without being paid, or reported a transaction that is not yours: contact it.",
  },
  unverified_refund: {
    title: "A refund was credited that the chain does not show",
    means:
      "Your limits were given back money for a refund that the chain does not show arriving in the wallet in full.",
    todo: "Check the refund transaction in an explorer; ask the service to complete the refund.",
  },
};

/** @param {Discrepancy} d */
function explained(d) {
  const k = KINDS[d.kind] ?? { title: d.kind, means: "", todo: "" };
  /** @type {Array<[string, Child] | null>} */
  const all = [
    d.quoteId ? ["Quote", mono(d.quoteId)] : null,
    d.intentId
      ? ["Purchase", h("a", { href: `/executions/${encodeURIComponent(d.intentId)}` }, mono(d.intentId))]
      : null,
    d.transaction ? ["Transaction", mono(d.transaction)] : null,
    d.journalAmount ? ["Journal says", usdc(d.journalAmount)] : null,
    d.chainAmount ? ["Chain shows", usdc(d.chainAmount)] : null,
    d.at ? ["When", when(d.at)] : null,
  ];
  const facts = all.filter((f) => f !== null);
  return h(
    "article",
    { class: "card discrepancy", "data-kind": d.kind },
    h("h3", {}, k.title),
    h("p", { class: "what" }, d.message),
    facts.length
      ? h(
          "dl",
          { class: "facts" },
          facts.flatMap(([a, b]) => [h("dt", {}, a), h("dd", {}, b)]),
        )
      : null,
    k.means ? h("p", {}, h("strong", {}, "What it means. "), k.means) : null,
    k.todo ? h("p", {}, h("strong", {}, "What to do. "), k.todo) : null,
  );
}

/**
 * @param {string[]} headers
 * @param {Child} rows
 */
function table(headers, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          headers.map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h("tbody", {}, rows),
    ),
  );
}

/**
 * @param {HTMLElement} box
 * @param {AuditReport} report
 */
function render(box, report) {
  const scan = report.scan ?? {};
  const ds = report.discrepancies ?? [];
  const payments = report.payments ?? [];
  const onChain = payments.filter((p) => p.status === "on_chain").length;
  const notCredited = (report.refunds ?? []).filter((r) => r.status === "not_credited");
  fill(
    box,
    h(
      "div",
      { class: ["verdict", report.ok ? "verdict-ok" : "verdict-bad"], "data-ok": String(!!report.ok) },
      h("div", { class: "verdict-mark", "aria-hidden": "true" }, report.ok ? "✓" : "!"),
      h(
        "div",
        {},
        h(
          "h2",
          {},
          report.ok
            ? "The journal and the chain agree"
            : `The journal and the chain disagree: ${ds.length} discrepanc${ds.length === 1 ? "y" : "ies"}`,
        ),
        h(
          "p",
          {},
          !report.ok
            ? "Each one is explained below, with what to do. Money is at stake: look at each."
            : payments.length === 0 && (report.outflows ?? []).length === 0
              ? "There was nothing to compare yet: the journal holds no payment of this wallet in the window, and none left it."
              : "Every payment the journal counts is on chain as recorded, and nothing left the wallet that the journal cannot explain.",
        ),
      ),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "What was compared"),
      h(
        "dl",
        { class: "facts facts-wide" },
        h("dt", {}, "Window"),
        h("dd", {}, `from ${when(report.since)} to now`),
        h("dt", {}, "Wallet"),
        h("dd", {}, mono(report.wallet)),
        h("dt", {}, "USDC token account"),
        h("dd", {}, mono(report.walletTokenAccount)),
        h("dt", {}, "Mint"),
        h("dd", {}, mono(report.mint)),
        scan.rpc
          ? [
              h("dt", {}, "Read via"),
              h(
                "dd",
                {},
                `${scan.rpc}: ${scan.transactionsRead ?? 0} transaction(s), ${scan.signatures ?? 0} in the history back to ${scan.from ? when(scan.from) : "—"}, ${scan.failed ?? 0} failed on chain`,
              ),
            ]
          : null,
        h("dt", {}, "Found"),
        h(
          "dd",
          {},
          `${(report.outflows ?? []).length} outflow(s); ${payments.length} journaled payment(s), ${onChain} on chain, ${(report.inFlight ?? []).length} in flight; ${(report.deposits ?? []).length} deposit(s)`,
        ),
      ),
    ),
    ds.length ? h("section", { class: "discrepancies" }, h("h2", {}, "Discrepancies"), ds.map(explained)) : null,
    report.inFlight?.length
      ? h(
          "section",
          { class: "card" },
          h("h2", {}, "In flight"),
          h(
            "p",
            { class: "muted" },
            "Signed payments the chain does not show yet, and the journal does not count yet. Not a discrepancy: they settle or expire within minutes.",
          ),
          table(
            ["Quote", "Amount", "State", "Why"],
            report.inFlight.map((f) =>
              h(
                "tr",
                {},
                h("td", {}, mono(f.quoteId)),
                h("td", { class: "money" }, usdc(f.amount)),
                h("td", {}, f.intentState ?? "—"),
                h("td", {}, f.why),
              ),
            ),
          ),
        )
      : null,
    notCredited.length
      ? h(
          "section",
          { class: "card" },
          h("h2", {}, "Refunds not credited"),
          h(
            "p",
            { class: "muted" },
            "The service reports these refunds; nothing is counted back to your limits until the chain shows the money arriving.",
          ),
          table(
            ["Purchase", "Claimed", "Chain shows", "State"],
            notCredited.map((r) =>
              h(
                "tr",
                {},
                h("td", {}, mono(r.intentId)),
                h("td", {}, r.claimed ? usdc(r.claimed.amount) : "—"),
                h("td", {}, r.chainAmount ? usdc(r.chainAmount) : "—"),
                h("td", {}, r.refundState),
              ),
            ),
          ),
        )
      : null,
    payments.length
      ? h(
          "section",
          { class: "card" },
          h("h2", {}, "Payments"),
          table(
            ["Quote", "Amount", "Signed", "On chain", "Status"],
            payments.map((p) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: `/executions/${encodeURIComponent(p.intentId)}` }, mono(p.quoteId))),
                h("td", { class: "money" }, usdc(p.amount)),
                h("td", { class: "when" }, when(p.signedAt)),
                h("td", {}, p.chainTransaction ? mono(p.chainTransaction) : "—"),
                h("td", {}, statusBadge(p.status)),
              ),
            ),
          ),
        )
      : null,
    report.deposits?.length
      ? h(
          "section",
          { class: "card" },
          h("h2", {}, "Deposits"),
          h("p", { class: "muted" }, "Money that came in and is not a refund: someone topping up the wallet."),
          table(
            ["Transaction", "Amount", "When"],
            report.deposits.map((d) =>
              h(
                "tr",
                {},
                h("td", {}, mono(d.transaction)),
                h("td", { class: "money" }, usdc(d.amount)),
                h("td", {}, d.at ? when(d.at) : "—"),
              ),
            ),
          ),
        )
      : null,
    report.otherWallet?.length
      ? notice(
          "neutral",
          `${report.otherWallet.length} journaled payment(s) were made by another wallet or mint (the configuration changed) and are not audited here.`,
        )
      : null,
  );
}

/** @param {HTMLElement} main */
export async function mount(main) {
  const again = h("button", { type: "button", class: "secondary" }, "Run again");
  const box = h("div", { class: "audit" });
  main.append(
    pageHead(
      "Audit",
      h(
        "span",
        {},
        "The wallet's USDC account on chain, reconciled with the journal, as ",
        h("code", {}, "paid-actions-mcp audit"),
        " does.",
      ),
      again,
    ),
    box,
  );
  async function run() {
    again.disabled = true;
    fill(box, loading("Reading the wallet's history from the chain…"));
    try {
      const res = await getAudit();
      const report = res.report?.report && !res.report.discrepancies ? res.report.report : res.report;
      render(box, report);
    } catch (e) {
      fill(
        box,
        notice(
          "error",
          h("strong", {}, "The audit cannot tell whether the journal and the chain agree. "),
          failure(e).message,
        ),
      );
    } finally {
      again.disabled = false;
    }
  }
  again.addEventListener("click", run);
  await run();
  return undefined;
}
