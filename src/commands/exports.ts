/**
 * `executions --csv` and `purchases --csv`: what was bought, for the books — one row per
 * purchase that holds money (reserved or spent; a refused or released attempt moved none),
 * created in [since, until), oldest first: its date, what it bought, the amount in USDC (a
 * decimal), the network, the transaction, its status, and who approved it (a passkey, named
 * with its owner when the owner bound it; a person; or no approval needed).
 */
import type { JournalStore } from "../engine/index.js";
import { parseKept, purchaseView, view, type Intent } from "../engine/index.js";
import { formatDecimal } from "../domain/money.js";
import { toCsv } from "./csv.js";

export const EXPORT_HEADER = ["date", "what", "amount", "network", "transaction", "status", "approved by"] as const;

/** Which purchases: actions (executions) or x402 resources (paid_fetch). */
export type ExportKind = "action" | "fetch";

/** Who approved a purchase, in the words of the export. */
async function approvedBy(journal: JournalStore, intent: Intent, labels: Map<string, string | null>): Promise<string> {
  if (!intent.approvalId) return "no approval needed";
  const kept = parseKept(await journal.approvalAssertion(intent.approvalId));
  if (!kept) return `a person (${intent.approvalId})`;
  const name = labels.get(kept.credential.id) ?? kept.credential.id.slice(0, 16);
  const owner = kept.credential.owner && kept.credential.ownerSignature ? `, owner ${kept.credential.owner}` : "";
  return `passkey ${name}${owner} (${intent.approvalId})`;
}

/** The network a purchase pays on: its requirement's, else its quote's. */
function networkOf(intent: Intent): string {
  return intent.requirements?.network ?? intent.quote?.paymentRequirement.network ?? "";
}

/** The export's rows for one kind, created in [since, until). */
export async function exportRows(
  journal: JournalStore,
  kind: ExportKind,
  since: number,
  until: number,
): Promise<string[][]> {
  const labels = new Map((await journal.passkeys()).map((p) => [p.credentialId, p.label]));
  const rows: string[][] = [];
  for (const intent of await journal.intentsSince(since)) {
    if (intent.kind !== kind || intent.createdAt >= until) continue;
    if (intent.budgetState !== "reserved" && intent.budgetState !== "spent") continue;
    const paid = intent.budgetAmount ?? intent.amount;
    const what =
      kind === "action"
        ? intent.action
        : `${purchaseView(intent).method ?? "?"} ${purchaseView(intent).url ?? intent.origin ?? "?"}`;
    const status = kind === "action" ? view(intent).status : intent.state;
    rows.push([
      new Date(intent.createdAt).toISOString(),
      what,
      paid === null ? "" : formatDecimal(paid),
      networkOf(intent),
      intent.paymentTx ?? "",
      status,
      await approvedBy(journal, intent, labels),
    ]);
  }
  return rows;
}

/** The CSV file of one kind's purchases in [since, until). */
export async function exportCsv(
  journal: JournalStore,
  kind: ExportKind,
  since: number,
  until: number,
): Promise<string> {
  return toCsv(EXPORT_HEADER, await exportRows(journal, kind, since, until));
}
