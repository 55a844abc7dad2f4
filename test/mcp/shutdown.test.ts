/**
 * A quiet shutdown: a client that closes the connection cuts short whatever the server was
 * doing in the background (the catalog's revalidation, the reconciler's polls, the resume of
 * an unfinished purchase, a paid call it no longer waits for), and nothing of that reaches
 * the host's server log. The built CLI over real stdio with the SDK's v1 client, sandbox
 * mode, short sessions closed at once; whatever the timing, stderr holds only the server's
 * own informational lines.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  CLI_PATH,
  cleanupAll,
  ensureBuilt,
  freshHome,
  PROJECT_ROOT,
  runCli,
  sc,
  serverEnv,
  SMALL_SERVER,
  startServer,
  type McpServerProcess,
} from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

/**
 * What no line of a quiet session may say. Whole words only: the ids and signatures the
 * informational lines carry (base58, base64url) never match by chance.
 */
const PROBLEM =
  /\b(errors?|fail(s|ed|ure)?|warn(s|ing)?|exception|cannot|could not|unable|refused|denied|not open|timed out|EPIPE|ECONN\w*)\b/i;

/**
 * The lines of `stderr` a quiet session must not have: any line that is not the server's own
 * (`[paid-actions-mcp] …`: a Node warning, a stack trace, a dependency's print) and any of
 * its own that reports a problem.
 */
function noise(stderr: string): string[] {
  return stderr
    .split("\n")
    .filter((line) => line.trim() !== "")
    .filter((line) => !line.startsWith("[paid-actions-mcp] ") || PROBLEM.test(line));
}

/** Closes the client and expects a clean exit and a quiet log; returns the log. */
async function closeQuietly(s: McpServerProcess): Promise<string> {
  const exit = await s.close();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(noise(s.stderr()), s.stderr()).toEqual([]);
  return s.stderr();
}

describe("shutdown: nothing on stderr for work a closing client cuts short", () => {
  it("the line rule catches what it must, and lets the informational lines through", () => {
    expect(noise("[paid-actions-mcp] catalog: refresh failed (The database connection is not open)\n")).toHaveLength(1);
    expect(noise("(node:1) ExperimentalWarning: SQLite is an experimental feature\n")).toHaveLength(1);
    expect(noise("    at Journal.saveCatalog (file:///x/dist/engine/journal/sqlite.js:10:5)\n")).toHaveLength(1);
    expect(
      noise(
        [
          "[paid-actions-mcp] sandbox mode: started the embedded reference service at http://127.0.0.1:40000/v1",
          "[paid-actions-mcp] [sandbox] settled 0.288 USDC for qt_errorFailWarn in 5errorFAILwarnXyZ",
          "[paid-actions-mcp] started; journal: sqlite at /tmp/pam/journal.sqlite",
          "[paid-actions-mcp] stopping (the client closed the connection)",
        ].join("\n"),
      ),
    ).toEqual([]);
  });

  it("initialize, tools/list, one paid call, close; then, on the same home, a read closed at once", async () => {
    const home = freshHome();
    const first = await startServer({ home });
    expect((await first.client.listTools()).tools.map((t) => t.name)).toContain("servers_provision");
    const paid = await call(first.client, "servers_provision", { ...SMALL_SERVER }, 60_000);
    expect(paid.isError, JSON.stringify(paid.structuredContent)).not.toBe(true);
    expect(sc(paid).payment.amount).toBe("0.288");
    const log = await closeQuietly(first);
    expect(log).toContain("[paid-actions-mcp] stopping (the client closed the connection)");

    // The execution is still pending at the provider: the reconciler follows it, and the
    // cached catalog is being revalidated, when this client closes.
    const second = await startServer({ home });
    await second.client.listTools();
    expect((await call(second.client, "get_spending")).isError).not.toBe(true);
    await closeQuietly(second);

    const executions = await runCli(["executions", "--json"], serverEnv(home));
    expect(executions.code, executions.stderr).toBe(0);
    expect(executions.stdout).toContain(sc(paid).executionId);
  }, 120_000);

  it("a paid call the client stops waiting for, then a server that resumes it, closed at once", async () => {
    const home = freshHome();
    for (const cutAfterMs of [0, 150, 400]) {
      const s = await startServer({ home });
      await s.client.listTools();
      void s.client
        .callTool({ name: "servers_provision", arguments: { ...SMALL_SERVER } }, undefined, { timeout: 60_000 })
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, cutAfterMs)); // the cut's moment is the input, not a sync
      await closeQuietly(s);
    }
    // Whatever those calls left unfinished, this server resumes in the background.
    const last = await startServer({ home });
    await last.client.listTools();
    await call(last.client, "list_executions");
    await closeQuietly(last);
  }, 120_000);

  it("a fresh home's first short session, stdin closed at once: nothing on stderr after 'stopping'", async () => {
    const opening = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: INITIALIZE },
      { jsonrpc: "2.0", method: "notifications/initialized" },
    ];
    const requests = [
      // A call that starts the runtime, whose sandbox is made while the server is told to stop.
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_spending", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", id: 2, method: "resources/list" },
    ];
    for (const request of requests) {
      const home = freshHome();
      const { code, stderr } = await session(home, [...opening, request]);
      expect(code, stderr).toBe(0);
      const lines = stderr.split("\n").filter((l) => l.trim() !== "");
      const at = lines.indexOf("[paid-actions-mcp] stopping (the client closed the connection)");
      expect(at, `${request.method}: ${stderr}`).toBeGreaterThanOrEqual(0);
      expect(lines.slice(at + 1), `${request.method}: ${stderr}`).toEqual([]);
      expect(noise(stderr), stderr).toEqual([]);
      if (request.method === "tools/call") {
        // The sandbox was made in that session, and said so before the server said it stops.
        expect(existsSync(join(home, "sandbox", "sandbox.json"))).toBe(true);
        expect(lines.slice(0, at).some((l) => l.includes("[sandbox] new sandbox in"))).toBe(true);
      }
    }
  }, 120_000);
});

const INITIALIZE = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "short", version: "1" } };

/** `serve` on `home` given `messages` on stdin, which then closes at once; its exit code and stderr. */
function session(home: string, messages: object[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI_PATH, "serve"], {
    cwd: PROJECT_ROOT,
    env: serverEnv(home),
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(messages.map((m) => `${JSON.stringify(m)}\n`).join(""));
  const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(killer);
      resolve({ code, stderr });
    }),
  );
}
