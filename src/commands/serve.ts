/**
 * `paid-actions-mcp serve` (the default): the MCP server over stdio, in both protocol eras
 * (a 2025 client opens with `initialize`, a 2026-07-28 one with `server/discover`; the
 * SDK's dual-era entry pins one server instance per connection). stdout carries JSON-RPC
 * only; everything for humans goes to stderr.
 *
 * The streams, or a transport, and the stop signal are arguments, so tests serve in one
 * process over linked in-memory transports; the CLI passes the process's own.
 */
import type { Readable, Writable } from "node:stream";
import type { JSONRPCMessage, Transport, TransportSendOptions } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { prepareServing } from "../app/serving.js";
import { markDroppedKeys } from "../mcp/guards.js";
import { createMcpSurface, type McpSurface } from "../mcp/server.js";

export interface ServeIo {
  /** The JSON-RPC channel; defaults to stdio over `stdin` / `stdout`. */
  transport?: Transport;
  stdin?: Readable;
  stdout?: Writable;
  /** Where the log lines go. */
  stderr: Writable;
  /** Aborted when the server must stop (SIGINT, SIGTERM). */
  signal?: AbortSignal;
  /** Receives the surface once it is built (tests reach the catalog through it). */
  onSurface?: (surface: McpSurface) => void;
  /** How long a tool call waits for a person's decision before it answers approval_required (default 45 s). */
  approvalTimeoutMs?: number;
}

/** The process's own streams and signals. */
export function processIo(): ServeIo {
  // Nothing but JSON-RPC may reach stdout: whatever a dependency prints goes to stderr.
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const stop = new AbortController();
  process.once("SIGINT", () => stop.abort("SIGINT"));
  process.once("SIGTERM", () => stop.abort("SIGTERM"));
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, signal: stop.signal };
}

/**
 * A transport that also tells us when it closed (the SDK's entry owns its onclose), and marks
 * a tools/call whose arguments carry keys the SDK's parsing would drop (guards.ts).
 */
class Watched implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  constructor(
    private readonly inner: Transport,
    closed: () => void,
  ) {
    inner.onclose = () => {
      this.onclose?.();
      closed();
    };
    inner.onerror = (e) => this.onerror?.(e);
    inner.onmessage = (m, extra) => this.onmessage?.(markDroppedKeys(m), extra);
  }
  start = () => this.inner.start();
  send = (m: JSONRPCMessage, o?: TransportSendOptions) => this.inner.send(m, o);
  close = () => this.inner.close();
  setProtocolVersion = (v: string) => this.inner.setProtocolVersion?.(v);
}

export async function serve(env: NodeJS.ProcessEnv, version: string, io: ServeIo = processIo()): Promise<number> {
  const log = (line: string) => void io.stderr.write(`[paid-actions-mcp] ${line}\n`);

  const delay = env.PAID_ACTIONS_SANDBOX_DELAY_MS;
  const providerDelayMs = delay !== undefined && /^\d{1,7}$/.test(delay) ? Number(delay) : undefined;
  const serving = prepareServing({ env, log, sandbox: providerDelayMs !== undefined ? { providerDelayMs } : {} });
  if (!serving.configResult.ok) {
    log(
      `configuration problems — every paying tool will refuse until they are fixed: ${serving.configResult.issues.map((i) => `${i.key}: ${i.message}`).join("; ")}`,
    );
  }
  const surface = createMcpSurface({
    host: serving.host,
    version,
    log,
    approvalTimeoutMs: io.approvalTimeoutMs,
    onStarted: (pa) => {
      const sandbox = serving.started()?.sandbox;
      if (sandbox)
        log(
          `sandbox mode: ${sandbox.owned ? "started" : "reusing"} the embedded reference service at ${sandbox.info.baseUrl}`,
        );
      log(
        `started; journal: ${pa.journal.kind} at ${pa.journal.location}${pa.config ? "" : " (configuration invalid: nothing will be paid)"}`,
      );
    },
  });
  io.onSurface?.(surface);

  let stopping: Promise<void> | undefined;
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const stop = (why: string): Promise<void> =>
    (stopping ??= (async () => {
      // A start in flight (a fresh home's sandbox being made) ends first, and its lines with it.
      await serving.stopStarting();
      log(`stopping (${why})`);
      try {
        await handle.close().catch(() => undefined);
        await surface.close();
        await serving.close();
      } finally {
        finished();
      }
    })());

  const transport = new Watched(
    io.transport ?? new StdioServerTransport(io.stdin, io.stdout),
    () => void stop("the client closed the connection"),
  );
  const handle = serveStdio(surface.factory, { transport, onerror: (e) => log(`protocol: ${e.message}`) });
  if (io.signal?.aborted) void stop(String(io.signal.reason));
  io.signal?.addEventListener("abort", () => void stop(String(io.signal?.reason ?? "stopped")), { once: true });
  await done;
  return 0;
}
