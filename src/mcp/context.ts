/**
 * What each part of the MCP surface is handed: the SDK server, the engine and its
 * neighbours, and the few facts about this run (sandbox or not, the clock, the log).
 * createMcpServer builds one per server; no module keeps state of its own.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Config } from "../engine/config.js";
import type { Engine } from "../engine/engine.js";
import type { Journal } from "../engine/journal/sqlite.js";
import type { ServiceClient } from "../engine/service-client.js";
import type { Transcripts } from "../engine/transcripts.js";

/** What a request handler gets besides the request: signal, progress token, notifications. */
export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What the MCP surface is built on (assembled by the app layer). */
export interface McpPaidActions {
  engine: Engine;
  journal: Journal;
  transcripts: Transcripts;
  client?: ServiceClient;
  config?: Config;
}

export interface McpContext {
  server: Server;
  pa: McpPaidActions;
  engine: Engine;
  sandbox: boolean;
  /** Said to the agent in sandbox mode (with a leading space); "" otherwise. */
  sandboxNote: string;
  now: () => number;
  log: (line: string) => void;
  /** Removes secrets from text an agent will read. */
  scrub: (s: string) => string;
  /** True once close() has begun: background work stops writing results. */
  isClosed: () => boolean;
}
