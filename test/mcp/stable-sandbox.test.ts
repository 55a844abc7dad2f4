/**
 * The embedded sandbox keeps its port across launches on one home, as a host that starts a
 * server per command (the Inspector CLI) or restarts it needs: a URL an agent found in one
 * session is paid in the next, and `doctor` names the same origin. A port another program took
 * meanwhile is said on stderr (which port, that the sandbox moved, where to) and the new one
 * is kept for the launches after. The built CLI over real stdio, sandbox mode.
 */
import { createServer, type Server } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  cleanupAll,
  ensureBuilt,
  freshHome,
  runCli,
  sandboxInfo,
  sc,
  serverEnv,
  startServer,
  text,
} from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);

const occupied: Server[] = [];
afterEach(async () => {
  for (const s of occupied.splice(0)) await new Promise<void>((ok) => s.close(() => ok()));
  await cleanupAll();
});

/** Another program listening on 127.0.0.1:port. */
async function occupy(port: number): Promise<void> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => ok());
  });
  occupied.push(server);
}

const originOf = (home: string) => new URL(sandboxInfo(home).baseUrl).origin;

describe("mcp e2e: the embedded sandbox keeps its port across launches", () => {
  it("two launches on one home: the same origin, and a URL found in the first session is paid in the second", async () => {
    const home = freshHome();
    const first = await startServer({ home });
    const found = sc(await call(first.client, "search_paid_resources", { query: "weather" }, 30_000));
    const origin = originOf(home);
    const weather = found.resources.find((r: { url: string }) => r.url === `${origin}/x402/weather`);
    expect(weather, JSON.stringify(found)).toBeDefined();
    expect(await first.close()).toEqual({ code: 0, signal: null });

    const doctor = await runCli(["doctor"], serverEnv(home), 60_000);
    expect(doctor.stdout).toContain(`the embedded reference service at ${origin}/v1`);
    expect(originOf(home)).toBe(origin);

    const second = await startServer({ home });
    const paid = await call(second.client, "paid_fetch", { url: `${weather.url}?city=Lisbon` }, 30_000);
    expect(paid.isError, text(paid)).toBeFalsy();
    expect(sc(paid)).toMatchObject({ status: 200, payment: { amount: "0.001" }, body: { city: "Lisbon" } });
    expect(originOf(home)).toBe(origin);
    expect(second.stderr()).toContain(`started the embedded reference service at ${origin}/v1`);
    expect(second.stderr()).not.toMatch(/is taken/);
    expect(await second.close()).toEqual({ code: 0, signal: null });
  }, 120_000);

  it("a port taken meanwhile: stderr says which, that the sandbox moved and where; the new port is kept", async () => {
    const home = freshHome();
    const first = await startServer({ home });
    await call(first.client, "get_spending", {}, 30_000);
    await call(first.client, "search_paid_resources", {}, 30_000);
    const oldOrigin = originOf(home);
    const oldPort = Number(new URL(oldOrigin).port);
    await first.close();
    await occupy(oldPort);

    const second = await startServer({ home });
    await call(second.client, "search_paid_resources", {}, 30_000);
    const moved = originOf(home);
    expect(moved).not.toBe(oldOrigin);
    expect(second.stderr()).toContain(
      `the embedded sandbox's port ${oldPort} is taken by another program: the sandbox moved to ${moved} ` +
        `(kept for the next launches); URLs of ${oldOrigin} no longer reach it`,
    );
    // The sandbox's own resources are listed where it is now, not where it was.
    const listed = sc(await call(second.client, "search_paid_resources", {}, 30_000));
    expect(listed.resources.map((r: { url: string }) => new URL(r.url).origin)).toEqual([moved, moved]);
    await second.close();

    const third = await startServer({ home });
    await call(third.client, "search_paid_resources", {}, 30_000);
    expect(originOf(home)).toBe(moved);
    expect(third.stderr()).not.toMatch(/is taken/);
    expect(third.stderr()).toContain(`started the embedded reference service at ${moved}/v1`);
    await third.close();
  }, 120_000);
});
