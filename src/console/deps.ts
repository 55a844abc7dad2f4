/**
 * What the console is given and what it hands back (the contract the CLI's `console`
 * command and the MCP server both start it with). It reads only engine/ and domain/;
 * anything else it needs — the audit run — is injected.
 */
import type { Config, Engine, JournalStore, ReceiptResult, Transcripts } from "../engine/index.js";

export interface ConsoleDeps {
  engine: Engine;
  journal: JournalStore;
  transcripts: Transcripts;
  home: string;
  config: Config | undefined;
  /** The AuditRun report of `paid-actions-mcp audit`, or throws with a message a person can act on. */
  audit(): Promise<unknown>;
  /**
   * A purchase's receipt as `paid-actions-mcp receipt` makes it, where `engine` has no rails
   * to sign it with (`paid-actions-mcp console` reads the journal only); absent: `engine.receipt`.
   */
  receipt?(id: string): Promise<ReceiptResult>;
  now?: () => number;
  /** Where the console says what went wrong in the background (never a secret). */
  log?: (line: string) => void;
  /**
   * Whether a call of the agent is waiting for this approval right now, in the process that
   * serves this console (an MCP server's own console); absent where the console cannot know
   * (`paid-actions-mcp console`, calls in other processes).
   */
  agentWaiting?: (approvalId: string) => boolean;
  /**
   * The passkey ceremony this console was started for (`passkey add` or `passkey remove`, at a
   * terminal): only such a console registers or removes a passkey. Absent everywhere else.
   */
  passkeyDesk?: PasskeyDesk;
}

/** What the passkey page asks the person's authenticator for (each id and challenge base64url). */
export type PasskeyCeremony =
  | {
      kind: "add";
      challenge: string;
      rpId: string;
      user: { id: string; name: string; displayName: string };
      /** Passkeys already registered: the authenticator makes no second one for them. */
      excludeCredentials: string[];
      label: string | null;
    }
  | { kind: "remove"; challenge: string; rpId: string; credentialId: string; allowCredentials: string[] };

/** A terminal command's ceremony, offered on the console's passkey page. */
export interface PasskeyDesk {
  /** The ceremony waiting for the person; undefined once it is done. */
  ceremony(): PasskeyCeremony | undefined;
  /**
   * The page's answer (the authenticator's response, base64url parts) made on `origin`:
   * resolves with what to tell the person once it is done, rejects with an ApiError otherwise.
   */
  answer(body: Record<string, unknown>, origin: string): Promise<string>;
}

/** One one-time login (10 minutes), in the two forms it can reach a person; the first use wins. */
export interface ConsoleLogin {
  /** <origin>/login?token=…&next=<path>: a link to print, never to put on a command line. */
  url: string;
  /**
   * Writes the sign-in page for the same token (once; mode 0600 under <home>/console/) and
   * resolves with its file:// URL and path: what an opener or a host is handed instead of
   * the link. The page goes when the token is used, expires, or the console closes.
   */
  page(): Promise<{ url: string; path: string }>;
}

export interface ConsoleHandle {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  /** Mints a one-time login that lands on `next` (a path of the console; else "/"). */
  login(next?: string): ConsoleLogin;
  /** login(next).url */
  loginUrl(next?: string): string;
  /**
   * A one-time code (5 minutes) that signs a browser in on `next`, typed at `url`
   * (<origin>/approve, which holds no secret): for hosts that open links inside themselves,
   * where a `file://` sign-in page would show its token.
   */
  codeLogin(next?: string): { url: string; code: string };
  close(): Promise<void>;
}
