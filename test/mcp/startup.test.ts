/**
 * An answer at once, over real stdio with raw JSON-RPC lines (the built CLI, a fresh home,
 * sandbox mode): `server/discover` and `initialize` are answered before the embedded
 * sandbox exists; a probe instance (discover, then closed) starts nothing, resumes
 * nothing and leaves no sandbox behind; tools/list from a cached catalog comes before the
 * runtime has finished starting; on a fresh home, tools/list lists the sandbox's whole
 * catalog while the sandbox cannot even start, and the same tools once it is up.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { toolNameFor } from "../../src/mcp/catalog.js";
import { ACTIONS } from "../../src/sandbox/providers/catalog.js";
import { cleanupAll, CLI_PATH, ensureBuilt, freshHome, PROJECT_ROOT, serverEnv } from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
};

interface Raw {
  child: ChildProcessWithoutNullStreams;
  send(message: unknown): void;
  /** The response to request `id`, with the ms since spawn when it arrived. */
  response(id: number, timeoutMs?: number): Promise<{ message: any; ms: number }>;
  stderr(): string;
  /** ms since spawn at which stderr first contained `text`, if it has. */
  logged(text: string): number | undefined;
  /** The methods of the notifications the server sent, in order. */
  notifications: string[];
  exited: Promise<number | null>;
}

function spawnRaw(home: string): Raw {
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI_PATH], { cwd: PROJECT_ROOT, env: serverEnv(home) });
  const responses = new Map<number, { message: any; ms: number }>();
  const waiters = new Map<number, () => void>();
  const notifications: string[] = [];
  let buffered = "";
  child.stdout.on("data", (c: Buffer) => {
    buffered += c.toString();
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const message = JSON.parse(line);
      if (message.id === undefined && typeof message.method === "string") notifications.push(message.method);
      if (message.id !== undefined) {
        responses.set(message.id, { message, ms: performance.now() - t0 });
        waiters.get(message.id)?.();
      }
    }
  });
  let stderr = "";
  const logTimes: { at: number; text: string }[] = [];
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
    logTimes.push({ at: performance.now() - t0, text: stderr });
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    send: (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...(message as object) })}\n`),
    response: (id, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const done = () => resolve(responses.get(id)!);
        if (responses.has(id)) return done();
        const timer = setTimeout(
          () => reject(new Error(`no response to ${id} in ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        waiters.set(id, () => {
          clearTimeout(timer);
          done();
        });
      }),
    stderr: () => stderr,
    logged: (text) => logTimes.find((l) => l.text.includes(text))?.at,
    notifications,
    exited,
  };
}

async function closeRaw(raw: Raw): Promise<number | null> {
  raw.child.stdin.end();
  const timer = setTimeout(() => raw.child.kill("SIGKILL"), 10_000);
  try {
    return await raw.exited;
  } finally {
    clearTimeout(timer);
  }
}

const INITIALIZE = {
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("start-up", () => {
  it("a probe (server/discover, then closed) is answered, and starts no sandbox and resumes nothing", async () => {
    const home = freshHome();
    const raw = spawnRaw(home);
    raw.send({ id: 1, method: "server/discover", params: { _meta: MODERN_META } });
    const { message } = await raw.response(1);
    expect(message.result.supportedVersions).toContain("2026-07-28");
    expect(message.result.capabilities.tools).toBeDefined();
    expect(message.result.capabilities.tasks).toBeUndefined();
    expect(await closeRaw(raw)).toBe(0);
    expect(existsSync(join(home, "sandbox"))).toBe(false);
    expect(existsSync(join(home, "journal.sqlite"))).toBe(false);
    expect(raw.stderr()).not.toMatch(/sandbox mode|started;/);
  });

  it("initialize is answered before the sandbox starts; tools/list (cached catalog) before start-up has finished", async () => {
    const home = freshHome();
    const first = spawnRaw(home);
    first.send(INITIALIZE);
    await first.response(1);
    expect(existsSync(join(home, "sandbox", "sandbox.json"))).toBe(false); // nothing started for the handshake
    first.send({ method: "notifications/initialized" });
    first.send({ id: 2, method: "tools/list" });
    const listed = await first.response(2);
    expect(listed.message.result.tools.map((t: { name: string }) => t.name)).toContain("servers_provision");
    expect(await closeRaw(first)).toBe(0);

    // A second start on the same home: the catalog is cached now.
    const second = spawnRaw(home);
    second.send(INITIALIZE);
    second.send({ method: "notifications/initialized" });
    second.send({ id: 2, method: "tools/list" });
    const cached = await second.response(2);
    expect(cached.message.result.tools.map((t: { name: string }) => t.name)).toEqual(
      listed.message.result.tools.map((t: { name: string }) => t.name),
    );
    await expect.poll(() => second.logged("started;"), { timeout: 20_000 }).toBeDefined();
    expect(cached.ms).toBeLessThan(second.logged("started;")!);
    expect(await closeRaw(second)).toBe(0);

    // A 2026 client sends tools/list straight away, with its envelope.
    const modern = spawnRaw(home);
    modern.send({ id: 7, method: "tools/list", params: { _meta: MODERN_META } });
    const modernList = await modern.response(7);
    expect(modernList.message.result.tools.map((t: { name: string }) => t.name)).toEqual(
      listed.message.result.tools.map((t: { name: string }) => t.name),
    );
    expect(modernList.message.result.ttlMs).toBeGreaterThan(0);
    expect(modernList.message.result.cacheScope).toBe("private");
    expect(await closeRaw(modern)).toBe(0);
  });

  it("a fresh home's first tools/list lists the sandbox's whole catalog without the sandbox; the same tools once it is up", async () => {
    const home = freshHome();
    // The sandbox's lock, held by this (live) process: the server's embedded sandbox cannot
    // start — nor its catalog be fetched — until the lock is given back.
    const lock = join(home, "sandbox", "sandbox.pid");
    mkdirSync(join(home, "sandbox"), { recursive: true });
    writeFileSync(lock, String(process.pid));
    const raw = spawnRaw(home);
    raw.send(INITIALIZE);
    await raw.response(1);
    raw.send({ method: "notifications/initialized" });
    raw.send({ id: 2, method: "tools/list" });
    const first = (await raw.response(2)).message.result.tools as { name: string }[];
    const names = first.map((t) => t.name);
    for (const a of ACTIONS) expect(names).toContain(toolNameFor(a.name));
    expect(existsSync(join(home, "sandbox", "sandbox.json"))).toBe(false);
    expect(raw.stderr()).not.toContain("started;");

    // The lock given back: the sandbox starts, the catalog is revalidated against it (its
    // snapshot is written then), and the list is the same: no list_changed.
    rmSync(lock);
    await expect.poll(() => raw.logged("started;"), { timeout: 20_000 }).toBeDefined();
    await expect.poll(() => existsSync(join(home, "catalog-snapshot.json")), { timeout: 20_000 }).toBe(true);
    const snapshot = JSON.parse(readFileSync(join(home, "catalog-snapshot.json"), "utf8")) as {
      entries: { name: string }[];
    };
    expect(snapshot.entries.map((e) => e.name).sort()).toEqual(ACTIONS.map((a) => a.name).sort());
    raw.send({ id: 3, method: "tools/list" });
    expect((await raw.response(3)).message.result.tools).toEqual(first);
    expect(raw.notifications).not.toContain("notifications/tools/list_changed");
    expect(await closeRaw(raw)).toBe(0);
  });
});
