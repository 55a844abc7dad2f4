// @ts-check
// Audit: the journal-vs-chain reconciliation of `paid-actions-mcp audit`. Whether the two agree,
// over which window and which token account, and each discrepancy with what it means and what to
// do about it, in plain words (discrepancies.js). The chain is the truth about money; the
// journal is what this program believes.
import { failure, getAudit } from "../api.js";
import { fill, h, loading, mono, notice, pageHead, statusBadge, when } from "../dom.js";
import { usdc } from "../money.js";
import { explained } from "./discrepancies.js";

/** @typedef {import("../dom.js").Child} Child */
/** @typedef {import("../wire.js").AuditReport} AuditReport */
/** @typedef {import("../wire.js").AuditRail} AuditRail */

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

// ---- The report's sections, top to bottom ------------------------------------------------------

/**
 * Whether the journal and the chain agree, in one line and a sentence.
 * @param {AuditReport} report
 */
function verdict(report) {
  const ds = report.discrepancies ?? [];
  const payments = report.payments ?? [];
  return h(
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
  );
}

/**
 * One network's account and how its chain was read (Solana: the wallet and its USDC token
 * account; EVM: the key, which is its own account, and the USDC contract).
 * @param {AuditRail} rail
 */
function railFacts(rail) {
  const scan = rail.scan ?? {};
  const evm = rail.walletTokenAccount === rail.wallet;
  return [
    rail.network ? [h("dt", {}, "Network"), h("dd", {}, mono(rail.network))] : null,
    h("dt", {}, evm ? "Key" : "Wallet"),
    h("dd", {}, mono(rail.wallet)),
    evm ? null : [h("dt", {}, "USDC token account"), h("dd", {}, mono(rail.walletTokenAccount))],
    h("dt", {}, evm ? "USDC contract" : "Mint"),
    h("dd", {}, mono(rail.mint)),
    scan.rpc
      ? [
          h("dt", {}, "Read via"),
          h(
            "dd",
            {},
            evm
              ? `${scan.rpc}: ${scan.transactionsRead ?? 0} transaction(s) that moved the key's USDC, its Transfer logs back to ${scan.from ? when(scan.from) : "—"}`
              : `${scan.rpc}: ${scan.transactionsRead ?? 0} transaction(s), ${scan.signatures ?? 0} in the history back to ${scan.from ? when(scan.from) : "—"}, ${scan.failed ?? 0} failed on chain`,
          ),
        ]
      : null,
  ];
}

/**
 * The window, each network's account and how its chain was read, and what was found.
 * @param {AuditReport} report
 */
function compared(report) {
  const payments = report.payments ?? [];
  const onChain = payments.filter((p) => p.status === "on_chain").length;
  const rails = report.rails ?? [
    {
      network: null,
      wallet: report.wallet,
      walletTokenAccount: report.walletTokenAccount,
      mint: report.mint,
      scan: report.scan,
    },
  ];
  return h(
    "section",
    { class: "card" },
    h("h2", {}, "What was compared"),
    h(
      "dl",
      { class: "facts facts-wide" },
      h("dt", {}, "Window"),
      h("dd", {}, `from ${when(report.since)} to now`),
      rails.map(railFacts),
      h("dt", {}, "Found"),
      h(
        "dd",
        {},
        `${(report.outflows ?? []).length} outflow(s); ${payments.length} journaled payment(s), ${onChain} on chain, ${(report.inFlight ?? []).length} in flight; ${(report.deposits ?? []).length} deposit(s)`,
      ),
    ),
  );
}

/**
 * Signed payments not yet on chain nor counted, when there are any.
 * @param {AuditReport} report
 */
function inFlight(report) {
  if (!report.inFlight?.length) return null;
  return h(
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
  );
}

/**
 * Refunds the service reports that the chain does not show arriving, when there are any.
 * @param {AuditReport} report
 */
function refundsNotCredited(report) {
  const notCredited = (report.refunds ?? []).filter((r) => r.status === "not_credited");
  if (!notCredited.length) return null;
  return h(
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
  );
}

/**
 * Every journaled payment in the window and where the chain has it, when there are any.
 * @param {AuditReport} report
 */
function paymentsTable(report) {
  const payments = report.payments ?? [];
  if (!payments.length) return null;
  return h(
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
  );
}

/**
 * Money that came in and is not a refund, when there is any.
 * @param {AuditReport} report
 */
function deposits(report) {
  if (!report.deposits?.length) return null;
  return h(
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
  );
}

/**
 * @param {HTMLElement} box
 * @param {AuditReport} report
 */
function render(box, report) {
  const ds = report.discrepancies ?? [];
  fill(
    box,
    verdict(report),
    compared(report),
    ds.length ? h("section", { class: "discrepancies" }, h("h2", {}, "Discrepancies"), ds.map(explained)) : null,
    inFlight(report),
    refundsNotCredited(report),
    paymentsTable(report),
    deposits(report),
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
