/**
 * What each part of the MCP surface is handed. The surface lives for the whole process; the
 * SDK builds one `Server` per connection (and one for a client's discarded probe) from it.
 *
 * Nothing slow happens before the first answer: `McpHost` gives what tools/list needs at
 * once (the configuration's facts, the cached catalog, in sandbox mode the sandbox's own
 * catalog), and `start()` brings up
 * the rest — the embedded sandbox, the engine, the reconciler, the resume of unfinished
 * purchases — on the first request that needs it, never for a probe.
 */
import type { ServerContext } from "@modelcontextprotocol/server";
import type { Config, Engine, JournalStore, limitsView, TranscriptLog } from "../engine/index.js";
import type { CatalogRow } from "./catalog.js";
import type { ApprovalWaits } from "./waits.js";

/** How the person reaches the console's page from a host's link: a sign-in page by path, or a typed code. */
export type LinkHow = "page" | "code";

/** A way in to the console's page for one payment, as a host is handed it. */
export interface ApprovalLink {
  /** A file:// sign-in page (how "page"), or the console's /approve page (how "code"). */
  url: string;
  /** The one-time code to type at `url` (how "code"). */
  code?: string;
}

/** What a request handler gets besides the request: signal, progress token, notify, envelope. */
export type RequestCtx = ServerContext;

export type LimitsView = ReturnType<typeof limitsView>;

/** Everything a paid call needs, once started (assembled by the app layer). */
export interface McpPaidActions {
  engine: Engine;
  journal: JournalStore;
  transcripts: TranscriptLog;
  config?: Config;
}

/** What the app layer hands the MCP surface: cheap facts now, the rest on `start()`. */
export interface McpHost {
  /** The embedded reference service is the service (no real money). */
  sandbox: boolean;
  /** The human's limits, for the tools' descriptions (null when the configuration is invalid). */
  limits: LimitsView;
  /** The service the catalog cache is kept for. */
  service: string;
  /** The journal, opened on first use (no sandbox, no network). */
  journal(): Promise<JournalStore>;
  /**
   * The catalog as last fetched, from a snapshot file kept beside the journal, so that the
   * first tools/list needs neither SQLite nor the service; undefined when there is none
   * for this service.
   */
  catalogSnapshot(): CatalogRow[] | undefined;
  /** Keeps the snapshot in step with the journal's cached catalog. */
  saveCatalogSnapshot(rows: CatalogRow[], now: number): void;
  /**
   * In sandbox mode only, where the catalog is the product's own: the catalog the embedded
   * reference service serves, as a cached catalog's rows, read from this build without
   * starting the sandbox or asking it over HTTP — so that the first tools/list on a fresh
   * home is answered at once. Once the runtime is up it is revalidated against the service
   * like any cached catalog. Absent when a service is configured.
   */
  builtInCatalog?(): Promise<CatalogRow[]>;
  /** Brings up everything else, once; a failed start is tried again by the next call. */
  start(): Promise<McpPaidActions>;
  /** The key that seals approval state handed to clients (kept in the home dir, 32+ bytes). */
  stateKey(): Uint8Array;
  /**
   * A way in to the console's page for one payment, where the person approves or declines it
   * (the console starts in this process on first use); for hosts that open URLs (URL-mode
   * elicitation). It holds no secret a command line could show: for a host that opens links
   * with the OS (`how` "page"), the file:// URL of a one-time sign-in page only this user can
   * read; for one that opens links inside itself ("code": VS Code would show that page's
   * source, token included), the console's http://127.0.0.1:<port>/approve page and a
   * one-time code the person types there. Absent when this host offers none.
   */
  approvalPage?(approvalId: string, how: LinkHow): Promise<ApprovalLink | undefined>;
  /**
   * Brings a waiting approval to the person's desktop when their host cannot ask them (no
   * elicitation): a notification saying `notice`, and the console's page for it opened in
   * their browser by the path of a one-time sign-in page (never a token on a command line) —
   * at most once per approval; a later call for the same approval resolves as the first did.
   * Rejects when it could not open the page. Absent when PAID_ACTIONS_OPEN_APPROVALS is
   * `never` or no desktop session is there.
   */
  showApproval?(approvalId: string, notice: { title: string; body: string }): Promise<void>;
  /**
   * Where calls record that they wait for a person, shared with the console this process
   * serves (it tells the person whether a call takes the decision now); absent: the surface
   * keeps its own.
   */
  approvalWaits?: ApprovalWaits;
}

export interface McpContext {
  host: McpHost;
  sandbox: boolean;
  /** Said to the agent in sandbox mode (with a leading space); "" otherwise. */
  sandboxNote: string;
  now: () => number;
  log: (line: string) => void;
  /** The started runtime (memoized start()). */
  runtime(): Promise<McpPaidActions>;
  /** Removes secrets from text an agent will read (known once started). */
  scrub: (s: string) => string;
  /** True once close() has begun: background work stops writing results. */
  isClosed: () => boolean;
  /**
   * How long a call that waits for a person (the host's question, the console's page) waits,
   * from its arrival, before it answers approval_required (waiting.ts).
   */
  approvalWaitMs: number;
  /** The calls of this process waiting for a person, by approval. */
  waits: ApprovalWaits;
}
