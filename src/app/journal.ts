/**
 * Opening a home's journal: light on purpose (the SQLite store and the transcripts only),
 * so that the MCP server can read its cached catalog before the rest of the app loads.
 */
import { join } from "node:path";
import { Journal } from "../engine/journal/sqlite.js";
import type { Transcripts } from "../engine/transcripts.js";

/** The journal of a home; every proof read from it is registered with the transcripts for scrubbing. */
export function openJournalFile(home: string, transcripts: Transcripts): Journal {
  return new Journal(join(home, "journal.sqlite"), { onSecret: (proof) => transcripts.addSecret(proof, { ephemeral: true }) });
}
