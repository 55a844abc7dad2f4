/**
 * What each era does its own way, in this process with the official v2 client: execution
 * updates (resources/subscribe on 2025, subscriptions/listen on 2026), and, on 2026 where
 * the approval state travels through the client, a tampered or replayed state refused
 * with nothing paid, and a state sealed before a restart still accepted after it.
 */
import type { Client } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { callTool, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const ACCEPT = { approval: { action: "accept", content: { approve: true } } };

const suite = inProcessSuite({ prefix: "pam-eras-state", providerDelayMs: 400 });
const env = suite.env;
const start = suite.start;
/** The demo wallet's USDC balance, in atomic units, read on the sandbox's ledger. */
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);

/** The first round of a paid call that needs approval, handed back by the client (manual mode). */
async function firstRound(client: Client, args: Record<string, unknown>) {
  const r = (await client.callTool(
    { name: "servers_provision", arguments: args },
    { allowInputRequired: true, timeout: 20_000 },
  )) as Record<string, any>;
  expect(r.resultType).toBe("input_required");
  expect(Object.keys(r.inputRequests ?? {})).toEqual(["approval"]);
  expect(typeof r.requestState).toBe("string");
  return r as { requestState: string; inputRequests: Record<string, any> };
}

/** The retried call, carrying the answers and the state as the client echoes them. */
function retry(client: Client, args: Record<string, unknown>, requestState: string, inputResponses: unknown = ACCEPT) {
  return client.request(
    {
      method: "tools/call",
      params: { name: "servers_provision", arguments: args, inputResponses, requestState } as never,
    },
    { timeout: 20_000 },
  );
}

describe("modern era: the approval state the client carries", () => {
  it("a tampered state is refused before anything runs; the honest one pays once; a replay pays nothing", async () => {
    const s = await start({
      env: env({ PAID_ACTIONS_APPROVAL_ABOVE: "0.1" }),
      era: "modern",
      elicit: () => ({ action: "accept", content: { approve: true } }),
      manualInput: true,
    });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "sealed" };
    const { requestState, inputRequests } = await firstRound(s.client, args);
    expect(JSON.stringify(inputRequests)).toContain("0.288 USDC");

    const flip = (c: string) => (c === "A" ? "B" : "A");
    const tampered = requestState.slice(0, 10) + flip(requestState[10]!) + requestState.slice(11);
    await expect(retry(s.client, args, tampered)).rejects.toThrow(/requestState/i);
    // The same state for another input: the seal holds, the binding to the call does not.
    const other = (await retry(s.client, { ...args, image: "another" }, requestState)) as Record<string, any>;
    expect(other.isError).toBe(true);
    expect(sc(other).error.code).toBe("approval_invalid");
    expect(await balance()).toBe(before);

    const paid = (await retry(s.client, args, requestState)) as Record<string, any>;
    expect(paid.isError).toBeFalsy();
    expect(sc(paid).executionId).toMatch(/^exe_/);
    const replayed = (await retry(s.client, args, requestState)) as Record<string, any>;
    expect(replayed.isError).toBe(true);
    expect(sc(replayed).error.code).toBe("approval_invalid");
    expect(await balance()).toBe(before - PRICE);
  });

  it("a state sealed before a restart is accepted by the next server on the same home (the key lives there)", async () => {
    const e = env({ PAID_ACTIONS_APPROVAL_ABOVE: "0.1" });
    const first = await start({
      env: e,
      era: "modern",
      elicit: () => ({ action: "accept", content: { approve: true } }),
      manualInput: true,
    });
    const args = { ...SMALL_SERVER, image: "restart" };
    const { requestState } = await firstRound(first.client, args);
    await first.close();
    const before = await balance();
    const second = await start({
      env: e,
      era: "modern",
      elicit: () => ({ action: "accept", content: { approve: true } }),
      manualInput: true,
    });
    const paid = (await retry(second.client, args, requestState)) as Record<string, any>;
    expect(paid.isError).toBeFalsy();
    expect(await balance()).toBe(before - PRICE);
  });
});

describe("execution updates, each era its own way", () => {
  async function paidExecution(client: Client, image: string) {
    const paid = sc(await callTool(client, "servers_provision", { ...SMALL_SERVER, image }));
    expect(paid.executionId).toMatch(/^exe_/);
    return paid.resourceUri as string;
  }

  it("2025: resources/subscribe, then notifications/resources/updated as the execution moves", async () => {
    const s = await start({ env: env(), era: "legacy" });
    const updated: string[] = [];
    s.client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    await s.client.subscribeResource({ uri: "paid-actions://executions" });
    const uri = await paidExecution(s.client, "subscribe");
    await s.client.subscribeResource({ uri });
    await expect.poll(() => updated.filter((u) => u === uri).length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(updated).toContain("paid-actions://executions");
    expect(updated).not.toContain("paid-actions://spending"); // not subscribed
  });

  it("2026: subscriptions/listen with resourceSubscriptions, the same notifications on the stream", async () => {
    const s = await start({ env: env(), era: "modern" });
    const updated: string[] = [];
    s.client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    const uri = await paidExecution(s.client, "listen");
    const sub = await s.client.listen({ resourceSubscriptions: [uri, "paid-actions://executions"] });
    expect(sub.honoredFilter.resourceSubscriptions).toEqual([uri, "paid-actions://executions"]);
    await expect.poll(() => updated.filter((u) => u === uri).length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(updated).not.toContain("paid-actions://spending"); // not asked for
    await sub.close();
  });
});
