/**
 * Every refusal of an approval keeps its shape, whatever the host's elicitation does: when
 * the client's handler throws, the tool result still carries `structuredContent.error` with
 * its code, the approvalId and "nothing was paid", and the approval stays pending, usable by
 * the retry with that approvalId once a person approved it (paid once). In this process with
 * the official v2 client: on 2025 the server asks the host itself (no SDK shim text); on
 * 2026 the client's SDK stops the call when its handler throws (no retry reaches any
 * server), and a client that comes back without an answer gets the structured refusal.
 */
import type { Client, ElicitRequest } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { callTool, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

const suite = inProcessSuite({ prefix: "pam-approval-refusals", providerDelayMs: 200 });
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

/** A host whose elicitation handler throws, after recording the question it was asked. */
function brokenHost() {
  const asked: ElicitRequest[] = [];
  return {
    asked,
    elicit: (request: ElicitRequest): never => {
      asked.push(request);
      throw new Error("the host's dialog crashed");
    },
  };
}

async function statusOf(env: Record<string, string>, approvalId: string) {
  const j = await openJournal(env);
  try {
    return (await j.journal.approval(approvalId))?.status;
  } finally {
    await j.close();
  }
}

/** A person approves at a terminal or console of their own (the engine, as `approve` gives it). */
async function approveElsewhere(env: Record<string, string>, approvalId: string) {
  const j = await openJournal(env);
  try {
    await j.engine.approve(approvalId, "terminal");
  } finally {
    await j.close();
  }
}

/** The refusal every failed question ends in: approval_required, the approvalId, nothing paid. */
function expectPendingRefusal(result: unknown): string {
  expect((result as { isError?: boolean }).isError).toBe(true);
  const error = sc(result)?.error;
  expect(error?.code).toBe("approval_required");
  expect(error.approvalId).toMatch(/^apr_/);
  expect(error.message).toContain("nothing was paid");
  expect(error.message).toContain("the host could not ask the person (the host's dialog crashed)");
  expect(error.whatToDo).toContain("once the person has decided");
  expect(JSON.stringify(result)).not.toContain("Fulfilling input required");
  return String(error.approvalId);
}

/** The retry with the approvalId, once a person approved it: pays once; a second retry pays nothing more. */
async function retryPaysOnce(client: Client, args: Record<string, unknown>, approvalId: string, before: bigint) {
  const paid = await callTool(client, "servers_provision", { ...args, approvalId });
  expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
  const again = await callTool(client, "servers_provision", { ...args, approvalId });
  expect(sc(again).executionId).toBe(sc(paid).executionId);
  expect(await balance()).toBe(before - PRICE);
}

describe("2025: the server asks the host itself; a throwing handler gets the structured refusal", () => {
  it("form: approval_required with the approvalId, nothing paid; approved elsewhere, the retry pays once", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const host = brokenHost();
    const s = await suite.start({ env, era: "legacy", elicit: host.elicit });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "broken-form" };
    const refused = await callTool(s.client, "servers_provision", args);
    const approvalId = expectPendingRefusal(refused);
    expect(host.asked).toHaveLength(1);
    expect(sc(refused).error.consoleUrl).toBeUndefined(); // a form host: no link was offered
    expect(await statusOf(env, approvalId)).toBe("pending");
    expect(await balance()).toBe(before);

    await approveElsewhere(env, approvalId);
    await retryPaysOnce(s.client, args, approvalId, before);
    expect(host.asked).toHaveLength(1); // the retry asked no one
  });

  it("URL mode: the refusal carries a fresh console link; the person approves there, the retry pays once", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const host = brokenHost();
    const s = await suite.start({ env, era: "legacy", elicit: host.elicit, elicitModes: ["url"] });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "broken-link" };
    const refused = await callTool(s.client, "servers_provision", args);
    const approvalId = expectPendingRefusal(refused);
    const consoleUrl = String(sc(refused).error.consoleUrl);
    expect(consoleUrl).toMatch(/^file:\/\//);
    expect(consoleUrl).not.toBe((host.asked[0]!.params as { url?: string }).url);

    const person = await loginAsPerson(consoleUrl);
    const approved = await person.approve(approvalId);
    expect(approved.status).toBe(200);
    expect(((await approved.json()) as { agentCall: string }).agentCall).toBe("none");
    await retryPaysOnce(s.client, args, approvalId, before);
  });
});

describe("2026-07-28: input_required, and a client whose handler throws", () => {
  it("the v2 client's own driver stops the call (no retry reaches the server); the approval stays pending and usable", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const host = brokenHost();
    const s = await suite.start({ env, era: "modern", elicit: host.elicit });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "broken-modern" };
    await expect(callTool(s.client, "servers_provision", args)).rejects.toThrow("the host's dialog crashed");
    // The question the host was handed names the approval.
    const approvalId = /Approval (apr_[A-Za-z0-9_-]+)/.exec(String(host.asked[0]!.params.message))?.[1];
    expect(approvalId).toBeDefined();
    expect(await statusOf(env, approvalId!)).toBe("pending");
    await approveElsewhere(env, approvalId!);
    await retryPaysOnce(s.client, args, approvalId!, before);
  });

  it("a client that comes back without an answer (its handler threw) gets approval_required, structured; the retry pays once", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const host = brokenHost();
    const s = await suite.start({ env, era: "modern", elicit: host.elicit, manualInput: true });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: "no-answer" };
    const first = (await s.client.callTool(
      { name: "servers_provision", arguments: args },
      { allowInputRequired: true, timeout: 20_000 },
    )) as Record<string, any>;
    expect(first.resultType).toBe("input_required");
    // The client asks its host, whose handler throws; it calls again with the state and no answer.
    expect(() => host.elicit(first.inputRequests.approval as ElicitRequest)).toThrow();
    const refused = await s.client.request(
      {
        method: "tools/call",
        params: { name: "servers_provision", arguments: args, requestState: first.requestState } as never,
      },
      { timeout: 20_000 },
    );
    expect((refused as { isError?: boolean }).isError).toBe(true);
    const error = sc(refused).error;
    expect(error.code).toBe("approval_required");
    expect(error.message).toContain("the host returned no answer to the approval question");
    expect(error.message).toContain("nothing was paid");
    const approvalId = String(error.approvalId);
    expect(await statusOf(env, approvalId)).toBe("pending");
    expect(await balance()).toBe(before);

    await approveElsewhere(env, approvalId);
    await retryPaysOnce(s.client, args, approvalId, before);
  });
});
