/**
 * A restart over real stdio: the host closes the connection (the server exits), launches a
 * new server process on the same home, and the earlier executions and spending are there.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, cleanupAll, ensureBuilt, sc, SMALL_SERVER, startServer, text, usdc } from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp e2e: restart", () => {
  it("a new server process on the same home still lists the earlier executions, and counts their spending", async () => {
    const first = await startServer({ delayMs: 1_000 });
    const a = sc(await call(first.client, "servers_provision", { ...SMALL_SERVER }));
    const b = sc(await call(first.client, "servers_provision", { ...SMALL_SERVER, durationHours: 48 }));
    expect(a.executionId).toBeTruthy();
    expect(b.executionId).toBeTruthy();
    const before = sc(await call(first.client, "list_executions")).items;
    expect(before.map((i: any) => i.executionId)).toEqual([b.executionId, a.executionId]);

    // The host closes the connection: the server exits on its own.
    // (It logs why it stops once: the closed stdin, not a signal. A hang would end in the
    // SDK's SIGKILL, not in exit code 0.)
    const exit = await first.close();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(first.stderr()).toMatch(/stopping \((stdin closed|the client closed the connection)\)/);

    const second = await startServer({ home: first.home, delayMs: 1_000 });
    expect(second.pid).not.toBe(first.pid);
    const { tools } = await second.client.listTools();
    expect(tools.map((t) => t.name)).toContain("servers_provision");

    const after = sc(await call(second.client, "list_executions"));
    expect(after.items.map((i: any) => i.executionId)).toEqual([b.executionId, a.executionId]);
    const itemA = after.items.find((i: any) => i.executionId === a.executionId);
    expect(itemA.action).toBe("servers.provision");
    expect(itemA.amount).toBe("0.288");
    expect(itemA.paymentTransaction).toBe(a.payment.transaction);

    const filtered = sc(await call(second.client, "list_executions", { action: "servers.provision", limit: 1 }));
    expect(filtered.items).toHaveLength(1);
    expect(filtered.nextCursor).toBeTruthy();
    const page2 = sc(
      await call(second.client, "list_executions", {
        action: "servers.provision",
        limit: 1,
        cursor: filtered.nextCursor,
      }),
    );
    expect(page2.items.map((i: any) => i.executionId)).toEqual([a.executionId]);

    // The limits still count what the first process paid.
    const spending = sc(await call(second.client, "get_spending"));
    expect(usdc(spending.spentTotal)).toBeCloseTo(0.288 + 0.576, 6);

    // And the earlier executions can still be followed to their end.
    const done = await call(
      second.client,
      "wait_for_execution",
      { executionId: a.executionId, timeoutSeconds: 20 },
      30_000,
    );
    expect(done.isError ?? false, text(done)).toBe(false);
    expect(sc(done).status).toBe("completed");
    const { resources } = await second.client.listResources();
    expect(resources.map((r) => r.uri)).toContain(`paid-actions://executions/${a.executionId}`);
  });
});
