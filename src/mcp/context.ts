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
   * A URL that signs the person in to the console's page for one payment, where they approve
   * or decline it (the console starts in this process on first use); for hosts that open
   * URLs (URL-mode elicitation). It holds no secret: it is the file:// URL of a one-time
   * sign-in page only this user can read. Absent when this host offers none.
   */
  approvalPage?(approvalId: string): Promise<string | undefined>;
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
