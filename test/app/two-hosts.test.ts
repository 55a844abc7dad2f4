/**
 * Several processes on one home in sandbox mode share the embedded sandbox the first one
 * started. When that one is gone, the others take the service over and go on paying: on
 * the same port when they can (every URL stays valid), else on a new one that every URL of
 * the process follows (service client, payer RPC, chain port).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPaidActions, rpcChain, type PaidActions } from "../../src/app/index.js";
import { Execution } from "../../src/domain/wire.js";
import { sandboxOwner } from "../../src/sandbox/index.js";
import { SMALL_SERVER } from "../helpers/engine.js";
import { call, cleanupAll, sandboxInfo, sc, startServer, text } from "../helpers/mcp.js";
import { ensureBuilt, killAllStarted, startCliSandbox } from "../helpers/process.js";
import { pollUntil } from "../helpers/wait.js";

beforeAll(() => ensureBuilt(), 90_000);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  killAllStarted();
  await cleanupAll();
});

function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "pam-two-hosts-"));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** A server on 127.0.0.1:port that drops every connection at once (the port is taken). */
async function occupy(port: number): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => ok());
  });
  cleanups.push(() => new Promise<void>((ok) => server.close(() => ok())));
  return server;
}

async function open(home: string, lines: string[], watchMs = 0): Promise<PaidActions> {
  const pa = await openPaidActions({
    env: { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home },
    log: (line) => lines.push(line),
    reconcile: false,
    sandboxWatch: { intervalMs: watchMs },
  });
  cleanups.push(() => pa.close());
  return pa;
}

const portOf = (url: string) => Number(new URL(url).port);

describe("app: two processes on one home in sandbox mode", () => {
  it("the one that reused the sandbox takes it over on the same port when its owner stops, and goes on paying; it stops it on close", async () => {
    const home = tempHome();
    const owner = await startCliSandbox(join(home, "sandbox"));
    const lines: string[] = [];
    const pa = await open(home, lines);
    expect(pa.sandbox).toMatchObject({
      owned: false,
      info: { baseUrl: owner.info.baseUrl, apiKey: owner.info.apiKey },
    });

    const before = await pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });
    expect(before.executionId).toMatch(/^exe_/);

    await owner.stop("SIGTERM");
    const after = await pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, durationHours: 48 } });
    expect(after.executionId).toMatch(/^exe_/);
    expect(after.executionId).not.toBe(before.executionId);

    // Same port, same key, same agent key and owner: nothing the process holds had to change.
    expect(pa.sandbox).toMatchObject({ owned: true, info: owner.info });
    expect(pa.config).toMatchObject({
      baseUrl: owner.info.baseUrl,
      apiKey: owner.info.apiKey,
      rpcUrl: owner.info.rpcUrl,
      walletPath: owner.info.agentKeyPath,
      owner: owner.info.owner,
    });
    expect(sandboxOwner(join(home, "sandbox"))).toBe(process.pid);
    expect(lines.filter((l) => /took it over/.test(l))).toEqual([
      `the embedded sandbox's owner (pid ${owner.pid}) is gone: this process took it over at ${owner.info.baseUrl}`,
    ]);

    // The execution paid before the takeover is still known to the service.
    const res = await pa.client!.call("GET", `/executions/${before.executionId}`, { schema: Execution });
    expect(res.ok).toBe(true);

    await pa.close();
    expect(sandboxOwner(join(home, "sandbox"))).toBeUndefined();
  });

  it("when the owner dies and its port is taken, the service moves to a new port and every URL of the process follows", async () => {
    const home = tempHome();
    const owner = await startCliSandbox(join(home, "sandbox"));
    const lines: string[] = [];
    const pa = await open(home, lines);
    const oldPort = portOf(owner.info.baseUrl);
    expect((await pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER })).executionId).toMatch(/^exe_/);
    const chain = await rpcChain(pa.config!)();

    await owner.stop("SIGKILL");
    await occupy(oldPort);
    const paid = await pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER, durationHours: 48 } });
    expect(paid.executionId).toMatch(/^exe_/);

    const moved = pa.sandbox!.info;
    expect(pa.sandbox!.owned).toBe(true);
    expect(portOf(moved.baseUrl)).not.toBe(oldPort);
    expect(moved.apiKey).toBe(owner.info.apiKey);
    expect(pa.config).toMatchObject({ baseUrl: moved.baseUrl, rpcUrl: moved.rpcUrl, apiKey: owner.info.apiKey });
    expect(pa.client!.baseUrl).toBe(moved.baseUrl);
    expect(JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")).baseUrl).toBe(moved.baseUrl);
    expect(
      lines.some((l) => l.includes(`took it over at ${moved.baseUrl} (port ${oldPort} is taken: the service moved)`)),
    ).toBe(true);

    // A chain port made before the move reads the moved RPC: the payment is on the ledger.
    const tx = await chain.transaction(paid.payment.transaction!);
    expect(tx?.failed).toBe(false);
  });

  it("the periodic check takes the sandbox over without waiting for a request", async () => {
    const home = tempHome();
    const owner = await startCliSandbox(join(home, "sandbox"));
    const lines: string[] = [];
    const pa = await open(home, lines, 100);
    expect(pa.sandbox!.owned).toBe(false);
    await owner.stop("SIGKILL");
    await pollUntil(
      () => pa.sandbox!.owned,
      (owned) => owned,
      { intervalMs: 50 },
    );
    expect(pa.sandbox).toMatchObject({ owned: true, info: { baseUrl: owner.info.baseUrl } });
    expect(lines.filter((l) => /took it over/.test(l))).toHaveLength(1);
  });
});

describe("mcp e2e: servers on one home in sandbox mode", () => {
  it("when the server that runs the sandbox exits, the others' next paid calls succeed (one takes it over, the other follows)", async () => {
    const first = await startServer({ delayMs: 500 });
    const second = await startServer({ home: first.home, delayMs: 500 });
    const third = await startServer({ home: first.home, delayMs: 500 });
    for (const s of [first, second, third]) {
      const r = await call(s.client, "servers_provision", { ...SMALL_SERVER });
      expect(r.isError ?? false, text(r)).toBe(false);
      expect(sc(r).executionId).toMatch(/^exe_/);
    }
    expect(sandboxOwner(join(first.home, "sandbox"))).toBe(first.pid);

    expect(await first.close()).toEqual({ code: 0, signal: null });
    const results = await Promise.all(
      [second, third].map((s) => call(s.client, "servers_provision", { ...SMALL_SERVER, durationHours: 48 }, 30_000)),
    );
    for (const r of results) {
      expect(r.isError ?? false, text(r)).toBe(false);
      expect(sc(r).executionId).toMatch(/^exe_/);
    }
    const runner = sandboxOwner(join(first.home, "sandbox"));
    expect([second.pid, third.pid]).toContain(runner);
    const [taker, follower] = runner === second.pid ? [second, third] : [third, second];
    expect(taker.stderr()).toMatch(/this process took it over at/);
    expect(follower.stderr()).not.toMatch(/took it over/);
    expect(sandboxInfo(first.home).baseUrl).toBeTruthy();
  }, 90_000);
});
