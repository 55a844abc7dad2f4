/**
 * paid_fetch and search_paid_resources over real stdio, in sandbox mode (the embedded
 * default): the sandbox's own x402 resource bought end to end through its facilitator, the
 * purchase readable as a resource, the spending by origin, a retry with the intentKey paying
 * nothing, an origin not allowed refused with nothing sent, and the resource listed by the
 * facilitator's discovery from a fresh home's first start, before and after it was paid.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  cleanupAll,
  ensureBuilt,
  readJson,
  runCli,
  sandboxStarted,
  sc,
  serverEnv,
  startServer,
  text,
} from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp e2e: paid_fetch in sandbox mode", () => {
  it("discovery lists the sandbox's weather on a fresh home; it buys it, keeps the purchase, answers a retry from the journal, and discovery still lists it", async () => {
    const s = await startServer();
    await s.client.listTools();
    const origin = new URL((await sandboxStarted(s.home)).baseUrl).origin;

    // A fresh home: the sandbox's facilitator lists its own resources before anything was bought.
    const before = sc(await call(s.client, "search_paid_resources", { query: "weather" }));
    expect(before.resources.filter((r: { url: string }) => r.url.includes("/x402/weather"))).toEqual([
      expect.objectContaining({ url: `${origin}/x402/weather`, method: "GET", price: "0.001", payable: true }),
    ]);

    const args = { url: `${origin}/x402/weather?city=Lisbon`, intentKey: "mcp-weather-lisbon" };
    const first = await call(s.client, "paid_fetch", args, 30_000);
    expect(first.isError, text(first)).toBeFalsy();
    const r = sc(first);
    expect(r).toMatchObject({ status: 200, payment: { amount: "0.001", currency: "USDC" }, sandbox: true });
    expect(r.body).toMatchObject({ city: "Lisbon" });
    expect(r.purchase).toBe(`paid-actions://purchases/${r.intentId}`);

    const purchase = await readJson(s.client, r.purchase);
    expect(purchase).toMatchObject({ origin, method: "GET", status: 200, amount: "0.001", state: "executed" });
    expect(purchase.url).toBe(`${origin}/x402/weather?city=…`);
    expect(JSON.stringify(purchase)).not.toContain("Lisbon");

    const again = sc(await call(s.client, "paid_fetch", args, 30_000));
    expect(again.intentId).toBe(r.intentId);
    expect(again.body).toEqual(r.body);

    const spending = sc(await call(s.client, "get_spending"));
    expect(spending.byOrigin).toEqual([expect.objectContaining({ origin, spentTotal: "0.001", count: 1 })]);

    const refused = await call(s.client, "paid_fetch", { url: "https://api.example.com/paid" });
    expect(refused.isError).toBe(true);
    expect(sc(refused).error).toMatchObject({ code: "origin_not_allowed", origin: "https://api.example.com" });

    // A person reads the same purchase at a terminal.
    const listed1 = await runCli(["purchases", "--json"], serverEnv(s.home));
    expect(JSON.parse(listed1.stdout).items).toEqual([
      expect.objectContaining({ intentId: r.intentId, origin, state: "executed", status: 200, amount: "0.001" }),
    ]);
    const plain = await runCli(["purchases"], serverEnv(s.home));
    expect(plain.stdout).toContain(`GET ${origin}/x402/weather?city=…`);
    expect(plain.stdout).not.toContain("Lisbon");

    const after = sc(await call(s.client, "search_paid_resources", { query: "weather" }));
    const listed = after.resources.find((x: { url: string }) => x.url.includes("/x402/weather"));
    expect(listed).toMatchObject({ method: "GET", price: "0.001", payable: true, originAllowed: true });
  }, 90_000);
});
