/**
 * What the console is given and what it hands back (the contract the CLI's `console`
 * command and the MCP server both start it with). It reads only engine/ and domain/;
 * anything else it needs — the audit run — is injected.
 */
import type { Config } from "../engine/config.js";
import type { Engine } from "../engine/engine.js";
import type { JournalStore } from "../engine/journal/port.js";
import type { Transcripts } from "../engine/transcripts.js";

export interface ConsoleDeps {
  engine: Engine;
  journal: JournalStore;
  transcripts: Transcripts;
  home: string;
  config: Config | undefined;
  /** The AuditRun report of `paid-actions-mcp audit`, or throws with a message a person can act on. */
  audit(): Promise<unknown>;
  now?: () => number;
  /** Where the console says what went wrong in the background (never a secret). */
  log?: (line: string) => void;
}

export interface ConsoleHandle {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  /** Mints a one-time login link: <origin>/login?token=…&next=<path>. */
  loginUrl(next?: string): string;
  close(): Promise<void>;
}
