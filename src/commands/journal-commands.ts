/**
 * Commands that read the journal: `executions`, `purchases` (with `--csv`, the export for the
 * books: exports.ts), `transcript` (`approve` is in approve.ts). They never start a service
 * and never pay.
 */
import { openJournal } from "../app/index.js";
import { recentCalls, type ExecutionView } from "../engine/index.js";
import { exportCsv, type ExportKind } from "./exports.js";

const out = (line = "") => process.stdout.write(`${line}\n`);

/** The export's window, [since, until) in ms; both ends optional. */
export interface CsvWindow {
  since?: number;
  until?: number;
}

/** Writes one kind's CSV export on stdout. */
async function csv(env: NodeJS.ProcessEnv, kind: ExportKind, w: CsvWindow): Promise<number> {
  const j = await openJournal(env);
  try {
    process.stdout.write(await exportCsv(j.journal, kind, w.since ?? 0, w.until ?? Number.MAX_SAFE_INTEGER));
    return 0;
  } finally {
    await j.close();
  }
}

function pad(text: string, width: number): string {
  return text.length >= width ? text.slice(0, width - 1) + "…" : text.padEnd(width);
}

export async function executionsCommand(
  env: NodeJS.ProcessEnv,
  opts: { status?: string; action?: string; limit?: number; json?: boolean; attention?: boolean; csv?: CsvWindow },
): Promise<number> {
  if (opts.csv) return csv(env, "action", opts.csv);
  const j = await openJournal(env);
  try {
    const items: ExecutionView[] = opts.attention
      ? await j.engine.needsAttention()
      : (await j.engine.listExecutions({ status: opts.status, action: opts.action, limit: opts.limit ?? 20 })).items;
    if (opts.json) {
      out(JSON.stringify({ items }, null, 2));
      return 0;
    }
    if (items.length === 0) {
      out(opts.attention ? "Nothing needs attention." : `No executions yet in ${j.home}.`);
      return 0;
    }
    out(`${pad("CREATED", 21)}${pad("EXECUTION", 26)}${pad("ACTION", 26)}${pad("STATUS", 12)}${pad("USDC", 10)}CALL`);
    for (const e of items) {
      out(
        `${pad(e.createdAt.replace("T", " ").slice(0, 19), 21)}${pad(e.executionId ?? `(${e.intentId})`, 26)}${pad(e.action, 26)}${pad(e.status, 12)}${pad(e.amount ?? "-", 10)}${e.callId ?? ""}` +
          (e.attention ? `\n  needs attention: ${e.attention}` : ""),
      );
    }
    const s = await j.engine.spending();
    out();
    out(
      `Spent in the last 24 h: ${s.spentLast24h} USDC (${s.reserved} reserved)${s.limits ? ` of ${s.limits.maxPerDay} per day` : ""}. Transcripts: paid-actions-mcp transcript <call>`,
    );
    return 0;
  } finally {
    await j.close();
  }
}

/** `purchases`: what paid_fetch bought, newest first. */
export async function purchasesCommand(
  env: NodeJS.ProcessEnv,
  opts: { origin?: string; limit?: number; json?: boolean; csv?: CsvWindow },
): Promise<number> {
  if (opts.csv) return csv(env, "fetch", opts.csv);
  const j = await openJournal(env);
  try {
    const { items } = await j.engine.listPurchases({ origin: opts.origin, limit: opts.limit ?? 20 });
    if (opts.json) {
      out(JSON.stringify({ items }, null, 2));
      return 0;
    }
    if (items.length === 0) {
      out(`No purchases by paid_fetch yet in ${j.home}.`);
      return 0;
    }
    out(`${pad("CREATED", 21)}${pad("STATE", 11)}${pad("HTTP", 6)}${pad("USDC", 10)}REQUEST`);
    for (const p of items) {
      out(
        `${pad(p.createdAt.replace("T", " ").slice(0, 19), 21)}${pad(p.state, 11)}${pad(String(p.status ?? "-"), 6)}${pad(p.amount ?? "-", 10)}${p.method ?? ""} ${p.url ?? p.origin ?? ""}` +
          (p.attention ? `\n  needs attention: ${p.attention}` : ""),
      );
    }
    return 0;
  } finally {
    await j.close();
  }
}

function summarize(entry: Record<string, unknown>): string {
  const step = String(entry.step);
  if (step === "http") {
    const req = entry.request as { method?: string; path?: string } | undefined;
    const res = entry.response as { status?: number; body?: unknown } | null;
    return `${req?.method} ${req?.path} -> ${res ? res.status : `no answer (${String(entry.error)})`} in ${String(entry.durationMs)} ms (attempt ${String(entry.attempt)})`;
  }
  const rest = { ...entry };
  delete rest.t;
  delete rest.step;
  delete rest.intentId;
  const text = JSON.stringify(rest);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

export async function transcriptCommand(
  env: NodeJS.ProcessEnv,
  callId: string | undefined,
  opts: { json?: boolean; limit?: number },
): Promise<number> {
  const j = await openJournal(env);
  try {
    if (!callId) {
      const list = await recentCalls(j.journal, j.transcripts, opts.limit ?? 20);
      if (opts.json) {
        out(JSON.stringify({ items: list }, null, 2));
        return 0;
      }
      if (list.length === 0) {
        out(`No transcripts yet in ${j.transcripts.dir}.`);
        return 0;
      }
      out("Recent tool calls (newest first):");
      for (const t of list) out(`  ${t.callId}  ${t.at}  ${t.path ?? `kept on host ${t.host}`}`);
      out("\nShow one: paid-actions-mcp transcript <callId>");
      return 0;
    }
    const entries = j.transcripts.read(callId);
    if (!entries) {
      process.stderr.write(`paid-actions-mcp: no transcript ${callId} in ${j.transcripts.dir}\n`);
      return 1;
    }
    if (opts.json) {
      out(JSON.stringify({ callId, entries }, null, 2));
      return 0;
    }
    out(`Transcript ${callId} (${j.transcripts.pathOf(callId)}); secrets are redacted.`);
    for (const e of entries) out(`${e.t}  ${pad(e.step, 12)} ${summarize(e)}`);
    return 0;
  } finally {
    await j.close();
  }
}
