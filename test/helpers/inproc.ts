/**
 * The MCP server served in this process — `serve()` exactly as the CLI runs it, with its
 * SDK dual-era stdio entry — over a linked in-memory transport, with the official v2
 * client connected in either protocol era: "legacy" (the 2025 `initialize` handshake) or
 * "modern" (pinned to 2026-07-28: `server/discover`, per-request envelopes).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { Client, type CallToolResult, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { afterAll, afterEach, beforeAll } from "vitest";
import { serve } from "../../src/commands/serve.js";
import type { McpSurface } from "../../src/mcp/server.js";
import { serviceEnv } from "./engine.js";
import { startTestSandbox, type TestSandbox } from "./sandbox.js";

export type Era = "legacy" | "modern";
export const ERAS: readonly Era[] = ["legacy", "modern"];

export interface InProcOptions {
  env: Record<string, string>;
  era: Era;
  /** Declare form elicitation and answer each question with this handler. */
  elicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>;
  /** Handle input_required results by hand (modern era): the call returns them. */
  manualInput?: boolean;
  /** Which elicitation modes the client declares with `elicit` (default: form only). */
  elicitModes?: ("form" | "url")[];
  /** How long the server waits for a person's answer or decision (serve's approvalTimeoutMs). */
  approvalTimeoutMs?: number;
  /** The client's `clientInfo.name` (default `inproc-<era>`): a host's own name, to be treated as that host. */
  clientName?: string;
}

export interface InProcServer {
  client: Client;
  surface: McpSurface;
  /** What the server logged. */
  log(): string;
  /** Closes the client; resolves when serve() has returned. */
  close(): Promise<void>;
}

export async function startInProcess(o: InProcOptions): Promise<InProcServer> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const stderr = new PassThrough();
  let log = "";
  stderr.on("data", (c: Buffer) => (log += c.toString()));
  let surface: McpSurface | undefined;
  const served = serve(o.env, "test", {
    transport: serverSide,
    stderr,
    onSurface: (s) => (surface = s),
    ...(o.approvalTimeoutMs ? { approvalTimeoutMs: o.approvalTimeoutMs } : {}),
  });
  const modes = Object.fromEntries((o.elicitModes ?? ["form"]).map((m) => [m, {}]));
  const client = new Client(
    { name: o.clientName ?? `inproc-${o.era}`, version: "1.0.0" },
    {
      capabilities: o.elicit ? { elicitation: modes } : {},
      ...(o.era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      ...(o.manualInput ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  if (o.elicit) {
    const handler = o.elicit;
    client.setRequestHandler("elicitation/create", async (request) => handler(request));
  }
  await client.connect(clientSide);
  if (client.getProtocolEra() !== o.era) throw new Error(`connected in era ${client.getProtocolEra()}, not ${o.era}`);
  return {
    client,
    surface: surface!,
    log: () => log,
    async close() {
      await client.close().catch(() => undefined);
      await served;
    },
  };
}

/** Calls a tool with a bounded wait. */
export function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 20_000,
): Promise<CallToolResult> {
  return client.callTool({ name, arguments: args }, { timeout: timeoutMs });
}

/**
 * For a test file: one real sandbox on loopback, a fresh home per server, and every server
 * started through `start` closed after each test.
 */
export function inProcessSuite(o: { prefix: string; providerDelayMs: number }) {
  let t: TestSandbox | undefined;
  const homes: string[] = [];
  const open: InProcServer[] = [];
  beforeAll(async () => {
    t = await startTestSandbox({ providerDelayMs: o.providerDelayMs });
  }, 60_000);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await t?.close();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });
  const sandbox = () => {
    if (!t) throw new Error("the suite's sandbox has not started");
    return t;
  };
  return {
    sandbox,
    /** The environment of a server on a fresh home, pointed at the sandbox as a configured service. */
    env(extra: Record<string, string> = {}): Record<string, string> {
      const home = mkdtempSync(join(tmpdir(), `${o.prefix}-`));
      homes.push(home);
      return { ...serviceEnv(sandbox(), home), ...extra };
    },
    async start(options: InProcOptions): Promise<InProcServer> {
      const s = await startInProcess(options);
      open.push(s);
      return s;
    },
  };
}
