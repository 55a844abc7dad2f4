/**
 * stdout carries JSON-RPC only: raw newline-delimited JSON-RPC to `node dist/cli.js serve`
 * (no SDK on this side), and every line the server writes to stdout must be a JSON-RPC
 * message. stderr may carry logs.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CLI_PATH,
  cleanupAll,
  ensureBuilt,
  freshHome,
  PROJECT_ROOT,
  serverEnv,
  SMALL_SERVER,
  withTimeout,
} from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);

let child: ChildProcessWithoutNullStreams | undefined;
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  child = undefined;
  await cleanupAll();
});

describe("mcp e2e: stdout is JSON-RPC only", () => {
  it("every stdout line of a whole session parses as a JSON-RPC 2.0 message", async () => {
    const home = freshHome();
    const proc = spawn(process.execPath, [CLI_PATH, "serve"], {
      cwd: PROJECT_ROOT,
      env: serverEnv(home, { PAID_ACTIONS_SANDBOX_DELAY_MS: "300" }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    child = proc;
    let stdout = "";
    let stderr = "";
    const messages: any[] = [];
    const waiters: Array<() => void> = [];
    let pending = "";
    proc.stdout.setEncoding("utf8");
    proc.stdout.on("data", (chunk: string) => {
      stdout += chunk;
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        try {
          messages.push(JSON.parse(line));
        } catch {
          messages.push({ unparsable: line });
        }
        for (const w of waiters.splice(0)) w();
      }
    });
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      proc.once("exit", (code, signal) => resolve({ code, signal })),
    );

    const send = (message: unknown) =>
      proc.stdin.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`);
    const response = (id: number, timeoutMs = 20_000) =>
      withTimeout(
        new Promise<any>((resolve) => {
          const check = () => {
            const found = messages.find((m) => m && m.id === id && ("result" in m || "error" in m));
            if (found) resolve(found);
            else waiters.push(check);
          };
          check();
        }),
        timeoutMs,
        `the response to request ${id} (stderr: ${stderr.slice(-2000)})`,
      );

    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "raw-jsonrpc-test", version: "1.0.0" },
      },
    });
    const init = await response(1);
    expect(init.result.serverInfo.name).toBe("paid-actions-mcp");
    send({ jsonrpc: "2.0", method: "notifications/initialized" });

    send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
    const list = await response(2);
    expect(list.result.tools.map((t: any) => t.name)).toContain("servers_provision");

    send({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "servers_provision", arguments: { ...SMALL_SERVER } },
    });
    const paid = await response(3);
    expect(paid.result.isError ?? false).toBe(false);
    const uri = paid.result.structuredContent.resourceUri as string;

    send({ jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri } });
    const read = await response(4);
    expect(JSON.parse(read.result.contents[0].text).executionId).toBe(paid.result.structuredContent.executionId);

    // A subscription: its notifications are on stdout too, and are checked with the rest.
    send({ jsonrpc: "2.0", id: 8, method: "resources/subscribe", params: { uri } });
    expect((await response(8)).result).toEqual({});
    await withTimeout(
      new Promise<void>((resolve) => {
        const check = () =>
          messages.some((m) => m?.method === "notifications/resources/updated" && m.params?.uri === uri)
            ? resolve()
            : waiters.push(check);
        check();
      }),
      20_000,
      `notifications/resources/updated for ${uri}`,
    );

    // Invalid requests: an unknown method, a request with bad params, and a line that is not JSON.
    send({ jsonrpc: "2.0", id: 5, method: "no/such/method", params: {} });
    const unknown = await response(5);
    expect(typeof unknown.error.code).toBe("number");
    send({ jsonrpc: "2.0", id: 6, method: "resources/read", params: { uri: 42 } });
    const badParams = await response(6);
    expect(typeof badParams.error.code).toBe("number");
    send("this is not json {");
    // The server is still there after all that.
    send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_spending", arguments: {} } });
    const spending = await response(7);
    expect(Number(spending.result.structuredContent.spentTotal)).toBeCloseTo(0.288, 6);

    // The host goes away: stdin closes, the server exits by itself.
    proc.stdin.end();
    const exit = await withTimeout(exited, 10_000, "the server to exit after stdin closed");
    expect(exit.code).toBe(0);
    await withTimeout(
      new Promise<void>((resolve) =>
        proc.stdout.readableEnded ? resolve() : proc.stdout.once("end", () => resolve()),
      ),
      5_000,
      "stdout to end",
    );

    // Every line on stdout is a JSON-RPC 2.0 message.
    expect(stdout.endsWith("\n")).toBe(true);
    const lines = stdout.split("\n").slice(0, -1);
    expect(lines.length).toBeGreaterThanOrEqual(7);
    for (const line of lines) {
      let message: any;
      expect(() => (message = JSON.parse(line)), `not JSON: ${line.slice(0, 300)}`).not.toThrow();
      expect(message !== null && typeof message === "object" && !Array.isArray(message), line.slice(0, 300)).toBe(true);
      expect(message.jsonrpc, line.slice(0, 300)).toBe("2.0");
      const isResponse = "id" in message && ("result" in message || "error" in message);
      const isRequestOrNotification = typeof message.method === "string";
      expect(isResponse || isRequestOrNotification, line.slice(0, 300)).toBe(true);
    }
    // Logs went to stderr.
    expect(stderr).toMatch(/sandbox/);
  });
});
