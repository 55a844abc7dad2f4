/**
 * Helpers for end-to-end MCP tests: the BUILT CLI (`node dist/cli.js serve`) launched over
 * real stdio by the SDK's Client + StdioClientTransport, exactly as a host launches it, each
 * on its own fresh PAID_ACTIONS_HOME; plus the other CLI commands as separate processes, and
 * a look at the embedded sandbox the server runs (through its sandbox.json).
 */
import { execFile, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js";
import { CLI_PATH, PROJECT_ROOT } from "./process.js";
import { waitFor } from "./wait.js";

export { CLI_PATH, PROJECT_ROOT, ensureBuilt } from "./process.js";

/** The paid call most tests make: 0.288 USDC. */
export const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const;
export const SMALL_SERVER_PRICE = "0.288";
/** 89 USDC: above the default per-call limit of 5 USDC. */
export const COMPANY = {
  jurisdiction: "US-DE",
  companyType: "llc",
  name: "Demo Robotics LLC",
  owners: [{ type: "individual", fullName: "Ada Lovelace", country: "GB" }],
} as const;

const homes = new Set<string>();
const servers = new Set<McpServerProcess>();

/** A fresh, empty PAID_ACTIONS_HOME; removed by cleanupAll(). */
export function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), "pam-mcp-"));
  homes.add(home);
  return home;
}

/** The environment the server gets: nothing from this process but PATH. */
export function serverEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home, ...extra };
}

export interface StartOptions {
  /** Defaults to a fresh home. */
  home?: string;
  /** The embedded sandbox's provider delay (PAID_ACTIONS_SANDBOX_DELAY_MS). */
  delayMs?: number;
  /** More environment (limits: PAID_ACTIONS_MAX_PER_CALL, ...). */
  env?: Record<string, string>;
  /** Declare form elicitation and answer each request with this handler. */
  elicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>;
  /** Which elicitation modes the client declares with `elicit` (default: form only). */
  elicitModes?: ("form" | "url")[];
  /** Connect timeout (default 20 s). */
  timeoutMs?: number;
}

export interface McpServerProcess {
  client: Client;
  transport: StdioClientTransport;
  home: string;
  pid: number;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /** Resolves when the server process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Closes the client (ends the server's stdin); resolves once the process is gone. */
  close(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Launches `node dist/cli.js serve` with the SDK's stdio transport and connects a Client. */
export async function startServer(o: StartOptions = {}): Promise<McpServerProcess> {
  const home = o.home ?? freshHome();
  const env = serverEnv(home, {
    ...(o.delayMs !== undefined ? { PAID_ACTIONS_SANDBOX_DELAY_MS: String(o.delayMs) } : {}),
    ...(o.env ?? {}),
  });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, "serve"],
    env,
    cwd: PROJECT_ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  const client = new Client(
    { name: "e2e-test-agent", version: "1.0.0" },
    {
      capabilities: o.elicit
        ? { elicitation: Object.fromEntries((o.elicitModes ?? ["form"]).map((m) => [m, {}])) }
        : {},
    },
  );
  if (o.elicit) {
    const handler = o.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (request) => handler(request));
  }
  await withTimeout(client.connect(transport), o.timeoutMs ?? 20_000, `connecting to the server (stderr: ${stderr})`);
  // The transport keeps its child private; the test needs to see that it really exits.
  const child = (transport as unknown as { _process?: ChildProcess })._process;
  if (!child?.pid) throw new Error("the transport started no process");
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  const server: McpServerProcess = {
    client,
    transport,
    home,
    pid: child.pid,
    stderr: () => stderr,
    exited,
    async close() {
      servers.delete(server);
      await client.close().catch(() => undefined);
      const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  servers.add(server);
  return server;
}

/** Closes every server still open and removes every home these helpers made. */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...servers].map((s) => s.close()));
  for (const home of homes) rmSync(home, { recursive: true, force: true });
  homes.clear();
}

/** structuredContent of a tool result, loosely typed for assertions. */
export function sc(result: unknown): any {
  return (result as CallToolResult).structuredContent;
}

/** The concatenated text content of a tool result. */
export function text(result: unknown): string {
  return ((result as CallToolResult).content ?? [])
    .filter((c): c is { type: "text"; text: string } => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

/** Calls a tool with a bounded wait. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 20_000,
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs })) as CallToolResult;
}

/** Reads a JSON resource. */
export async function readJson(client: Client, uri: string): Promise<any> {
  const res = await client.readResource({ uri }, { timeout: 10_000 });
  const first = res.contents[0] as { text?: string; uri: string; mimeType?: string } | undefined;
  if (!first?.text) throw new Error(`resource ${uri} has no text content`);
  return JSON.parse(first.text);
}

export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node dist/cli.js <args>` as a separate process with exactly this environment. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_PATH, ...args],
      { cwd: PROJECT_ROOT, env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error
          ? typeof (error as { code?: unknown }).code === "number"
            ? (error as { code: number }).code
            : null
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** What the embedded sandbox under this home wrote about itself. */
export function sandboxInfo(home: string): { baseUrl: string; apiKey: string } {
  return JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as { baseUrl: string; apiKey: string };
}

/**
 * sandbox.json, once the server has started its sandbox. A first tools/list does not wait for
 * the sandbox (in sandbox mode it answers from the catalog this build ships), so a test that
 * reaches the service right after one waits here.
 */
export async function sandboxStarted(home: string, timeoutMs = 20_000): Promise<{ baseUrl: string; apiKey: string }> {
  await waitFor(() => existsSync(join(home, "sandbox", "sandbox.json")), {
    timeoutMs,
    what: `sandbox.json under ${home}`,
  });
  return sandboxInfo(home);
}

/** GET on the embedded sandbox's v1 API (the service side, not the MCP server's journal). */
export async function serviceGet(home: string, path: string): Promise<any> {
  const info = await sandboxStarted(home);
  const res = await fetch(`${info.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${info.apiKey}` },
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/** The amount as a number, for comparing decimals that may be written "0.288" or "0.288000". */
export const usdc = (s: unknown): number => Number(s);
