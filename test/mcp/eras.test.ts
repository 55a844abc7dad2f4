/**
 * Both protocol eras on one server: the official v2 client connects the 2025 way
 * (`initialize`) and the 2026-07-28 way (`server/discover`, pinned), in this process, to
 * `serve()` over a linked in-memory transport; the service is a real sandbox on loopback.
 * The same behaviour either way: the tools, a paid call, a refusal, approval (form
 * elicitation through the SDK's shim on 2025, input_required on 2026, the approvalId
 * fallback when the client declares no elicitation), execution updates and progress.
 */
import type { ElicitRequest } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

const suite = inProcessSuite({ prefix: "pam-eras", providerDelayMs: 300 });
const env = suite.env;
const start = suite.start;
/** The demo wallet's USDC balance, in atomic units, read on the sandbox's ledger. */
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

describe.each(ERAS)("%s era (v2 client)", (era) => {
  it("lists the same tools in a stable order, titled as titles, with no task support advertised", async () => {
    const s = await start({ env: env(), era });
    const first = (await s.client.listTools()).tools;
    const again = (await s.client.listTools()).tools;
    expect(again.map((x) => x.name)).toEqual(first.map((x) => x.name));
    const names = first.map((x) => x.name);
    // The catalog's paid tools come first (paid_fetch, which can spend too, follows them, then the free tools).
    const paid = first
      .filter((x) => x.annotations?.readOnlyHint === false && x.annotations?.idempotentHint === false)
      .map((x) => x.name)
      .filter((name) => name !== "paid_fetch");
    expect(paid).toEqual([...paid].sort());
    expect(names.slice(0, paid.length)).toEqual(paid);
    expect(names).toEqual(
      expect.arrayContaining([
        "servers_provision",
        "agent_services_purchase",
        "quote_action",
        "wait_for_execution",
        "search_agent_services",
      ]),
    );
    const provision = first.find((x) => x.name === "servers_provision")!;
    expect(provision.title).toBe("Provision a server (paid)");
    expect(first.find((x) => x.name === "agent_services_purchase")!.description).toContain("search_agent_services");
    for (const tool of first) expect((tool as { execution?: unknown }).execution).toBeUndefined();
    expect(s.client.getServerCapabilities()?.tools?.listChanged).toBe(true);
  });

  it("a paid call pays once and returns the execution; an over-budget call is refused and pays nothing", async () => {
    const s = await start({ env: env(), era });
    const before = await balance();
    const paid = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `eras-${era}` });
    expect(paid.isError).toBeFalsy();
    expect(sc(paid).executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before - PRICE);
    const refused = await callTool(s.client, "servers_provision", {
      ...SMALL_SERVER,
      budget: { amount: "0.1", currency: "USDC" },
    });
    expect(refused.isError).toBe(true);
    expect(sc(refused).error.code).toBe("budget_exceeded");
    expect(await balance()).toBe(before - PRICE);
  });

  it("approval is asked of the user as a form: accept pays once, decline pays nothing and is recorded", async () => {
    const asked: ElicitRequest[] = [];
    let approve = false;
    const e = env(NEEDS_APPROVAL);
    const s = await start({
      env: e,
      era,
      elicit: (request) => (asked.push(request), { action: "accept", content: { approve } }),
    });
    const before = await balance();
    const declined = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: "declined" });
    expect(sc(declined).error.code).toBe("approval_declined");
    expect(await balance()).toBe(before);
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { message: string; requestedSchema?: { properties?: Record<string, unknown> } };
    expect(params.message).toContain("0.288 USDC for servers.provision");
    expect(params.requestedSchema?.properties?.approve).toBeDefined();
    const declinedId = sc(declined).error.approvalId;
    const j = await openJournal(e);
    try {
      expect((await j.journal.approval(String(declinedId)))?.status).toBe("declined");
    } finally {
      await j.close();
    }

    approve = true;
    const paid = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: "approved" });
    expect(paid.isError).toBeFalsy();
    expect(asked).toHaveLength(2);
    expect(await balance()).toBe(before - PRICE);
  });

  it("without elicitation: approval_required with an approvalId; a person approves it; the retry pays once", async () => {
    const e = env(NEEDS_APPROVAL);
    const s = await start({ env: e, era });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "fallback" };
    const refused = await callTool(s.client, "servers_provision", args);
    expect(sc(refused).error.code).toBe("approval_required");
    const approvalId = String(sc(refused).error.approvalId);
    expect(approvalId).toMatch(/^apr_/);
    const j = await openJournal(e);
    try {
      await j.engine.approve(approvalId);
    } finally {
      await j.close();
    }
    const paid = await callTool(s.client, "servers_provision", { ...args, approvalId });
    expect(paid.isError).toBeFalsy();
    const again = await callTool(s.client, "servers_provision", { ...args, approvalId });
    expect(sc(again).executionId ?? sc(again).error?.code).toBeDefined();
    expect(await balance()).toBe(before - PRICE);
  });

  it("wait_for_execution sends progress while the execution runs, none with the final status; the record as a resource", async () => {
    const s = await start({ env: env(), era });
    const paid = sc(await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `progress-${era}` }));
    const seen: { progress: number; message?: string }[] = [];
    const result = await s.client.callTool(
      { name: "wait_for_execution", arguments: { executionId: paid.executionId, timeoutSeconds: 20 } },
      { timeout: 30_000, onprogress: (p) => seen.push(p) },
    );
    expect(sc(result).status).toBe("completed");
    expect(seen.length).toBeGreaterThan(0);
    // The same record as a resource, and the templates, in this era too.
    const read = await s.client.readResource({ uri: paid.resourceUri });
    expect(JSON.parse((read.contents[0] as { text: string }).text).status).toBe("completed");
    const { resourceTemplates } = await s.client.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate)).toContain("paid-actions://executions/{executionId}");
    expect(seen.map((p) => p.progress)).toEqual([...seen.map((p) => p.progress)].sort((a, b) => a - b));
    for (const p of seen) expect(p.message).not.toContain("completed");
  });
});
