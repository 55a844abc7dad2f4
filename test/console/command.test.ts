/**
 * `paid-actions-mcp console` as a person runs it, spawned from dist/: it prints its one-time
 * login link on stdout (and nothing secret on stderr), serves on 127.0.0.1 with no MCP server
 * running, stops with exit code 0 on SIGTERM, and refuses a bad or taken --port clearly.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/mcp.js";
import { CLI_PATH, ensureBuilt } from "../helpers/process.js";

let home: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  ensureBuilt();
  home = mkdtempSync(join(tmpdir(), "pam-console-cli-"));
}, 120_000);
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const env = () => ({ PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home });

/** Spawns the console and resolves with the first stdout line that names the console URL. */
function startCli(args: string[]): Promise<{
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}> {
  const child = spawn(process.execPath, [CLI_PATH, "console", "--no-open", ...args], {
    env: env(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 20 s; stdout: ${out}; stderr: ${err}`)), 20_000);
    child.stderr!.on("data", (c: Buffer) => (err += c));
    child.stdout!.on("data", (c: Buffer) => {
      out += c;
      const m = /^Console: (http:\/\/127\.0\.0\.1:\d+\/login\?token=\S+)\n.*works once.*\n/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, stdout: () => out, stderr: () => err, exited });
      }
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before printing the URL; stderr: ${err}`)));
  });
}

describe("paid-actions-mcp console", () => {
  it("prints the one-time link, serves it (no MCP server running), and exits 0 on SIGTERM", async () => {
    const c = await startCli([]);
    const token = new URL(c.url).searchParams.get("token")!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(c.stdout()).toMatch(/works once/);
    const login = await fetch(c.url, { redirect: "manual" });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const session = await fetch(new URL("/api/session", c.url), { headers: { cookie } });
    expect(session.status).toBe(200);
    expect(((await session.json()) as any).home).toBe(home);
    const approvals = await fetch(new URL("/api/approvals", c.url), { headers: { cookie } });
    expect(await approvals.json()).toEqual({ items: [] });
    expect((await fetch(c.url, { redirect: "manual" })).status).toBe(403);

    c.child.kill("SIGTERM");
    expect(await c.exited).toBe(0);
    expect(c.stderr()).not.toContain(token);
    expect(c.stdout().split(token).length).toBe(2); // printed once
  });

  it("--port N serves on that port; a taken port is a clear error (exit 1); an invalid one is a usage error (exit 2)", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const busy = await runCli(["console", "--no-open", "--port", String(taken)], env());
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(`port ${taken}`);
      expect(busy.stderr).toContain("--port");
      expect(busy.stdout).not.toContain("token=");
    } finally {
      await new Promise((r) => blocker.close(r));
    }
    const c = await startCli(["--port", String(taken)]);
    expect(new URL(c.url).port).toBe(String(taken));
    c.child.kill("SIGINT");
    expect(await c.exited).toBe(0);

    for (const bad of ["0", "65536", "80a"]) {
      const r = await runCli(["console", "--no-open", "--port", bad], env());
      expect(r.code, bad).toBe(2);
      expect(r.stderr, bad).toContain("--port");
    }
  });
});
