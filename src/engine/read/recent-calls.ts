/**
 * The most recent tool calls, newest first: the journal's index of transcripts (every server
 * sharing the journal writes to it, on this host or another) merged with the transcript files
 * in this home (calls from before the index existed). Each says where its transcript is.
 */
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import type { JournalStore } from "../journal/port.js";
import type { TranscriptLog } from "./transcripts.js";

export interface RecentCall {
  callId: string;
  /** When its transcript began (indexed calls) or was last written (files only). */
  at: string;
  /** The host whose home holds the transcript file. */
  host: string;
  /** The file, when it is in this home. */
  path?: string;
}

export async function recentCalls(
  journal: JournalStore,
  transcripts: Pick<TranscriptLog, "pathOf" | "list">,
  limit: number,
): Promise<RecentCall[]> {
  const here = hostname();
  const byId = new Map<string, RecentCall & { ms: number }>();
  for (const r of await journal.transcriptIndex(limit)) {
    const path = transcripts.pathOf(r.callId);
    const local = r.host === here && existsSync(path);
    byId.set(r.callId, {
      callId: r.callId,
      at: new Date(r.createdAt).toISOString(),
      host: r.host,
      ...(local ? { path } : {}),
      ms: r.createdAt,
    });
  }
  for (const f of transcripts.list(limit)) {
    if (!byId.has(f.callId))
      byId.set(f.callId, {
        callId: f.callId,
        at: f.modifiedAt,
        host: here,
        path: f.path,
        ms: Date.parse(f.modifiedAt),
      });
  }
  return [...byId.values()]
    .sort((a, b) => b.ms - a.ms || (a.callId < b.callId ? 1 : -1))
    .slice(0, limit)
    .map(({ ms: _ms, ...call }) => call);
}
