/**
 * Opening a home's journal: light on purpose (the store and the transcripts only), so that
 * the MCP server can read its cached catalog before the rest of the app loads. SQLite in the
 * home dir by default; PostgreSQL when a journal URL is configured (a fleet of servers
 * sharing one budget), its driver loaded only then.
 */
import { join } from "node:path";
import {
  openPostgresJournal,
  openSqliteJournal,
  paidError,
  passwordOf,
  type Journal,
  type JournalStore,
  type Transcripts,
} from "../engine/index.js";

/** The SQLite journal of a home; every proof read from it is registered with the transcripts for scrubbing. */
export function openJournalFile(home: string, transcripts: Transcripts): Promise<Journal> {
  return openSqliteJournal(join(home, "journal.sqlite"), {
    onSecret: (proof) => transcripts.addSecret(proof, { ephemeral: true }),
  });
}

/**
 * The journal the configuration names: PostgreSQL at `journalUrl`, else SQLite in the home.
 * The URL's password is registered as a secret before anything can print it.
 */
export async function openJournalStore(
  home: string,
  transcripts: Transcripts,
  journal: { url?: string; invalid?: true } = {},
): Promise<JournalStore> {
  // A journal URL that does not parse names no journal: not the home's SQLite file either.
  if (journal.invalid) throw paidError("config_invalid", { key: "PAID_ACTIONS_JOURNAL_URL" });
  const journalUrl = journal.url;
  if (!journalUrl) return openJournalFile(home, transcripts);
  const password = passwordOf(journalUrl);
  if (password) transcripts.addSecret(password);
  return openPostgresJournal(journalUrl, { onSecret: (proof) => transcripts.addSecret(proof, { ephemeral: true }) });
}
